// The one reading of a stock import file, for the admin CLI and the chat's /addstock alike: a
// line is one code (trimmed; blank lines are layout, skipped), and in a .csv file the first column
// (up to the first comma; a quoted field unquoted, "" standing for a quote), with a first line
// `code` or `codes` taken as the header. Nothing else is cut or guessed: a line with a `;` or a
// tab in it reaches the import whole and is rejected there as malformed, naming its line.

/** A code of an import, with the file line it came from (1-based). */
export interface CodeLine {
  line: number;
  code: string;
}

/** The first field of a CSV line (RFC 4180 quoting). */
function firstCsvField(line: string): string {
  const s = line.trimStart();
  if (!s.startsWith('"')) return s.split(',', 1)[0]!;
  let out = '';
  for (let i = 1; i < s.length; i++) {
    if (s[i] === '"') {
      if (s[i + 1] === '"') {
        out += '"';
        i++;
      } else return out;
    } else out += s[i];
  }
  return out;
}

/** The codes of an import file, each with its line; `csv` for a .csv file's first column. */
export function codeLines(text: string, opts: { csv?: boolean } = {}): CodeLine[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const out: CodeLine[] = [];
  lines.forEach((raw, i) => {
    const code = (opts.csv ? firstCsvField(raw) : raw).trim();
    if (code === '') return;
    if (opts.csv && out.length === 0 && /^codes?$/i.test(code)) return;
    out.push({ line: i + 1, code });
  });
  return out;
}

/** Whether a file name is read as CSV. */
export const isCsvName = (name: string) => /\.csv$/i.test(name);
