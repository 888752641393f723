// The repository explains itself: source comments cite the rules they keep as
// `docs/reference/<page>.md#<heading>` (or another page of docs/), never a document kept outside
// the repository or an issue tracker. Fails on (a) a comment in src/, test/, bench/, scripts/,
// sdk/ or bin/ citing a contract or specification section ("contract 12.5", "CONTRACT",
// "spec section 3", "§3", a bare "section 6" or "(13.2)"), the outside DESIGN document, or an
// issue ("issue 36", "issues 8 and 9", "#36"); (b) a `docs/….md#anchor` named anywhere in those
// files whose page or heading does not exist (GitHub's slugs); (c) a relative link of README.md or
// docs/**/*.md that leads to no file. The applied migrations (src/db/migrations/) are held to it
// too: a reworded comment changes a migration's checksum, so the text it was applied with is
// listed in REWORDED_MIGRATIONS (src/db/migrate.ts).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { commentsOf } from '../helpers/comments.ts';
import { anchorsOf, linksOf, markdownFiles, ROOT, read, splitFences } from '../helpers/markdown.ts';

const SOURCE_DIRS = ['src', 'test', 'bench', 'scripts', 'sdk', 'bin'];
const SOURCE_FILE = /\.(ts|mts|cts|js|mjs|cjs|sql|sh|css|html)$/;
const SKIP = new Set(['node_modules', 'dist', 'data', 'coverage', '.tmp']);

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name) || name.startsWith('.')) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return SOURCE_FILE.test(name) ? [relative(ROOT, path)] : [];
  });
}

const files = SOURCE_DIRS.flatMap((d) => sourceFiles(join(ROOT, d)));

/** What a comment must not cite: a section of a document outside the repository, or an issue. */
const OUTSIDE_CITATIONS: readonly RegExp[] = [
  /\bcontract\b[’']?s?\s*(?:(?:sections?|§)\s*)?\d/i, // contract 12.5, contract section 3
  /\bCONTRACT\b/, // CONTRACT 12.5, CONTRACT.md
  /\bspec(?:ification)?[’']?s?\s+(?:sections?\s*)?\d/i, // specification 2.3, spec 7
  /\bspec(?:ification)?\s+section\b/i, // spec section
  /§\s*\d/, // §3
  /(?<!\bRFC \d+ )\bsections? \d/i, // a bare "section 6" (an RFC's sections are fine)
  /\((?:1[0-5]|[1-9])\.\d{1,2}\)/, // a bare "(13.2)"
  /\bDESIGN\b/, // the design notes kept outside the repository
  /\bissues? #?\d+/i, // issue 36, issues 8 and 9
  /(?:^|[\s([,])#\d+\b/, // #36
];

/** Each comment line, and each pair of consecutive comment lines joined (a citation broken over two). */
function commentTexts(file: string): { line: number; text: string }[] {
  const comments = commentsOf(file, read(file));
  const strip = (t: string) => t.replace(/^\s*(?:\/\/+|\/\*+|\*+\/?|--|#)\s?/, '').trim();
  return comments.flatMap((c, i) => {
    const next = comments[i + 1];
    const joined =
      next && next.line === c.line + 1
        ? [{ line: c.line, text: `${strip(c.text).slice(-40)} ${strip(next.text).slice(0, 40)}` }]
        : [];
    return [{ line: c.line, text: c.text }, ...joined];
  });
}

/** `docs/….md` and `docs/….md#anchor` named in a text. */
function docCitations(text: string): { path: string; anchor: string | undefined; line: number }[] {
  const out: { path: string; anchor: string | undefined; line: number }[] = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/(?<![\w/.-])(docs\/[\w./-]+?\.md)(?:#([\w-]+))?/g))
      out.push({ path: m[1]!, anchor: m[2], line: i + 1 });
  });
  return out;
}

describe('source comments', () => {
  test('cite no section of an outside document and no issue', () => {
    expect(files.length).toBeGreaterThan(300);
    const found = new Set<string>();
    // This file names the patterns it refuses.
    for (const file of files.filter((f) => f !== 'test/docs/docs-references.test.ts'))
      for (const { line, text } of commentTexts(file))
        if (OUTSIDE_CITATIONS.some((re) => re.test(text))) found.add(`${file}:${line}: ${text.trim()}`);
    expect([...found]).toEqual([]);
  });

  test('every docs/….md#anchor they name exists, page and heading', () => {
    const anchors = new Map<string, Set<string>>();
    const broken: string[] = [];
    let checked = 0;
    for (const file of files)
      for (const { path, anchor, line } of docCitations(read(file))) {
        checked++;
        if (!existsSync(join(ROOT, path))) {
          broken.push(`${file}:${line}: ${path} (no such page)`);
          continue;
        }
        if (!anchor) continue;
        if (!anchors.has(path)) anchors.set(path, anchorsOf(read(path)));
        if (!anchors.get(path)!.has(anchor))
          broken.push(`${file}:${line}: ${path}#${anchor} (no such heading)`);
      }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(300);
  });
});

test('every relative link of README.md and docs/**/*.md leads to a file', () => {
  const pages = markdownFiles().filter((f) => f === 'README.md' || f.startsWith('docs/'));
  expect(pages).toContain('docs/reference/README.md');
  const broken: string[] = [];
  for (const page of pages)
    for (const { target, line } of linksOf(splitFences(read(page)).prose)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
      const path = decodeURIComponent(target.split('#')[0]!);
      const resolved = normalize(join(dirname(page), path));
      if (resolved.startsWith('..') || !existsSync(join(ROOT, resolved)))
        broken.push(`${page}:${line} → ${target}`);
    }
  expect(broken).toEqual([]);
});

test('the reference has its pages, each linked from its index', () => {
  const index = readFileSync(join(ROOT, 'docs/reference/README.md'), 'utf8');
  const pages = readdirSync(join(ROOT, 'docs/reference')).filter((f) => f !== 'README.md');
  expect(pages.sort()).toEqual(
    [
      'billing-and-quota.md',
      'bot.md',
      'idempotency.md',
      'jobs.md',
      'keys-and-modes.md',
      'limits.md',
      'operators-and-audit.md',
      'redeem.md',
      'running.md',
      'statements.md',
      'webhooks-and-events.md',
    ].sort(),
  );
  for (const page of pages) expect(index, page).toContain(`](${page})`);
});
