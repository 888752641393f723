// The documentation holds together: every relative link of README.md, CHANGELOG.md,
// bench/README.md and docs/** resolves to a file (and a heading, when it names one); README.md
// stays a front door; no Markdown file outside docs/, bench/ and sdk/ grows into a log; and no
// page points at a specification kept outside the repository.
import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { expect, test } from 'vitest';
import {
  anchorsOf,
  documentationFiles,
  linksOf,
  markdownFiles,
  ROOT,
  read,
  splitFences,
} from '../helpers/markdown.ts';

test('every relative link of the documentation resolves, anchors included', () => {
  const files = documentationFiles();
  expect(files).toEqual(expect.arrayContaining(['README.md', 'CHANGELOG.md', 'bench/README.md']));
  expect(files.filter((f) => f.startsWith('docs/')).length).toBeGreaterThan(15);
  const broken: string[] = [];
  let checked = 0;
  for (const file of files) {
    for (const { target, line } of linksOf(splitFences(read(file)).prose)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      checked++;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const resolved = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
      const where = `${file}:${line} → ${target}`;
      if (resolved.startsWith('..') || !existsSync(join(ROOT, resolved))) {
        broken.push(`${where} (no such file)`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && !anchorsOf(read(resolved)).has(anchor))
        broken.push(`${where} (no heading #${anchor})`);
      if (anchor && !resolved.endsWith('.md') && statSync(join(ROOT, resolved)).isDirectory())
        broken.push(`${where} (an anchor into a directory)`);
    }
  }
  expect(broken).toEqual([]);
  expect(checked).toBeGreaterThan(100);
});

test('README.md is a front door: under 300 lines, the two commands at the top', () => {
  const readme = read('README.md');
  expect(readme.split('\n').length).toBeLessThan(300);
  const firstBlock = splitFences(readme).blocks[0]!;
  expect(firstBlock.line).toBeLessThan(15);
  expect(firstBlock.body).toMatch(/^npm install && npm start\b/m);
  expect(firstBlock.body).toMatch(/^npm test\b/m);
});

test('no Markdown file outside docs/, bench/ and sdk/ is over 30 KB', () => {
  const files = markdownFiles();
  expect(files).toContain('README.md');
  const large = files
    .filter((f) => !/^(docs|bench|sdk)\//.test(f))
    .filter((f) => statSync(join(ROOT, f)).size > 30 * 1024);
  expect(large).toEqual([]);
});

test('no Markdown file refers to a specification kept outside the repository', () => {
  const outside =
    /contract\s*(§|section\b|\d+(\.\d+)?\b)|\bcontract'?s?\s+(§|section)|specification outside|outside this repository|CONTRACT\.md|\/work\/shared\b|spec\/000_/i;
  const found = markdownFiles().flatMap((f) =>
    read(f)
      .split('\n')
      .flatMap((line, i) => (outside.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
  );
  expect(found).toEqual([]);
});
