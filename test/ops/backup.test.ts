// docs/reference/running.md#backups, backups of the embedded database: `redeem-gateway backup --out FILE` through the
// admin API while the server runs and from DATA_DIR while it is stopped; `restore --from FILE
// --data-dir DIR` fills a new, empty directory (a non-empty one is refused) whose every table
// equals the original's, and from which the service starts with the same customers, keys,
// balances, ledger, jobs and stock (the stock still activates: the code key came along).
import { spawn } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { openPglite } from '../../src/db/database.ts';
import {
  adminHttp,
  createProcessMerchant,
  serverProcesses,
  submitAsyncRedeem,
  TEST_ADMIN_TOKEN,
  waitUntil,
} from '../helpers/process.ts';
import { uniqueCode } from '../helpers/redeem.ts';

const servers = serverProcesses();
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'redeem-gateway.js');

function cli(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; out: string }>((done) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('exit', (code) => done({ code, out }));
  });
}

/** Every table of an embedded database, every row, in a stable order. */
async function everything(pgliteDir: string): Promise<Record<string, unknown[]>> {
  const db = await openPglite(pgliteDir);
  try {
    // Every logged table. The one unlogged table, burst_windows (migration 0065: the limits'
    // sliding windows), is not in a backup by design: a restored service starts its limits afresh.
    const tables = await db.query<{ name: string }>(
      `select relname as name from pg_class
        where relnamespace = 'public'::regnamespace and relkind = 'r' and relpersistence = 'p' order by 1`,
    );
    const out: Record<string, unknown[]> = {};
    for (const { name } of tables.rows)
      out[name] = (await db.query(`select * from "${name}" t order by t::text`)).rows;
    return out;
  } finally {
    await db.close();
  }
}

describe.skipIf(Boolean(process.env.DATABASE_URL))('backup and restore of the embedded database', () => {
  test('online and offline backups restore into new directories with every row; the service starts on them', async () => {
    const dataDir = servers.dataDir();
    const server = await servers.start(dataDir);
    const { customerId, key } = await createProcessMerchant(server);
    await adminHttp(server, 'POST', `/admin/v1/customers/${customerId}/stock`, {
      mode: 'test',
      category: '60',
      codes: Array.from({ length: 4 }, () => uniqueCode('OK')),
    });
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const sync = await fetch(`${server.url}/v1/redeem`, {
      method: 'POST',
      headers: { ...auth, 'idempotency-key': 'backup-sync' },
      body: JSON.stringify({ player_id: '5123456789', packs: { '60': 1 } }),
    });
    expect(sync.status).toBe(200);
    const jobId = await submitAsyncRedeem(server, key, uniqueCode('OK'));
    await waitUntil('the job to complete', async () => {
      const r = await fetch(`${server.url}/v1/jobs/${jobId}`, { headers: auth });
      return ((await r.json()) as { status: string }).status === 'completed' ? true : undefined;
    });
    const meBefore = await (await fetch(`${server.url}/v1/me`, { headers: auth })).json();

    // Online: the server holds DATA_DIR, so the copy is taken through its admin API.
    const online = join(servers.dataDir(), 'online.backup');
    const env = { DATA_DIR: dataDir, ADMIN_URL: server.adminUrl, ADMIN_TOKEN: TEST_ADMIN_TOKEN };
    const taken = await cli(['backup', '--out', online], env);
    expect(taken.code).toBe(0);
    expect(taken.out).toMatch(/^backup written to .* through the admin API of the running server\)$/m);
    // These servers take their code key from CODE_ENCRYPTION_KEY, not from a file: said so.
    expect(taken.out).toContain('warning: no code-encryption.key in');
    expect(statSync(online).mode & 0o777).toBe(0o600);

    await server.kill('SIGTERM');
    const original = await everything(join(dataDir, 'pglite'));
    expect(original.customers!.length).toBeGreaterThan(0);
    expect(original.jobs!.length).toBeGreaterThan(0);
    // The online backup is audited, as its operator (root, the CLI's token).
    expect(
      original.audit_events!.filter((e) => (e as { action: string }).action === 'backup.create'),
    ).toEqual([expect.objectContaining({ actor: 'root', customer_id: null, target: null })]);

    // Offline: nobody holds DATA_DIR, the copy is taken from the files.
    const offline = join(servers.dataDir(), 'offline.backup');
    const fromDisk = await cli(['backup', '--out', offline], { DATA_DIR: dataDir });
    expect(fromDisk.code).toBe(0);
    expect(fromDisk.out).toContain(`from ${dataDir})`);

    for (const file of [online, offline]) {
      const target = join(servers.dataDir(), 'restored');
      const restored = await cli(['restore', '--from', file, '--data-dir', target]);
      expect(restored).toEqual({
        code: 0,
        out: `restored into ${target}: start the server with DATA_DIR=${target}\n`,
      });
      // Every row; the online copy without its own audit event (written after it).
      const expected = { ...original };
      if (file === online)
        expected.audit_events = original.audit_events!.filter(
          (e) => (e as { action: string }).action !== 'backup.create',
        );
      expect(await everything(join(target, 'pglite'))).toEqual(expected);

      // The service starts on it: the same key, the same balance, and the stock still activates.
      const again = await servers.start(target);
      expect(await (await fetch(`${again.url}/v1/me`, { headers: auth })).json()).toMatchObject({
        ok: true,
        customer_id: (meBefore as { customer_id: number }).customer_id,
      });
      const fromStock = await fetch(`${again.url}/v1/redeem`, {
        method: 'POST',
        headers: { ...auth, 'idempotency-key': `after-restore-${file.length}` },
        body: JSON.stringify({ player_id: '5123456789', packs: { '60': 1 } }),
      });
      expect(fromStock.status).toBe(200);
      expect(await fromStock.json()).toMatchObject({ ok: true, summary: { activated: 1 } });
      await again.kill('SIGTERM');
    }
  }, 180_000);

  test('restore refuses a non-empty directory and a file that is not a backup', async () => {
    const dir = servers.dataDir();
    writeFileSync(join(dir, 'something'), 'x');
    const backup = join(servers.dataDir(), 'not-a.backup');
    writeFileSync(backup, 'hello\n');
    expect(await cli(['restore', '--from', backup, '--data-dir', dir])).toEqual({
      code: 1,
      out: `error: ${dir} is not empty: restore fills a new, empty data directory\n`,
    });
    const empty = join(servers.dataDir(), 'new');
    mkdirSync(empty);
    expect(await cli(['restore', '--from', backup, '--data-dir', empty])).toEqual({
      code: 1,
      out: `error: ${backup} is not a redeem-gateway backup\n`,
    });
  });
});
