// The comments of a source file, with their lines: `//` and `/* */` in TypeScript and JavaScript
// (strings and regular expression literals skipped; an SQL `--` comment inside a template literal
// counted), `--` and `/* */` in SQL, `#` in shell scripts, `/* */` in CSS, `<!-- -->` in HTML.
// What test/docs/docs-references.test.ts reads: a comment's citations.

export interface Comment {
  /** 1-based line where the comment's text is. */
  line: number;
  text: string;
}

/** Characters after which a `/` starts a regular expression rather than a division. */
const BEFORE_REGEX = /[(,=:[!&|?{};+\-*%<>~^]$|(?:^|[^\w$])(?:return|typeof|case|of|in|void|yield|await)$/;

function scriptComments(src: string, hashLines: boolean, sql: boolean): Comment[] {
  const out: Comment[] = [];
  let line = 1;
  let i = 0;
  // For each open `${` of a template literal, the brace depth at which it closes.
  const templates: number[] = [];
  let depth = 0;
  const push = (start: number, end: number) => {
    const lines = src.slice(start, end).split('\n');
    lines.forEach((text, k) => {
      out.push({ line: line + k, text });
    });
    line += lines.length - 1;
  };
  /** Reads a string from just after its opening quote; false when a template's `${` opened. */
  const readString = (quote: string): boolean => {
    while (i < src.length && src[i] !== quote) {
      if (src[i] === '\\') i++;
      else if (src[i] === '\n') {
        if (quote !== '`') return true; // an unterminated quote ends at its line
        line++;
      } else if (quote === '`' && src[i] === '-' && src[i + 1] === '-' && /(^|\s)$/.test(src[i - 1] ?? '')) {
        // An SQL comment inside a template literal (a statement's text): to the end of its line.
        let stop = i;
        while (stop < src.length && src[stop] !== '\n' && src[stop] !== '`') stop++;
        out.push({ line, text: src.slice(i, stop) });
        i = stop;
        continue;
      } else if (quote === '`' && src[i] === '$' && src[i + 1] === '{') {
        templates.push(depth++);
        i += 2;
        return false;
      }
      i++;
    }
    i++;
    return true;
  };
  while (i < src.length) {
    const c = src[i]!;
    const next = src[i + 1];
    if (c === '\n') {
      line++;
      i++;
    } else if (
      (c === '/' && next === '/' && !sql) ||
      (sql && c === '-' && next === '-') ||
      (hashLines && c === '#')
    ) {
      const end = src.indexOf('\n', i);
      const stop = end === -1 ? src.length : end;
      push(i, stop);
      i = stop;
    } else if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      const stop = end === -1 ? src.length : end + 2;
      push(i, stop);
      i = stop;
    } else if (c === "'" || c === '"' || c === '`') {
      i++;
      readString(c);
    } else if (
      c === '/' &&
      !sql &&
      !hashLines &&
      BEFORE_REGEX.test(src.slice(Math.max(0, i - 8), i).trimEnd() || '(')
    ) {
      // A regular expression literal, to its closing `/` (classes and escapes skipped).
      i++;
      let inClass = false;
      while (i < src.length && src[i] !== '\n') {
        if (src[i] === '\\') i++;
        else if (src[i] === '[') inClass = true;
        else if (src[i] === ']') inClass = false;
        else if (src[i] === '/' && !inClass) break;
        i++;
      }
      i++;
    } else if (c === '{') {
      depth++;
      i++;
    } else if (c === '}') {
      depth--;
      i++;
      if (templates.length > 0 && templates[templates.length - 1] === depth) {
        templates.pop();
        readString('`');
      }
    } else i++;
  }
  return out;
}

// Block comments between `open` and `close` (CSS's and HTML's), by line.
function blockComments(src: string, open: string, close: string): Comment[] {
  const out: Comment[] = [];
  for (let i = src.indexOf(open); i !== -1; i = src.indexOf(open, i + open.length)) {
    const end = src.indexOf(close, i + open.length);
    const stop = end === -1 ? src.length : end + close.length;
    const first = src.slice(0, i).split('\n').length;
    src
      .slice(i, stop)
      .split('\n')
      .forEach((text, k) => {
        out.push({ line: first + k, text });
      });
    i = stop - open.length;
  }
  return out;
}

/** The comments of a file, by its name's ending. */
export function commentsOf(path: string, text: string): Comment[] {
  if (path.endsWith('.sql')) return scriptComments(text, false, true);
  if (path.endsWith('.css')) return blockComments(text, '/*', '*/');
  if (path.endsWith('.html')) return blockComments(text, '<!--', '-->');
  if (/.(sh|bash)$/.test(path) || /^#!.*\b(ba)?sh\b/.test(text)) return scriptComments(text, true, false);
  return scriptComments(text, false, false);
}
