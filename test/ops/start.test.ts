// `npm start` from a fresh data directory (docs/reference/running.md#starting): the real process, on the
// embedded database, prints a demo test key and a curl line that work, and keeps its secrets
// in the data directory with mode 0600. A restart on the same directory prints no new key.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';

const BIN = resolve(import.meta.dirname, '../../bin/redeem-gateway.js');
const onPostgres = Boolean(process.env.DATABASE_URL);
const dataDir = mkdtempSync(join(tmpdir(), 'rg-start-'));
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => done(port));
    });
  });
}

interface Served {
  child: ChildProcess;
  port: number;
  adminPort: number;
  /** Everything printed on stdout so far. */
  output(): string;
  /** Resolves once stdout matches `pattern`; rejects if the process exits first. */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>;
}

async function serve(opts: { port?: number } = {}): Promise<Served> {
  const [port, adminPort] = [opts.port ?? (await freePort()), await freePort()];
  const child = spawn(process.execPath, [BIN, 'serve'], {
    cwd: dataDir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATA_DIR: dataDir,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  child.stdout!.on('data', (d) => {
    stdout += d;
    for (const w of waiters) w();
  });
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  child.on('exit', () => {
    for (const w of waiters) w();
  });
  return {
    child,
    port,
    adminPort,
    output: () => stdout,
    waitFor(pattern, ms = 90_000) {
      return new Promise((done, fail) => {
        const timer = setTimeout(
          () => fail(new Error(`timed out waiting for ${pattern}: ${stdout}${stderr}`)),
          ms,
        );
        const check = () => {
          const m = stdout.match(pattern);
          if (m) {
            clearTimeout(timer);
            done(m);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            fail(new Error(`process exited (${child.exitCode}): ${stdout}${stderr}`));
          }
        };
        waiters.push(check);
        check();
      });
    },
  };
}

/** Available counts of the categories the demo redeems used. */
function demoStockLeft(stock: { categories: { category: string; available: number }[] }) {
  return Object.fromEntries(
    stock.categories
      .filter((c) => ['60', '325', '660'].includes(c.category))
      .map((c) => [c.category, c.available]),
  );
}

async function stop(s: Served) {
  const exited = new Promise<number | null>((r) => s.child.once('exit', (code) => r(code)));
  s.child.kill('SIGTERM');
  return exited;
}

describe.skipIf(onPostgres)('npm start on the embedded database', () => {
  let demoKey: string;

  test('a first start that fails (its port taken) leaves no demo behind: the next start makes one and prints its key', {
    timeout: 120_000,
  }, async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    try {
      const s = await serve({ port: (taken.address() as { port: number }).port });
      const code =
        s.child.exitCode ?? (await new Promise<number | null>((r) => s.child.once('exit', (c) => r(c))));
      expect(code).not.toBe(0);
      expect(s.output()).not.toMatch(/rk_test_/);
    } finally {
      await new Promise((r) => taken.close(r));
    }
    // The next test starts on the same data directory and must print a new demo key.
  });

  test('first start prints a demo test key and a curl line that answers 200', {
    timeout: 120_000,
  }, async () => {
    const s = await serve();
    const [, meUrl, key] = await s.waitFor(
      /curl -s (http:\/\/\S+\/v1\/me) -H 'Authorization: Bearer (rk_test_[0-9A-Za-z]{32})'\n/,
    );
    demoKey = key!;
    expect(meUrl).toBe(`http://127.0.0.1:${s.port}/v1/me`);
    // The key is printed on a line of its own as well, and the admin token's place is named.
    expect(s.output()).toContain(`\n  ${demoKey}\n`);
    expect(s.output()).toContain(join(dataDir, 'admin-token'));
    expect(s.output()).toMatch(/curl -s http:\/\/\S+\/v1\/redeem -H 'Authorization: Bearer rk_test_/);

    const res = await fetch(meUrl!, { headers: { Authorization: `Bearer ${demoKey}` } });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({
      ok: true,
      request_id: res.headers.get('x-request-id'),
      key_prefix: demoKey.slice(0, 12),
      mode: 'test',
      plan_active: true,
    });
    expect(res.headers.get('svc-version')).toBe('1.0.0');

    // Demo stock in every category, so packs and uc work in the first minute.
    const auth = { Authorization: `Bearer ${demoKey}`, 'Content-Type': 'application/json' };
    const stock = await (await fetch(`http://127.0.0.1:${s.port}/v1/stock`, { headers: auth })).json();
    expect(
      stock.categories.map((c: { category: string; available: number }) => [c.category, c.available]),
    ).toEqual(['60', '325', '660', '1800', '3850', '8100'].map((c) => [c, 5]));
    expect(s.output()).toContain('5 test stock codes in each category');
    expect(s.output()).toContain(`http://127.0.0.1:${s.port}/docs`);
    for (const [i, body] of [{ packs: { '660': 2 } }, { uc: 385 }].entries()) {
      const redeemed = await fetch(`http://127.0.0.1:${s.port}/v1/redeem`, {
        method: 'POST',
        headers: { ...auth, 'Idempotency-Key': `start-demo-${i}` },
        body: JSON.stringify({ player_id: '5123456789', ...body }),
      });
      const result = await redeemed.json();
      expect(redeemed.status, JSON.stringify(result)).toBe(200);
      expect(result).toMatchObject({ ok: true, source: 'stock', summary: { activated: 2 } });
    }
    expect(
      demoStockLeft(await (await fetch(`http://127.0.0.1:${s.port}/v1/stock`, { headers: auth })).json()),
    ).toEqual({ '60': 4, '325': 4, '660': 3 });

    // The admin API answers with the token from the data directory, which only the owner can read.
    const tokenFile = join(dataDir, 'admin-token');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'code-encryption.key')).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();
    const admin = await fetch(`http://127.0.0.1:${s.adminPort}/admin/v1/customers/${body.customer_id}`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(admin.status).toBe(200);
    const wrong = await fetch(`http://127.0.0.1:${s.adminPort}/admin/v1/customers/${body.customer_id}`, {
      headers: { Authorization: 'Bearer not-the-token-000000000000' },
    });
    expect(wrong.status).toBe(401);

    expect(await stop(s)).toBe(0);
  });

  test('a restart on the same data directory prints no new key; the old key still works', {
    timeout: 120_000,
  }, async () => {
    expect(demoKey).toBeDefined();
    const tokenBefore = readFileSync(join(dataDir, 'admin-token'), 'utf8');
    const s = await serve();
    await s.waitFor(/admin API: +http:\/\/\S+.*\n[\s\S]*\n\n/);
    expect(s.output()).not.toMatch(/rk_(test|live)_[0-9A-Za-z]{32}/);
    expect(s.output()).toContain('The demo key was printed when this database was created');

    const res = await fetch(`http://127.0.0.1:${s.port}/v1/me`, {
      headers: { Authorization: `Bearer ${demoKey}` },
    });
    expect(res.status).toBe(200);
    expect((await res.json()).mode).toBe('test');
    // Still one demo customer, and the same admin token.
    expect(readFileSync(join(dataDir, 'admin-token'), 'utf8')).toBe(tokenBefore);
    expect(statSync(join(dataDir, 'admin-token')).mode & 0o777).toBe(0o600);
    const token = tokenBefore.trim();
    const second = await fetch(`http://127.0.0.1:${s.adminPort}/admin/v1/customers/2`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(second.status).toBe(404);

    expect(await stop(s)).toBe(0);
  });
});
