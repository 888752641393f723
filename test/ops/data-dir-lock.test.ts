// docs/reference/running.md#the-data-directory-lock: one process per embedded database. A second server on a DATA_DIR that a running
// one holds exits non-zero with one line naming the holder's pid; the lock of a process that died
// (SIGKILL) is taken over, with the data it left; a graceful stop removes the lock.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, test } from 'vitest';
import { DataDirInUseError, LOCK_FILE, lockDataDir } from '../../src/db/data-dir-lock.ts';
import {
  adminHttp,
  createProcessMerchant,
  freePort,
  serverProcesses,
  TEST_ADMIN_TOKEN,
  TEST_CODE_KEY,
} from '../helpers/process.ts';

const servers = serverProcesses();
const scratch = mkdtempSync(join(tmpdir(), 'rg-lock-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A pid that belonged to a process that has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid!;
}

describe.skipIf(Boolean(process.env.DATABASE_URL))('the DATA_DIR lock (embedded database)', () => {
  test('a second server exits 1 naming the holder; a killed holder is taken over with its data', async () => {
    const dataDir = servers.dataDir();
    const first = await servers.start(dataDir);
    const holder = JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8'));
    expect(holder).toEqual({ pid: first.child.pid, host: hostname(), started: expect.any(String) });
    const { customerId } = await createProcessMerchant(first);

    const second = spawn(
      process.execPath,
      [join(import.meta.dirname, '..', '..', 'bin', 'redeem-gateway.js'), 'serve'],
      {
        env: {
          PATH: process.env.PATH ?? '',
          DATA_DIR: dataDir,
          PORT: String(await freePort()),
          ADMIN_PORT: String(await freePort()),
          ADMIN_TOKEN: 'lock-test-admin-token-0123456789',
          CODE_ENCRYPTION_KEY: TEST_CODE_KEY,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    second.stdout!.on('data', (d) => (out += d));
    second.stderr!.on('data', (d) => (out += d));
    const code = await new Promise((r) => second.once('exit', r));
    expect(code).toBe(1);
    expect(out).toBe(
      `error: DATA_DIR ${dataDir} is in use by process ${first.child.pid}: its embedded database takes one process; stop that process first (or, if it is gone, remove ${join(dataDir, LOCK_FILE)})\n`,
    );
    // The first server did not notice.
    expect((await fetch(`${first.url}/v1/health`)).status).toBe(200);

    await first.kill('SIGKILL');
    const third = await servers.start(dataDir);
    expect(JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).pid).toBe(third.child.pid);
    const view = await adminHttp<{ customer: { customer_id: number; name: string } }>(
      third,
      'GET',
      `/admin/v1/customers/${customerId}`,
    );
    expect(view.customer).toMatchObject({ customer_id: customerId, name: 'process merchant' });

    await third.kill('SIGTERM');
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
  }, 120_000);

  test('a holder killed while its parent does not reap it (a zombie) is taken over', async () => {
    // A container whose PID 1 never waits: `sh` starts the server in the background, then
    // becomes `sleep`, which never reaps it. SIGKILLed, the server stays a zombie: its pid still
    // answers kill(pid, 0) and its start time still matches the lock.
    const dataDir = servers.dataDir();
    cpSync(inject('pgliteTemplate'), join(dataDir, 'pglite'), { recursive: true });
    const bin = join(import.meta.dirname, '..', '..', 'bin', 'redeem-gateway.js');
    const parent = spawn('sh', ['-c', `"${process.execPath}" "${bin}" serve & exec sleep 120`], {
      env: {
        PATH: process.env.PATH ?? '',
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        ADMIN_PORT: String(await freePort()),
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        CODE_ENCRYPTION_KEY: `${TEST_CODE_KEY},${Buffer.alloc(32, 7).toString('base64')}`,
        LOG_LEVEL: 'warn',
      },
      stdio: 'ignore',
    });
    try {
      let holderPid = 0;
      for (const deadline = Date.now() + 60_000; !holderPid && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 100));
        try {
          holderPid = JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).pid;
        } catch {
          // not written yet
        }
      }
      expect(holderPid).toBeGreaterThan(0);
      process.kill(holderPid, 'SIGKILL');
      const state = () => {
        const stat = readFileSync(`/proc/${holderPid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
      };
      for (let i = 0; i < 100 && state() !== 'Z'; i++) await new Promise((r) => setTimeout(r, 50));
      expect(state()).toBe('Z');

      const next = await servers.start(dataDir);
      expect(JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).pid).toBe(next.child.pid);
      expect((await fetch(`${next.url}/v1/health`)).status).toBe(200);
      await next.kill('SIGTERM');
    } finally {
      parent.kill('SIGKILL');
    }
  }, 120_000);

  test('a lock naming a live process is refused, one naming a dead one or garbage is taken over', () => {
    const dir = join(scratch, 'unit');
    mkdirSync(dir);
    const sleeper = spawn('sleep', ['30']);
    writeFileSync(
      join(dir, LOCK_FILE),
      JSON.stringify({ pid: sleeper.pid, host: hostname(), started: null }),
    );
    try {
      expect(() => lockDataDir(dir)).toThrow(DataDirInUseError);
      expect(() => lockDataDir(dir)).toThrow(`is in use by process ${sleeper.pid}:`);
    } finally {
      sleeper.kill('SIGKILL');
    }
    // Another host's process cannot be checked: refused, naming the host.
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: 4242, host: 'elsewhere', started: null }));
    expect(() => lockDataDir(dir)).toThrow(`is in use by process 4242 on host elsewhere:`);

    for (const stale of [JSON.stringify({ pid: deadPid(), host: hostname(), started: null }), '{"pid":']) {
      writeFileSync(join(dir, LOCK_FILE), stale);
      const lock = lockDataDir(dir);
      expect(JSON.parse(readFileSync(lock.path, 'utf8')).pid).toBe(process.pid);
      // Held by this process now: a second start in it is refused too.
      expect(() => lockDataDir(dir)).toThrow(`is in use by process ${process.pid}:`);
      lock.release();
      expect(existsSync(lock.path)).toBe(false);
    }
  });
});
