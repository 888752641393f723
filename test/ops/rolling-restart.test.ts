// docs/reference/running.md#graceful-stop, docs/reference/running.md#draining: a rolling restart. Three server processes on one PostgreSQL behind
// Debian's HAProxy (the health check of deploy/haproxy.cfg, DRAIN_DELAY_MS longer than it needs to
// notice), restarted one at a time (SIGTERM, wait for exit 0, start again on the same ports) under
// sync and async load from the SDK. Then: no logical request failed, every async job completed
// (none interrupted), and the soak's money invariants hold (nothing billed twice, every code's
// outcome matches the upstream's record). The figures are printed for bench/README.md.
// Runs on PostgreSQL when haproxy is installed (.ci/run installs it); skipped otherwise.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { RedeemGateway, type RetryInfo } from '../../sdk/src/index.ts';
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
} from '../helpers/process.ts';

const haproxy = (() => {
  try {
    return execFileSync('sh', ['-c', 'command -v haproxy'], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
})();
const run = Boolean(process.env.DATABASE_URL) && Boolean(haproxy);
if (process.env.DATABASE_URL && !haproxy) console.log('rolling restart: haproxy is not installed, skipped');

const SIM_KEY = 'rolling-sim-key-0123456789abcdef';
const CODE_KEY = Buffer.from(TEST_CODE_KEY, 'base64');
const TAG = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();
const SYNC_CLIENTS = 4;
const ASYNC_CLIENTS = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const dirs = serverProcesses();
const known = new Map<string, KnownCode>();
let serial = 0;
function newCode(): string {
  const code = `RR-${TAG}-${(serial++).toString(36).toUpperCase()}-60`;
  known.set(codeHash(CODE_KEY, code), { code, kind: 'caller' });
  return code;
}

let sim: UpstreamSim | undefined;
let proxy: ChildProcess | undefined;
const processes: ServerProcess[] = [];
afterAll(async () => {
  proxy?.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.kill()));
  await sim?.close();
});

function haproxyConfig(port: number, backends: number[]): string {
  return `global
    maxconn 2000
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout 503
frontend public
    bind 127.0.0.1:${port}
    default_backend gateways
backend gateways
    balance leastconn
    option httpchk
    http-check send meth GET uri /v1/health
    http-check expect status 200
    default-server inter 500 fall 1 rise 2
${backends.map((p, i) => `    server gw${i} 127.0.0.1:${p} check`).join('\n')}
`;
}

test.skipIf(!run)(
  'three processes behind HAProxy, restarted one at a time under SDK load: nothing fails, nothing is billed twice',
  async () => {
    sim = createUpstreamSim({ key: SIM_KEY });
    const simUrl = await sim.listen();
    const env = (port: number, adminPort: number) => ({
      ACTIVATOR: 'http',
      ACTIVATOR_URL: simUrl,
      ACTIVATOR_KEY: SIM_KEY,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      // HAProxy checks every 500 ms and takes a process out at the first 503.
      DRAIN_DELAY_MS: '1500',
      SHUTDOWN_GRACE_MS: '20000',
      WORKER_POLL_MS: '100',
    });
    const ports = await Promise.all([0, 1, 2].map(async () => [await freePort(), await freePort()] as const));
    for (const [port, adminPort] of ports)
      processes.push(await startServerProcess({ dataDir: dirs.dataDir(), env: env(port, adminPort) }));
    const lbPort = await freePort();
    const cfg = join(dirs.dataDir(), 'haproxy.cfg');
    writeFileSync(
      cfg,
      haproxyConfig(
        lbPort,
        ports.map(([p]) => p),
      ),
    );
    proxy = spawn(haproxy, ['-db', '-f', cfg], { stdio: 'ignore' });
    const lb = `http://127.0.0.1:${lbPort}`;
    for (;;) {
      const ok = await fetch(`${lb}/v1/health`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await sleep(100);
    }

    // One live merchant, several keys (the burst limit is not what this is about).
    const admin = processes[0]!;
    const { customer_id: customerId } = await adminHttp<{ customer_id: number }>(
      admin,
      'POST',
      '/admin/v1/customers',
      {
        name: 'rolling merchant',
      },
    );
    await adminHttp(admin, 'PUT', `/admin/v1/customers/${customerId}/plan`, {
      label: 'rolling',
      daily_limit: null,
      per_request_usd: '0.01',
      overage: true,
      active: true,
    });
    await adminHttp(admin, 'POST', `/admin/v1/customers/${customerId}/wallet/topup`, {
      mode: 'live',
      usd: 500,
    });
    const keys: string[] = [];
    for (let i = 0; i < SYNC_CLIENTS + ASYNC_CLIENTS; i++)
      keys.push(
        (
          await adminHttp<{ key: string }>(admin, 'POST', `/admin/v1/customers/${customerId}/keys`, {
            mode: 'live',
          })
        ).key,
      );

    const stats = { sync: 0, async: 0, failed: 0, retries: 0, codes: 0, restartsMs: [] as number[] };
    const failures: string[] = [];
    const client = (key: string) =>
      new RedeemGateway({
        apiKey: key,
        baseUrl: lb,
        maxRetries: 8,
        retryBaseMs: 100,
        onRetry: (_: RetryInfo) => {
          stats.retries += 1;
        },
      });
    let loadOn = true;
    const syncLoop = async (key: string) => {
      const c = client(key);
      while (loadOn) {
        const codes = [newCode(), newCode()];
        try {
          const r = await c.redeem({ player_id: '5123456789', codes });
          stats.sync += 1;
          stats.codes += codes.length;
          if (r.summary.activated !== codes.length) failures.push(`sync: ${JSON.stringify(r.summary)}`);
        } catch (err) {
          stats.failed += 1;
          failures.push(`sync: ${(err as Error).message}`);
        }
      }
    };
    const asyncLoop = async (key: string) => {
      const c = client(key);
      while (loadOn) {
        const codes = [newCode(), newCode(), newCode()];
        try {
          const accepted = await c.redeemAsync({ player_id: '5123456789', codes });
          const job = await c.waitForJob(accepted.job_id, { timeoutMs: 60_000 });
          stats.async += 1;
          stats.codes += codes.length;
          // waitForJob resolves only for a completed job (a failed or interrupted one throws).
          if (job.summary.activated !== codes.length) failures.push(`async: ${JSON.stringify(job.summary)}`);
        } catch (err) {
          stats.failed += 1;
          failures.push(`async: ${(err as Error).message}`);
        }
      }
    };
    const load = [...keys.slice(0, SYNC_CLIENTS).map(syncLoop), ...keys.slice(SYNC_CLIENTS).map(asyncLoop)];

    await sleep(1500);
    const exits: (number | null)[] = [];
    for (let i = 0; i < processes.length; i++) {
      const started = Date.now();
      const old = processes[i]!;
      const exited = new Promise<number | null>((r) => old.child.once('exit', (code) => r(code)));
      old.child.kill('SIGTERM');
      exits.push(await exited);
      const [port, adminPort] = ports[i]!;
      processes[i] = await startServerProcess({ dataDir: dirs.dataDir(), env: env(port, adminPort) });
      stats.restartsMs.push(Date.now() - started);
      // HAProxy takes it back after two good checks; then the next one goes.
      await sleep(1500);
    }
    loadOn = false;
    await Promise.all(load);

    expect(exits).toEqual([0, 0, 0]);
    expect(failures).toEqual([]);
    expect(stats.failed).toBe(0);
    console.log(`rolling restart: ${JSON.stringify(stats)}`);

    const db = await openPostgres(process.env.DATABASE_URL!, { max: 2 });
    try {
      const jobs = await db.query<{ status: string; n: number }>(
        'select status, count(*)::int as n from jobs where customer_id = $1 group by status order by status',
        [customerId],
      );
      expect(jobs.rows).toEqual([{ status: 'completed', n: expect.any(Number) }]);
      const report = await checkInvariants(db, {
        codes: known,
        upstream: { redemption: (c) => sim!.redemption(c), redeemedCount: () => sim!.stats().redeemed },
      });
      expect(report.violations).toEqual([]);
      console.log(`rolling restart: ${JSON.stringify(report.counts)}`);
    } finally {
      await db.close();
    }
  },
  240_000,
);
