// The documentation's examples run: every fenced block marked runnable in README.md and docs/
// ("```sh runnable", or "```js runnable file=NAME" for a file the page's commands use) is run
// against a started server on the embedded database, page by page, and must exit 0. A page's
// shell blocks run in order as one script (`bash -euo pipefail`) in a directory of its own, as a
// reader would run them in one terminal, with the environment the pages explain: BASE_URL and
// API_KEY (the demo test key the first start prints), ADMIN_URL and ADMIN_TOKEN, RECEIVER_PORT
// (a free port for the webhook receiver), REPO (this checkout), and `redeem-gateway` on the PATH. The server trusts a
// certificate made as docs/merchants/first-hour.md makes it, with private webhook targets allowed.
// A "```text prints" block shows what the commands above it print: each of its lines must be a
// line the page printed, in the order shown, spaces collapsed, with `…` standing for any text (an
// id, a time); so a page's sample output is what the CLI prints today.
// DOCS_VERBOSE=1 prints what each page printed.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { documentationFiles, ROOT, read, splitFences } from '../helpers/markdown.ts';
import {
  freePort,
  type ServerProcess,
  serverProcesses,
  TEST_ADMIN_TOKEN,
  waitUntil,
} from '../helpers/process.ts';

interface Page {
  file: string;
  script: string[];
  files: { name: string; body: string }[];
  /** The lines of its "text prints" blocks, in order. */
  prints: string[];
}

const collapse = (line: string) => line.trim().split(/\s+/).join(' ');

/** The first line of `expected` that `out` does not print in that order, or null. */
function missingPrint(expected: string[], out: string): string | null {
  const lines = out.split('\n').map(collapse);
  let at = 0;
  for (const want of expected) {
    const parts = collapse(want)
      .split('…')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    const re = new RegExp(`^${parts.join('.*')}$`);
    while (at < lines.length && !re.test(lines[at]!)) at += 1;
    if (at === lines.length) return want;
    at += 1;
  }
  return null;
}

/** The runnable blocks of every documentation page that has some. */
function runnablePages(): Page[] {
  const pages: Page[] = [];
  for (const file of documentationFiles()) {
    const page: Page = { file, script: [], files: [], prints: [] };
    for (const block of splitFences(read(file)).blocks) {
      if (block.info.trim() === 'text prints') {
        page.prints.push(...block.body.split('\n').filter((l) => l.trim() !== ''));
        continue;
      }
      const m = /^(\w+)\s+runnable(?:\s+file=(\S+))?\s*$/.exec(block.info);
      if (!m) continue;
      if (m[2]) page.files.push({ name: m[2], body: `${block.body}\n` });
      else if (m[1] === 'sh') page.script.push(`# ${file}:${block.line}`, block.body);
      else throw new Error(`${file}:${block.line}: a runnable ${m[1]} block needs file=NAME`);
    }
    if (page.script.length || page.files.length) pages.push(page);
  }
  return pages;
}

const pages = runnablePages();
const tools = ['curl', 'jq', 'openssl'].filter((t) => {
  try {
    execFileSync('sh', ['-c', `command -v ${t}`], { stdio: 'ignore' });
    return false;
  } catch {
    return true;
  }
});
const onPostgres = Boolean(process.env.DATABASE_URL);
if (tools.length) console.warn(`runnable docs skipped: ${tools.join(', ')} not found`);

test('the pages a newcomer follows have runnable examples', () => {
  const byFile = new Map(pages.map((p) => [p.file, p]));
  const blocks = (file: string) => byFile.get(file)?.script.join('\n') ?? '';
  expect(blocks('README.md')).toContain('/v1/me');
  expect(blocks('docs/merchants/first-hour.md')).toMatch(/"async":true/);
  expect(blocks('docs/merchants/first-hour.md')).toContain('node receiver.mjs');
  expect(byFile.get('docs/merchants/first-hour.md')?.files.map((f) => f.name)).toEqual(['receiver.mjs']);
  // The tutorial removes the receiver it registered: later async jobs of the demo customer would
  // otherwise each send it an event that fails.
  expect(blocks('docs/merchants/first-hour.md')).toMatch(/^redeem-gateway admin webhooks remove /m);
  expect(blocks('docs/merchants/statements.md')).toContain('/v1/statements');
  expect(blocks('docs/operators/cli.md')).toMatch(/^redeem-gateway admin /m);
  expect(blocks('docs/operators/requests.md')).toMatch(/^redeem-gateway admin requests --player /m);
  expect(blocks('docs/operators/investigating.md')).toMatch(/^redeem-gateway admin customers health /m);
  expect(blocks('docs/merchants/sdk.md')).toContain('node quickstart.mjs');
  // Every operator's page is a playbook whose commands run, with what they print shown.
  for (const file of [
    'docs/operators/customers.md',
    'docs/operators/stock.md',
    'docs/operators/quarantine.md',
    'docs/operators/money-and-audit.md',
    'docs/operators/alerts-and-topups.md',
    'docs/operators/cli.md',
  ]) {
    expect(blocks(file), file).toMatch(/^redeem-gateway admin /m);
    expect(byFile.get(file)?.prints.length, file).toBeGreaterThan(0);
  }
});

test("a page's printed lines are matched in order, spaces collapsed, … for any text", () => {
  const out = 'customer 3 disabled\n  key_ab  rk_test_x…   test\ncustomer 3 enabled\n';
  expect(missingPrint(['customer … disabled', 'key_… rk_test_… test', 'customer … enabled'], out)).toBeNull();
  expect(missingPrint(['customer … enabled', 'customer … disabled'], out)).toBe('customer … disabled');
  expect(missingPrint(['customer 3 (disabled)'], out)).toBe('customer 3 (disabled)');
});

describe.skipIf(onPostgres || tools.length > 0)('the runnable blocks of the documentation', () => {
  const servers = serverProcesses();
  const work = mkdtempSync(join(tmpdir(), 'rg-docs-'));
  let server: ServerProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    // The certificate of the webhook receiver, made as the first-hour page makes it.
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '30',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        'key.pem',
        '-out',
        'cert.pem',
      ],
      { cwd: work, stdio: 'pipe' },
    );
    server = await servers.start(servers.dataDir(), {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      NODE_EXTRA_CA_CERTS: join(work, 'cert.pem'),
      WORKER_POLL_MS: '100',
    });
    const apiKey = await waitUntil(
      'the demo key',
      () => /rk_test_[0-9A-Za-z]{32}/.exec(server.output())?.[0],
    );
    // `redeem-gateway` as the pages write it: this checkout's command.
    const bin = join(work, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'redeem-gateway'),
      `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin', 'redeem-gateway.js')}" "$@"\n`,
    );
    chmodSync(join(bin, 'redeem-gateway'), 0o755);
    env = {
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? work,
      BASE_URL: server.url,
      API_KEY: apiKey,
      ADMIN_URL: server.adminUrl,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      RECEIVER_PORT: String(await freePort()),
      // The checkout, for the SDK page's `npm pack "$REPO/sdk"`.
      REPO: ROOT,
    };
  }, 120_000);

  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
  });

  test.each(pages.map((p) => [p.file, p] as const))('%s', { timeout: 120_000 }, async (_file, page) => {
    const dir = join(work, page.file.replace(/[^\w.-]/g, '_'));
    mkdirSync(dir);
    for (const f of ['key.pem', 'cert.pem']) copyFileSync(join(work, f), join(dir, f));
    for (const f of page.files) writeFileSync(join(dir, f.name), f.body);
    writeFileSync(join(dir, 'page.sh'), `${page.script.join('\n')}\n`);
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      // Its own process group, so a background process a page starts is stopped with it.
      const child = spawn('bash', ['-euo', 'pipefail', 'page.sh'], { cwd: dir, env, detached: true });
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        out += d;
      });
      const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 100_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // the group is gone already
        }
        resolve({ code, out });
      });
    });
    if (process.env.DOCS_VERBOSE) console.log(`${page.file}:\n${result.out}`);
    expect(result.code, `${page.file} exited ${result.code}:\n${result.out}`).toBe(0);
    const missing = missingPrint(page.prints, result.out);
    expect(
      missing,
      `${page.file} did not print, in its order:\n${missing}\n\nit printed:\n${result.out}`,
    ).toBeNull();
  });
});
