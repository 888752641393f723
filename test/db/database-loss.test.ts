// Losing the database (docs/reference/running.md#database-loss), on PostgreSQL only: a real server process under concurrent
// sync and async live redeems (the http activator against the upstream simulator) while every
// backend of this file's own database is terminated again and again (pg_terminate_backend, the
// failover an operator sees). Then: the process never exited, no request hung past
// DATABASE_TIMEOUT_MS plus the activator's deadline, every request retried with its key got a
// final answer, no answer was a 500, no code was quarantined (every answer was known, so every
// one must be recorded), and the SQL invariants of the soak hold.
//
// Only this file's database is touched: other test files and helpers share the server.
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { codeHash } from '../../src/core/crypto/code-crypto.ts';
import { type Database, openPostgres } from '../../src/db/database.ts';
import { createUpstreamSim, type UpstreamSim } from '../../src/dev/upstream-sim.ts';
import { onPostgres } from '../helpers/db.ts';
import { checkInvariants, type KnownCode } from '../helpers/invariants.ts';
import { adminHttp, type ServerProcess, serverProcesses, TEST_CODE_KEY } from '../helpers/process.ts';

const KILL_PHASE_MS = Number(process.env.DB_LOSS_MS ?? 20_000);
const DATABASE_TIMEOUT_MS = 5000; // the default
const ACTIVATOR_TIMEOUT_MS = 3000;
/** What a request may take while the database is away (DATABASE_TIMEOUT_MS), plus a second of slack for the machine. */
const HUNG_AFTER_MS = DATABASE_TIMEOUT_MS + ACTIVATOR_TIMEOUT_MS + 1000;
const CLIENTS = 4;
const SIM_KEY = 'db-loss-sim-key-0123456789abcdef';
const CODE_KEY = Buffer.from(TEST_CODE_KEY, 'base64');
const TAG = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const servers = serverProcesses();
let sim: UpstreamSim | undefined;
let db: Database | undefined;
let killer: pg.Client | undefined;
afterAll(async () => {
  await killer?.end().catch(() => undefined);
  await db?.close().catch(() => undefined);
  await sim?.close();
});

const known = new Map<string, KnownCode>();
let seq = 0;
function newCode(): string {
  const code = `L-${TAG}-${(seq++).toString(36).toUpperCase()}-60`;
  known.set(codeHash(CODE_KEY, code), { code, kind: 'caller' });
  return code;
}

const stats = {
  requests: 0,
  sync: 0,
  async: 0,
  retries: 0,
  unavailable: 0,
  inProgress: 0,
  networkErrors: 0,
  hung: 0,
  kills: 0,
  backendsKilled: 0,
  statuses: {} as Record<string, number>,
};
const serverErrors: string[] = [];

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function call(
  server: ServerProcess,
  method: string,
  path: string,
  key: string,
  opts: { body?: unknown; idempotencyKey?: string } = {},
): Promise<Answer | null> {
  stats.requests += 1;
  const started = Date.now();
  try {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {}),
      },
      ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
      signal: AbortSignal.timeout(HUNG_AFTER_MS),
    });
    const body = (await res.json()) as Record<string, unknown>;
    const label = `${res.status}${body.error_code ? ` ${body.error_code}` : ''}`;
    stats.statuses[label] = (stats.statuses[label] ?? 0) + 1;
    if (res.status >= 500 && body.error_code !== 'unavailable')
      serverErrors.push(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
    if (res.status === 503 && !res.headers.get('retry-after'))
      serverErrors.push(`${method} ${path}: 503 without Retry-After`);
    return { status: res.status, body };
  } catch (err) {
    if ((err as Error).name === 'TimeoutError' || Date.now() - started >= HUNG_AFTER_MS) stats.hung += 1;
    else stats.networkErrors += 1;
    return null;
  }
}

/** Sends a redeem and retries it with its key until it has a final answer (or the deadline). */
async function redeemToTheEnd(
  server: ServerProcess,
  key: string,
  body: Record<string, unknown>,
  idempotencyKey: string,
  deadline: number,
): Promise<string | null> {
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    if (attempt > 0) stats.retries += 1;
    const res = await call(server, 'POST', '/v1/redeem', key, { body, idempotencyKey });
    if (res && (res.status === 200 || res.status === 422)) return 'answered';
    if (res?.status === 202) return pollJob(server, key, String(res.body.job_id), deadline);
    if (res?.status === 503) stats.unavailable += 1;
    if (res?.body.error_code === 'idempotency_in_progress') stats.inProgress += 1;
    if (res && ![503, 409, 429].includes(res.status))
      return `unexpected ${res.status} ${JSON.stringify(res.body)}`;
    await sleep(res?.body.error_code === 'rate_limited' ? 1000 : 300);
  }
  return null;
}

async function pollJob(server: ServerProcess, key: string, jobId: string, deadline: number) {
  while (Date.now() < deadline) {
    const res = await call(server, 'GET', `/v1/jobs/${jobId}`, key);
    if (res?.status === 200) {
      const status = String(res.body.status);
      if (status !== 'queued' && status !== 'running') return `job ${status}`;
    }
    await sleep(200);
  }
  return null;
}

// On Citus too: there, terminating every backend of the coordinator's database also ends Citus's
// own connections (to the workers and to itself, where the reference tables are); the service
// takes that as one more database restart.
test.skipIf(!onPostgres)(
  'terminating every backend again and again: no exit, no hang, every request answered, invariants hold',
  async () => {
    sim = createUpstreamSim({ key: SIM_KEY });
    const simUrl = await sim.listen();
    const server = await servers.start(servers.dataDir(), {
      ACTIVATOR: 'http',
      ACTIVATOR_URL: simUrl,
      ACTIVATOR_KEY: SIM_KEY,
      ACTIVATOR_TIMEOUT_MS: String(ACTIVATOR_TIMEOUT_MS),
      DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS),
    });
    const { customer_id: customerId } = await adminHttp<{ customer_id: number }>(
      server,
      'POST',
      '/admin/v1/customers',
      { name: 'db loss' },
    );
    await adminHttp(server, 'PUT', `/admin/v1/customers/${customerId}/plan`, {
      label: 'db loss',
      daily_limit: 50,
      per_request_usd: '0.01',
      overage: true,
      active: true,
    });
    await adminHttp(server, 'POST', `/admin/v1/customers/${customerId}/wallet/topup`, {
      mode: 'live',
      usd: 500,
    });
    // Keys enough that the burst limit (30 per key per 10 s) is not what this test is about.
    const keys: string[] = [];
    for (let i = 0; i < CLIENTS * 3; i++)
      keys.push(
        (
          await adminHttp<{ key: string }>(server, 'POST', `/admin/v1/customers/${customerId}/keys`, {
            mode: 'live',
          })
        ).key,
      );

    // The killer: every backend of this database but its own, every 300 to 900 ms.
    const url = process.env.DATABASE_URL!;
    const dbName = new URL(url).pathname.slice(1);
    killer = new pg.Client({ connectionString: url });
    await killer.connect();
    const killUntil = Date.now() + KILL_PHASE_MS;
    const killing = (async () => {
      while (Date.now() < killUntil) {
        await sleep(300 + Math.random() * 600);
        const r = await killer!.query(
          `select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`,
          [dbName],
        );
        stats.kills += 1;
        stats.backendsKilled += r.rowCount ?? 0;
      }
    })();

    // The clients: sync and async redeems of 1 to 4 codes, each retried with its key to the end.
    const outcomes: Array<string | null> = [];
    const finalDeadline = killUntil + 120_000;
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        let n = 0;
        while (Date.now() < killUntil) {
          const isAsync = Math.random() < 0.4;
          if (isAsync) stats.async += 1;
          else stats.sync += 1;
          const body = {
            player_id: `5${100000000 + Math.floor(Math.random() * 899999999)}`,
            codes: Array.from({ length: 1 + Math.floor(Math.random() * 4) }, newCode),
            async: isAsync,
          };
          const key = keys[(c * 3 + n) % keys.length]!;
          outcomes.push(await redeemToTheEnd(server, key, body, `loss-${c}-${n++}`, finalDeadline));
        }
      }),
    );
    await killing;

    // Quiet: every job ends (a job whose process lost its lease is recovered within 45 s).
    db = await openPostgres(url, { max: 2 });
    for (;;) {
      const open = await db.query<{ n: number }>(
        `select count(*)::int as n from jobs where status in ('queued', 'running')`,
      );
      if (open.rows[0]!.n === 0) break;
      if (Date.now() > finalDeadline) {
        // What the next person needs to tell a stuck run from a lost one (seen once in CI).
        const stuck = await db.query(
          `select j.id, j.status, j.is_async, j.lease_owner, j.lease_expires_at, j.created_at, j.started_at,
                  now() as db_now,
                  (select jsonb_object_agg(c.status, c.n) from (select coalesce(jc.status, '(none)') as status,
                     count(*) as n from job_codes jc where jc.job_id = j.id group by 1) c) as codes
             from jobs j where j.status in ('queued', 'running') order by j.created_at limit 10`,
        );
        throw new Error(
          `jobs still unfinished: ${JSON.stringify(stuck.rows)}\nserver output (last 4,000 characters):\n${server.output().slice(-4000)}`,
        );
      }
      await sleep(500);
    }

    const report = await checkInvariants(db, {
      codes: known,
      upstream: { redemption: (c) => sim!.redemption(c), redeemedCount: () => sim!.stats().redeemed },
    });
    const quarantined = await db.query<{ n: number }>(
      `select count(*)::int as n from job_codes where disposition = 'quarantined'`,
    );
    const jobStates = await db.query<{ status: string; async: boolean; n: number }>(
      `select status, is_async as async, count(*)::int as n from jobs group by 1, 2 order by 1, 2`,
    );
    const serverRetries = server.output().match(/database unavailable while [^"]*; retrying/g)?.length ?? 0;
    console.log(
      JSON.stringify({
        stats,
        serverRetries,
        jobs: jobStates.rows,
        counts: report.counts,
        observations: report.observations,
      }),
    );

    expect(server.child.exitCode).toBeNull();
    expect(server.child.signalCode).toBeNull();
    expect(stats.kills).toBeGreaterThan(10);
    expect(stats.backendsKilled).toBeGreaterThan(stats.kills);
    // The database was really lost under load: some requests were answered 503, or the server
    // had to retry a redeem's statement on a new connection (on a fast machine the retries can
    // absorb every kill, so a 503 alone is not guaranteed).
    expect(stats.unavailable + serverRetries).toBeGreaterThan(0);
    expect(stats.hung).toBe(0);
    expect(outcomes.filter((o) => o === null)).toEqual([]);
    expect(outcomes.filter((o) => o !== 'answered' && o !== 'job completed')).toEqual([]);
    expect(serverErrors).toEqual([]);
    expect(quarantined.rows[0]!.n).toBe(0);
    expect(report.violations).toEqual([]);
    expect(server.output()).not.toMatch(/uncaught|unhandled/i);
  },
  240_000,
);
