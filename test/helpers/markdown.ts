// The repository's Markdown for the documentation tests: which files, their fenced blocks (with
// the info string, e.g. "sh runnable" or "js runnable file=receiver.mjs"), their links and the
// anchors their headings make.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');

const SKIP_DIRS = new Set(['node_modules', 'dist', 'data', 'coverage', '.git', '.tmp']);

/** Every Markdown file of the repository (paths relative to its root, sorted). */
export function markdownFiles(dir = ROOT): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') && entry.name !== '.ci') continue;
    if (SKIP_DIRS.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...markdownFiles(path));
    else if (entry.name.endsWith('.md')) out.push(relative(ROOT, path));
  }
  return out.sort();
}

/** The documentation pages: README.md, CHANGELOG.md, bench/README.md and docs/**. */
export function documentationFiles(): string[] {
  return markdownFiles().filter(
    (f) => ['README.md', 'CHANGELOG.md', 'bench/README.md'].includes(f) || f.startsWith('docs/'),
  );
}

export interface FencedBlock {
  /** The info string after the opening fence ("sh runnable"). */
  info: string;
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
}

/** The fenced code blocks (``` fences) of a Markdown text, and the text outside them. */
export function splitFences(text: string): { blocks: FencedBlock[]; prose: string } {
  const blocks: FencedBlock[] = [];
  const prose: string[] = [];
  let open: { info: string; line: number; lines: string[] } | null = null;
  text.split('\n').forEach((line, i) => {
    const fence = /^\s*```(.*)$/.exec(line);
    if (open) {
      if (fence && fence[1]!.trim() === '') {
        blocks.push({ info: open.info, body: open.lines.join('\n'), line: open.line });
        open = null;
      } else open.lines.push(line);
      prose.push('');
    } else if (fence) {
      open = { info: fence[1]!.trim(), line: i + 1, lines: [] };
      prose.push('');
    } else prose.push(line);
  });
  return { blocks, prose: prose.join('\n') };
}

/** Inline links and images of the prose: [text](target) and ![alt](target). */
export function linksOf(prose: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  prose.split('\n').forEach((line, i) => {
    // Inline code may hold brackets that are not links.
    const text = line.replace(/`[^`]*`/g, '');
    for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g))
      out.push({ target: m[1]!, line: i + 1 });
  });
  return out;
}

/** The anchors GitHub makes for a page's headings (lower case, punctuation dropped, dashes). */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of splitFences(text).prose.split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

export const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
