// A data directory others can read or write is refused at start (docs/reference/running.md#safe-configuration): PGlite
// writes its files 0666 and relies on its directory's 0700, which the service sets only on a
// directory it creates. A pre-made DATA_DIR or DATA_DIR/pglite open to others stops the start
// with one line naming the directory and the fix.
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, test } from 'vitest';
import { freePort, TEST_ADMIN_TOKEN, TEST_CODE_KEY } from '../helpers/process.ts';

const scratch = mkdtempSync(join(tmpdir(), 'rg-mode-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function serve(dataDir: string): Promise<{ code: number | null; out: string }> {
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, '..', '..', 'bin', 'redeem-gateway.js'), 'serve'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        ADMIN_PORT: String(await freePort()),
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        CODE_ENCRYPTION_KEY: TEST_CODE_KEY,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  // A server that starts does not exit: stopped after a while, it fails the test.
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  clearTimeout(timer);
  return { code, out };
}

describe.skipIf(Boolean(process.env.DATABASE_URL))('a data directory open to others', () => {
  test('DATA_DIR or its pglite directory readable or writable by others: exit 1 with one line', async () => {
    const open = join(scratch, 'open');
    mkdirSync(open);
    chmodSync(open, 0o755);
    const inner = join(scratch, 'inner');
    mkdirSync(inner, { mode: 0o700 });
    cpSync(inject('pgliteTemplate'), join(inner, 'pglite'), { recursive: true });
    chmodSync(join(inner, 'pglite'), 0o777);
    const [a, b] = await Promise.all([serve(open), serve(inner)]);
    expect(a).toEqual({
      code: 1,
      out: `error: DATA_DIR ${open} can be read or written by others (mode 755): it holds the embedded database and its secrets; run chmod 700 ${open}\n`,
    });
    expect(b).toEqual({
      code: 1,
      out: `error: DATA_DIR ${join(inner, 'pglite')} can be read or written by others (mode 777): it holds the embedded database and its secrets; run chmod 700 ${join(inner, 'pglite')}\n`,
    });
  }, 90_000);
});
