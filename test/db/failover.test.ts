// docs/reference/running.md#postgresql-poolers-and-failover, failover: PostgreSQL with a synchronous standby (.ci/failover-clusters.sh:
// pg_basebackup, synchronous_standby_names, synchronous_commit = on), reached through HAProxy in
// TCP mode with a PostgreSQL health check (the standby runs with hot_standby = off, so it is
// "down" until promoted). Under SDK load on two server processes the primary is killed (immediate
// stop) and the standby promoted. Then: the service answers again by itself within 30 s, every
// redeem that was answered is in the new primary, and the soak's money invariants hold.
// Run by .ci/run when the tools are there (FAILOVER_PRIMARY_PORT and FAILOVER_STANDBY_PORT set);
// skipped otherwise. The figures are printed for bench/README.md.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { RedeemGateway } from '../../sdk/src/index.ts';
import { codeHash } from '../../src/core/crypto/code-crypto.ts';
import { openPostgres } from '../../src/db/database.ts';
import { createUpstreamSim, type UpstreamSim } from '../../src/dev/upstream-sim.ts';
import { checkInvariants, type KnownCode } from '../helpers/invariants.ts';
import {
  adminHttp,
  freePort,
  type ServerProcess,
  serverProcesses,
  startServerProcess,
  TEST_CODE_KEY,
  waitUntil,
} from '../helpers/process.ts';

const PRIMARY = Number(process.env.FAILOVER_PRIMARY_PORT ?? 0);
const STANDBY = Number(process.env.FAILOVER_STANDBY_PORT ?? 0);
const SCRIPT = join(import.meta.dirname, '..', '..', '.ci', 'failover-clusters.sh');
const SIM_KEY = 'failover-sim-key-0123456789abcdef';
const CODE_KEY = Buffer.from(TEST_CODE_KEY, 'base64');
const TAG = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const dirs = serverProcesses();
const known = new Map<string, KnownCode>();
let serial = 0;
function newCode(): string {
  const code = `FO-${TAG}-${(serial++).toString(36).toUpperCase()}-60`;
  known.set(codeHash(CODE_KEY, code), { code, kind: 'caller' });
  return code;
}

let sim: UpstreamSim | undefined;
let proxy: ChildProcess | undefined;
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  proxy?.kill('SIGKILL');
  await sim?.close();
});

function haproxyConfig(port: number): string {
  return `defaults
    mode tcp
    timeout connect 1s
    timeout client 5m
    timeout server 5m
listen postgres
    bind 127.0.0.1:${port}
    option pgsql-check user postgres
    default-server inter 500 fall 2 rise 1 on-marked-down shutdown-sessions
    server primary 127.0.0.1:${PRIMARY} check
    server standby 127.0.0.1:${STANDBY} check backup
`;
}

/**
 * HAProxy in front of the two clusters, reaching the primary: its URL. A proxy that exits at once
 * (its port taken between freePort and its bind) is started again on another port, twice at most;
 * its own words are in the error if it never comes up.
 */
async function startProxy(): Promise<string> {
  let said = '';
  for (let attempt = 1; ; attempt++) {
    const lbPort = await freePort();
    const cfg = join(dirs.dataDir(), 'haproxy.cfg');
    writeFileSync(cfg, haproxyConfig(lbPort));
    const started = spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
    proxy = started;
    said = '';
    started.stderr!.on('data', (chunk: Buffer) => {
      said = (said + chunk.toString('utf8')).slice(-2000);
    });
    let exited = false;
    started.once('exit', () => {
      exited = true;
    });
    const url = `postgres://postgres@127.0.0.1:${lbPort}/rg_failover`;
    const reached = await waitUntil('HAProxy to reach the primary', async () => {
      if (exited) return false;
      const c = new pg.Client({ connectionString: url });
      return c.connect().then(
        () => c.end().then(() => true),
        () => undefined,
      );
    }).catch((err: Error) => {
      throw new Error(`${err.message}; HAProxy said: ${said || 'nothing'}`);
    });
    if (reached) return url;
    if (attempt === 3) throw new Error(`HAProxy exited at start three times; it said: ${said}`);
  }
}

test.skipIf(!PRIMARY || !STANDBY)(
  'the synchronous standby promoted under load: the service resumes, no answered redeem is lost',
  async () => {
    const admin = new pg.Client({ host: '127.0.0.1', port: PRIMARY, user: 'postgres', database: 'postgres' });
    await admin.connect();
    await admin.query('drop database if exists rg_failover');
    await admin.query('create database rg_failover');
    await admin.end();

    const url = await startProxy();
    sim = createUpstreamSim({ key: SIM_KEY });
    const simUrl = await sim.listen();
    const env = {
      DATABASE_URL: url,
      ACTIVATOR: 'http',
      ACTIVATOR_URL: simUrl,
      ACTIVATOR_KEY: SIM_KEY,
      DATABASE_TIMEOUT_MS: '2000',
      WORKER_POLL_MS: '100',
    };
    for (let i = 0; i < 2; i++) servers.push(await startServerProcess({ dataDir: dirs.dataDir(), env }));

    const { customer_id: customerId } = await adminHttp<{ customer_id: number }>(
      servers[0]!,
      'POST',
      '/admin/v1/customers',
      {
        name: 'failover merchant',
      },
    );
    await adminHttp(servers[0]!, 'PUT', `/admin/v1/customers/${customerId}/plan`, {
      label: 'failover',
      daily_limit: null,
      per_request_usd: '0.01',
      overage: true,
      active: true,
    });
    await adminHttp(servers[0]!, 'POST', `/admin/v1/customers/${customerId}/wallet/topup`, {
      mode: 'live',
      usd: 500,
    });
    const keys: string[] = [];
    for (let i = 0; i < 5; i++)
      keys.push(
        (
          await adminHttp<{ key: string }>(servers[0]!, 'POST', `/admin/v1/customers/${customerId}/keys`, {
            mode: 'live',
          })
        ).key,
      );

    const answered: string[] = [];
    const errors = new Set<string>();
    const stats = { sync: 0, async: 0, failed: 0, resumedAfterMs: 0 };
    let loadOn = true;
    const client = (key: string, i: number) =>
      new RedeemGateway({ apiKey: key, baseUrl: servers[i % 2]!.url, maxRetries: 30, retryBaseMs: 200 });
    const syncLoop = async (key: string, i: number) => {
      const c = client(key, i);
      while (loadOn) {
        const codes = [newCode(), newCode()];
        try {
          const r = await c.redeem({ player_id: '5123456789', codes });
          stats.sync += 1;
          for (const o of r.codes) if (o.status === 'activated') answered.push(o.code);
        } catch (err) {
          stats.failed += 1;
          errors.add((err as Error).message);
        }
      }
    };
    const asyncLoop = async (key: string, i: number) => {
      const c = client(key, i);
      while (loadOn) {
        try {
          const accepted = await c.redeemAsync({ player_id: '5123456789', codes: [newCode(), newCode()] });
          const job = await c.waitForJob(accepted.job_id, { timeoutMs: 120_000 });
          stats.async += 1;
          for (const o of job.codes) if (o.status === 'activated') answered.push(o.code);
        } catch (err) {
          stats.failed += 1;
          errors.add((err as Error).message);
        }
      }
    };
    const load = [...keys.slice(0, 4).map(syncLoop), asyncLoop(keys[4]!, 4)];

    await sleep(3000);
    const before = answered.length;
    const crashed = Date.now();
    execFileSync('bash', [SCRIPT, 'crash-primary']);
    execFileSync('bash', [SCRIPT, 'promote']);
    // Resumes by itself: both processes' health answers 200 again within 30 s (docs/reference/running.md#postgresql-poolers-and-failover).
    await Promise.all(
      servers.map((s) =>
        waitUntil(
          'the service to answer again',
          () => fetch(`${s.url}/v1/health`).then((r) => (r.status === 200 ? true : undefined)),
          30_000,
        ),
      ),
    );
    stats.resumedAfterMs = Date.now() - crashed;
    await sleep(3000);
    loadOn = false;
    await Promise.all(load);
    expect(answered.length).toBeGreaterThan(before);

    // Settle what the failover left unknown (codes out with the upstream when the commit failed).
    await waitUntil(
      'quarantine to be settled',
      async () => {
        await adminHttp(servers[0]!, 'POST', '/admin/v1/quarantine/check', {});
        const left = await adminHttp<{ codes: unknown[] }>(servers[0]!, 'GET', '/admin/v1/quarantine');
        return left.codes.length === 0 ? true : undefined;
      },
      60_000,
    );
    const db = await openPostgres(url, { max: 2 });
    try {
      // Every answered activation is in the new primary.
      const rows = await db.query<{ n: number }>(
        `select count(distinct code_hash)::int as n from job_codes where code_hash = any($1) and status = 'activated'`,
        [answered.map((c) => codeHash(CODE_KEY, c))],
      );
      expect(rows.rows[0]!.n).toBe(answered.length);
      await waitUntil('every job to end', async () => {
        const r = await db.query<{ n: number }>(
          `select count(*)::int as n from jobs where status in ('queued', 'running')`,
        );
        return r.rows[0]!.n === 0 ? true : undefined;
      });
      const report = await checkInvariants(db, {
        codes: known,
        upstream: { redemption: (c) => sim!.redemption(c), redeemedCount: () => sim!.stats().redeemed },
      });
      expect(report.violations).toEqual([]);
      console.log(
        `failover: ${JSON.stringify({ ...stats, errors: [...errors], answered: answered.length, counts: report.counts })}`,
      );
    } finally {
      await db.close();
    }
  },
  300_000,
);
