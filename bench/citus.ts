// Citus against one PostgreSQL server (docs/running/citus.md#benchmark), in one run:
//
// 1. GET /v1/me and a sync one-code POST /v1/redeem (sandbox activator, test keys) through a
//    gateway on a throwaway database of the local PostgreSQL server and through one on a Citus
//    coordinator with two workers that this bench starts, with the same fixtures; the two
//    databases measured in turn (plain, Citus, plain, Citus …) so each pair shares the machine's
//    moment. The figure is the median ratio Citus / plain per scenario: on one machine the three
//    Citus servers share its cores with everything else, so this is the cost of the extra hop
//    and of the coordinator's planning, not what workers on machines of their own would give.
// 2. A job claim's cost (claimJob: on Citus through work_queue,
//    docs/running/citus.md#fair-claims-on-citus) on a Citus cluster of 1, 2 and 4 workers, one
//    after the other, and on plain PostgreSQL for reference: N queued async jobs over C customers
//    written directly (as bench/claims.ts does) with their work_queue rows, then K claims timed
//    one at a time. Beside it, for contrast, a read that asks every worker (repairWorkQueue's).
// 3. With --parts=rebalance: a worker added to a serving cluster and the shards rebalanced onto it
//    online while sync redeems run (docs/running/citus.md#adding-a-worker-rebalancing).
// 4. With --parts=mixed: --customers merchants' sync and async redeems, webhooks, redeliveries,
//    reads and statements at once on two workers, with their owners in the chat (the bot talking
//    to the Bot API stand-in), counting two-phase commits (citus-mixed.ts, citus-chat.ts).
//
// Nothing is asserted: benches measure. Every cluster is stopped and every database dropped at
// the end, also when the run fails or is interrupted.
//
//   npm run bench:citus
//   npm run bench:citus -- --duration=10 --pairs=5 --claim-workers=1,2,4
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs, promisify } from 'node:util';
import autocannon from 'autocannon';
import type { RedeemDeps } from '../src/core/context.ts';
import { claimJob } from '../src/core/jobs/states.ts';
import { hasCitus } from '../src/db/citus.ts';
import { type Database, openPostgres } from '../src/db/database.ts';
import { migrateAndPlace } from '../src/db/migrate-direct.ts';
import { startBotApiSim } from '../src/dev/bot-api-sim.ts';
import { type MixedResult, mixedReport, runMixed, twoPhaseRecords } from './citus-mixed.ts';
import { createFixtureCustomers, createFixtures } from './fixtures.ts';
import { type Gateway, repoRoot, startGateway } from './gateway.ts';
import { machineCpu, processCpuSeconds } from './processes.ts';
import { meRequests, notOkReason, redeemRequests, seamCounts } from './requests.ts';
import { createTestCa, startWebhookReceiver } from './webhook-receiver.ts';

const run = promisify(execFile);

const HELP = `npm run bench:citus -- [options]

Needs root, PostgreSQL 15 with Citus (../shared/citus/install.sh) and a local PostgreSQL server.

Options (defaults in brackets):
  --postgres=URL          the local server where the plain throwaway databases are made and dropped
                          [postgres://postgres@127.0.0.1:5432/postgres]
  --port=N                the Citus clusters' first port; a cluster of W workers takes N..N+W [9780]
  --parts=LIST            load,claims,rebalance,mixed [load,claims] (rebalance: a worker added under
                          load; mixed: --customers merchants' sync and async redeems, webhooks,
                          redeliveries, reads and statements at once, counting two-phase commits)
  --mixed-seconds=S       the mixed load's length [30]
  --mixed-clients=N       the mixed load's requests in flight [8]
  --mixed-chats=N         the mixed load's owners' conversations in the chat at once (0: no chat) [2]
Load (GET /v1/me and sync redeems, plain PostgreSQL against a coordinator with two workers):
  --duration=S            seconds measured per run [5]
  --warmup=S              seconds of unmeasured load before each run [1]
  --connections=N         concurrent connections [16]
  --pairs=N               runs of each database per scenario, in turn [3]
  --scenarios=LIST        me,redeem,redeem-used [me,redeem,redeem-used] (redeem-used: codes the sandbox
                          answers code_used, whose outcome is not the sandbox's memory: on Citus
                          both of the redeem's calls then run on the worker)
  --customers=N           customers per database [100]
  --keys-per-customer=N   test keys per customer [4] (30 redeems per key in any 10 s: 400 keys
                          allow 1,200 redeems/s)
Claims (a claim's cost with 1, 2 and 4 workers):
  --claim-workers=LIST    worker counts, one cluster each, in turn [1,2,4]
  --jobs=N                queued async jobs [5000]
  --claim-customers=N     customers they are spread over [50]
  --claims=N              claims timed per database [50]
  --help
`;

interface Options {
  postgres: string;
  port: number;
  load: boolean;
  claims: boolean;
  rebalance: boolean;
  mixed: boolean;
  mixedSeconds: number;
  mixedClients: number;
  mixedChats: number;
  duration: number;
  warmup: number;
  connections: number;
  pairs: number;
  scenarios: Scenario[];
  customers: number;
  keysPerCustomer: number;
  claimWorkers: number[];
  jobs: number;
  claimCustomers: number;
  claimCount: number;
}

function parseOptions(): Options | null {
  const { values } = parseArgs({
    options: {
      postgres: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
      port: { type: 'string', default: '9780' },
      parts: { type: 'string', default: 'load,claims' },
      'mixed-seconds': { type: 'string', default: '30' },
      'mixed-clients': { type: 'string', default: '8' },
      'mixed-chats': { type: 'string', default: '2' },
      duration: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '1' },
      connections: { type: 'string', default: '16' },
      pairs: { type: 'string', default: '3' },
      scenarios: { type: 'string', default: 'me,redeem,redeem-used' },
      customers: { type: 'string', default: '100' },
      'keys-per-customer': { type: 'string', default: '4' },
      'claim-workers': { type: 'string', default: '1,2,4' },
      jobs: { type: 'string', default: '5000' },
      'claim-customers': { type: 'string', default: '50' },
      claims: { type: 'string', default: '50' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return null;
  const int = (name: string, raw: string, min: number) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return n;
  };
  const list = (raw: string) =>
    raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const parts = list(values.parts);
  for (const p of parts)
    if (!['load', 'claims', 'rebalance', 'mixed'].includes(p)) throw new Error(`--parts: unknown "${p}"`);
  const scenarios = list(values.scenarios);
  for (const s of scenarios)
    if (s !== 'me' && s !== 'redeem' && s !== 'redeem-used') throw new Error(`--scenarios: unknown "${s}"`);
  if (!/^postgres(ql)?:\/\//.test(values.postgres)) throw new Error('--postgres must be a postgres:// URL');
  return {
    postgres: values.postgres,
    port: int('port', values.port, 1024),
    load: parts.includes('load'),
    claims: parts.includes('claims'),
    rebalance: parts.includes('rebalance'),
    mixed: parts.includes('mixed'),
    mixedSeconds: int('mixed-seconds', values['mixed-seconds'], 1),
    mixedClients: int('mixed-clients', values['mixed-clients'], 1),
    mixedChats: int('mixed-chats', values['mixed-chats'], 0),
    duration: int('duration', values.duration, 1),
    warmup: int('warmup', values.warmup, 0),
    connections: int('connections', values.connections, 1),
    pairs: int('pairs', values.pairs, 1),
    scenarios: scenarios as Options['scenarios'],
    customers: int('customers', values.customers, 1),
    keysPerCustomer: int('keys-per-customer', values['keys-per-customer'], 1),
    claimWorkers: list(values['claim-workers']).map((w) => int('claim-workers', w, 1)),
    jobs: int('jobs', values.jobs, 1),
    claimCustomers: int('claim-customers', values['claim-customers'], 2),
    claimCount: int('claims', values.claims, 1),
  };
}

// ---- What the run made, undone in reverse order at the end (also on failure or Ctrl-C) ----

const cleanups: { what: string; fn: () => Promise<void> }[] = [];

async function cleanUp(): Promise<void> {
  while (cleanups.length > 0) {
    const { what, fn } = cleanups.pop()!;
    try {
      await fn();
    } catch (err) {
      process.stderr.write(
        `cleaning up ${what} failed: ${err instanceof Error ? err.message : String(err)}\n`,
      );
    }
  }
}

/** Runs `fn` with `undo` registered; undoes it as soon as `fn` is done. */
async function using<T>(what: string, undo: () => Promise<void>, fn: () => Promise<T>): Promise<T> {
  const entry = { what, fn: undo };
  cleanups.push(entry);
  try {
    return await fn();
  } finally {
    const i = cleanups.indexOf(entry);
    if (i >= 0) {
      cleanups.splice(i, 1);
      await undo().catch((err: unknown) =>
        process.stderr.write(
          `cleaning up ${what} failed: ${err instanceof Error ? err.message : String(err)}\n`,
        ),
      );
    }
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`${signal}: stopping the clusters and dropping the databases\n`);
    void cleanUp().finally(() => process.exit(130));
  });
}

// ---- Databases: a throwaway one on the local server, a Citus cluster ----

/** The shared citus folder, found as .ci/run finds it: beside the project, or /work/shared/citus. */
function citusDir(): string {
  for (const d of [resolve(repoRoot, '../shared/citus'), '/work/shared/citus']) {
    if (existsSync(join(d, 'install.sh')) && existsSync(join(d, 'cluster.sh'))) return d;
  }
  throw new Error(
    'no shared/citus folder with install.sh and cluster.sh beside the project (docs/running/citus.md)',
  );
}

/** A new database on the local server for `fn`, dropped after. */
async function withPlainDatabase<T>(o: Options, label: string, fn: (url: string) => Promise<T>): Promise<T> {
  const name = `rg_bench_citus_${label}_${process.pid}_${randomBytes(3).toString('hex')}`;
  const adminDb = await openPostgres(o.postgres, { max: 1 });
  try {
    await adminDb.query(`create database "${name}"`);
  } finally {
    await adminDb.close();
  }
  const url = new URL(o.postgres);
  url.pathname = `/${name}`;
  const drop = async () => {
    const db = await openPostgres(o.postgres, { max: 1 });
    try {
      await db.query(`drop database if exists "${name}" with (force)`);
    } finally {
      await db.close();
    }
  };
  return using(`database ${name}`, drop, () => fn(url.toString()));
}

/** A Citus coordinator with `workers` workers for `fn` (cluster.sh), stopped and removed after. */
async function withCluster<T>(o: Options, workers: number, fn: (url: string) => Promise<T>): Promise<T> {
  const dir = join(tmpdir(), `rg-bench-citus-${process.pid}-${workers}w`);
  const script = join(citusDir(), 'cluster.sh');
  const down = async () => {
    await run('bash', [script, 'down', dir]);
  };
  return using(`the Citus cluster in ${dir}`, down, async () => {
    const started = performance.now();
    const { stdout } = await run('bash', [script, 'up', dir, String(o.port), String(workers), 'bench']);
    const url = stdout.trim().split('\n').at(-1)!;
    process.stderr.write(
      `citus: a coordinator and ${workers} worker(s) on ports ${o.port}–${o.port + workers} in ` +
        `${((performance.now() - started) / 1000).toFixed(1)} s\n`,
    );
    return fn(url);
  });
}

// ---- Part 1: /v1/me and sync redeems, plain PostgreSQL against Citus ----

type Db = 'plain' | 'citus';
type Scenario = 'me' | 'redeem' | 'redeem-used';

interface LoadRow {
  scenario: Scenario;
  db: Db;
  pair: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  reasons: string;
  /** The gateway process's CPU per request (the databases' not included). */
  gatewayCpuMs: number;
  /** The whole machine's CPU, % of all cores. */
  machineCpu: number;
  /** The gateway's own count of statements per request (its /metrics). */
  statements: number;
  /** On Citus: two-phase commits recorded during the run, its warm-up included. */
  twoPhase: number | null;
}

interface Target {
  db: Db;
  gateway: Gateway;
  keys: string[];
  /** The Citus coordinator, its two-phase-commit recovery paused, for the count of records. */
  coordinator?: Database;
}

async function measure(o: Options, scenario: Scenario, t: Target, pair: number): Promise<LoadRow> {
  const reasons = new Map<string, number>();
  const onResponse = (status: number, body: string) => {
    if (status < 300) return;
    const reason = notOkReason(status, body);
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  };
  let turn = 0;
  const nextKey = () => t.keys[turn++ % t.keys.length]!;
  const requests = (
    scenario === 'me' ? meRequests(nextKey) : redeemRequests(nextKey, { used: scenario === 'redeem-used' })
  ).map((r) => ({
    ...r,
    onResponse,
  }));
  const base = { url: t.gateway.publicUrl, connections: o.connections, requests };
  const twoPhase0 = t.coordinator ? await twoPhaseRecords(t.coordinator) : null;
  if (o.warmup > 0) await autocannon({ ...base, duration: o.warmup });
  reasons.clear();
  const admin = { url: t.gateway.adminUrl, token: t.gateway.adminToken };
  const seam0 = await seamCounts(admin);
  const cpu0 = processCpuSeconds(t.gateway.child.pid);
  const machine0 = machineCpu();
  const r = await autocannon({ ...base, duration: o.duration });
  const cpu1 = processCpuSeconds(t.gateway.child.pid);
  const machine1 = machineCpu();
  const seam1 = await seamCounts(admin);
  const twoPhase =
    t.coordinator && twoPhase0 !== null ? (await twoPhaseRecords(t.coordinator)) - twoPhase0 : null;
  const total = Math.max(1, r.requests.total ?? 0);
  const row: LoadRow = {
    scenario,
    db: t.db,
    pair,
    reqPerSec: r.requests.mean,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    reasons: [...reasons].map(([why, n]) => `${why} ×${n}`).join('; '),
    gatewayCpuMs: (1000 * (cpu1 - cpu0)) / total,
    machineCpu: (100 * (machine1.busy - machine0.busy)) / (machine1.total - machine0.total),
    // Less the second scrape's own statement.
    statements: (seam1.statements - seam0.statements - 1) / total,
    twoPhase,
  };
  process.stderr.write(
    `  ${scenario} on ${t.db} (pair ${pair + 1}): ${row.reqPerSec.toFixed(0)} req/s, p50 ${row.p50} ms, ` +
      `p99 ${row.p99} ms${row.non2xx || row.errors ? `, non-2xx ${row.non2xx}, errors ${row.errors}` : ''}` +
      `${row.reasons ? ` (${row.reasons})` : ''}\n`,
  );
  return row;
}

/** A gateway on `url` with its fixtures, for `fn`; stopped after. */
async function withGateway<T>(o: Options, db: Db, url: string, fn: (t: Target) => Promise<T>): Promise<T> {
  const gateway = await startGateway({ databaseUrl: url });
  return using(
    `the gateway on ${db}`,
    async () => {
      await gateway.stop();
      gateway.remove();
    },
    async () => {
      const started = performance.now();
      const keys = await createFixtures({
        adminUrl: gateway.adminUrl,
        adminToken: gateway.adminToken,
        customers: o.customers,
        keysPerCustomer: o.keysPerCustomer,
      });
      process.stderr.write(
        `${db}: gateway healthy in ${gateway.startSeconds.toFixed(1)} s (migrations included); ` +
          `${keys.length} keys for ${o.customers} customers in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
      );
      return fn({ db, gateway, keys });
    },
  );
}

async function loadPart(o: Options): Promise<LoadRow[]> {
  return withPlainDatabase(o, 'load', (plainUrl) =>
    withCluster(o, 2, (citusUrl) =>
      withGateway(o, 'plain', plainUrl, (plain) =>
        withGateway(o, 'citus', citusUrl, async (citus) => {
          // Recovery paused on this throwaway cluster, so pg_dist_transaction counts every
          // two-phase commit of the load (the two-phase-commit test does the same).
          const coordinator = await openPostgres(citusUrl, { max: 1 });
          try {
            await coordinator.query('alter system set citus.recover_2pc_interval = -1');
            await coordinator.query('select pg_reload_conf()');
            const rows: LoadRow[] = [];
            for (const scenario of o.scenarios)
              for (let pair = 0; pair < o.pairs; pair++)
                rows.push(
                  await measure(o, scenario, plain, pair),
                  await measure(o, scenario, { ...citus, coordinator }, pair),
                );
            return rows;
          } finally {
            await coordinator.close();
          }
        }),
      ),
    ),
  );
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

function table(header: string[], lines: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [format(header), format(widths.map((w) => '-'.repeat(w))), ...lines.map(format)];
}

function loadReport(o: Options, rows: LoadRow[]): string[] {
  const out = [
    `Load: ${o.connections} connections, ${o.duration} s measured after ${o.warmup} s warm-up per run; ` +
      `${o.customers} customers × ${o.keysPerCustomer} test keys on each database; plain and Citus in turn`,
    'gateway CPU ms/req: the gateway process only; machine CPU: every process, % of all cores; ' +
      "statements/req: the gateway's own count, its background workers' included (a slow run has few requests to share them)",
    '',
    ...table(
      [
        'scenario',
        'database',
        'pair',
        'req/s',
        'p50 ms',
        'p99 ms',
        'non-2xx',
        'gateway CPU ms/req',
        'machine CPU',
        'statements/req',
        '2PC records',
      ],
      rows.map((r) => [
        r.scenario,
        r.db === 'plain' ? 'PostgreSQL' : 'Citus, 2 workers',
        String(r.pair + 1),
        r.reqPerSec.toFixed(0),
        String(r.p50),
        String(r.p99),
        r.errors ? `${r.non2xx} (+${r.errors} errors)` : String(r.non2xx),
        r.gatewayCpuMs.toFixed(2),
        `${r.machineCpu.toFixed(0)}%`,
        r.statements.toFixed(2),
        r.twoPhase === null ? '' : String(r.twoPhase),
      ]),
    ),
    '',
    'Citus / PostgreSQL, the median of the pairs (each pair measured moments apart):',
  ];
  for (const scenario of o.scenarios) {
    const of = (db: Db) => rows.filter((r) => r.scenario === scenario && r.db === db);
    const [plain, citus] = [of('plain'), of('citus')];
    const ratios = plain.map((p, i) => citus[i]!.reqPerSec / p.reqPerSec);
    const p50s = plain.map((p, i) => citus[i]!.p50 / Math.max(p.p50, 1));
    out.push(
      `  ${scenario}: req/s ${median(ratios).toFixed(2)} (pairs ${ratios.map((x) => x.toFixed(2)).join(', ')}); ` +
        `p50 latency ${median(p50s).toFixed(2)}×`,
    );
  }
  for (const r of rows.filter((x) => x.reasons))
    out.push(`non-2xx in ${r.scenario} on ${r.db} (pair ${r.pair + 1}): ${r.reasons}`);
  return out;
}

// ---- Part 2: a claim's cost with 1, 2 and 4 workers ----

const NOW = new Date('2026-11-22T12:00:00Z');

interface ClaimRow {
  database: string;
  workers: number | null;
  shards: number | null;
  medianMs: number;
  p90Ms: number;
  maxMs: number;
  statements: number;
  claimed: number;
  everyWorkerMs: number;
}

/**
 * Customers, then N queued async jobs spread over them (every 50th live, as bench/claims.ts
 * spreads its queue) written directly, and their work_queue rows as the SQL that makes a job adds
 * them (work_queue_add; src/core/work-queue.ts).
 */
async function fillQueue(o: Options, db: Database): Promise<void> {
  await db.query(
    `insert into customers (name, created_at) select 'bench ' || g, $1 from generate_series(1, $2) g`,
    [NOW, o.claimCustomers],
  );
  const ids = (await db.query<{ id: string }>('select id::text from customers order by id')).rows.map(
    (r) => r.id,
  );
  for (let from = 1; from <= o.jobs; from += 10_000) {
    await db.query(
      `insert into jobs (id, customer_id, mode, idempotency_key, is_async, status, source, player_id, total, hold_day,
                         rate_micros, hold_included, hold_wallet, created_at)
       select 'q' || g, ($4::bigint[])[1 + g % $5], case when g % 50 = 0 then 'live' else 'test' end,
              'k' || g, true, 'queued', 'codes', '5123456789', 1, $1::date, 1000, 1, 0,
              $1::timestamptz + g * interval '1 millisecond'
         from generate_series($2::int, $3::int) g`,
      [NOW, from, Math.min(o.jobs, from + 9_999), ids, ids.length],
    );
  }
  await db.query(
    `insert into work_queue (kind, customer_id, mode)
     select distinct 'job', customer_id, mode from jobs where status = 'queued'
     on conflict do nothing`,
  );
  await db.exec('analyze jobs');
}

async function timeClaims(o: Options, database: string, url: string): Promise<ClaimRow> {
  const db = await openPostgres(url, { max: 2, statementTimeoutMs: 0 });
  try {
    await migrateAndPlace(db);
    await fillQueue(o, db);
    const citus = (await hasCitus(db))
      ? await db.query<{ workers: number; shards: number }>(
          `select (select count(*)::int from pg_dist_node where noderole = 'primary' and groupid > 0) as workers,
                  (select count(*)::int from pg_dist_shard where logicalrelid = 'jobs'::regclass) as shards`,
        )
      : { rows: [] };
    const deps = { db, clock: { now: () => new Date() } } as unknown as RedeemDeps;
    // Warm-up: plans, caches, and the first claim's repairWorkQueue (a read of every worker, at
    // most every 30 s per process), which the timed claims then do not pay.
    for (let i = 0; i < 5; i++) await claimJob(deps);
    const ms: number[] = [];
    let claimed = 0;
    const statements0 = db.counters.statements;
    for (let i = 0; i < o.claimCount; i++) {
      const t0 = performance.now();
      if (await claimJob(deps)) claimed++;
      ms.push(performance.now() - t0);
    }
    const statements = (db.counters.statements - statements0) / o.claimCount;
    // For contrast: the read that asks every worker (repairWorkQueue's), what a claim that
    // looked for work on every shard would pay each time.
    const every: number[] = [];
    for (let i = 0; i < Math.min(o.claimCount, 20); i++) {
      const t0 = performance.now();
      await db.query(`select distinct customer_id, mode from jobs where status = 'queued'`);
      every.push(performance.now() - t0);
    }
    const sorted = [...ms].sort((a, b) => a - b);
    const row: ClaimRow = {
      database,
      workers: citus.rows[0]?.workers ?? null,
      shards: citus.rows[0]?.shards ?? null,
      medianMs: median(ms),
      p90Ms: sorted[Math.floor(0.9 * (sorted.length - 1))]!,
      maxMs: sorted.at(-1)!,
      statements,
      claimed,
      everyWorkerMs: median(every),
    };
    process.stderr.write(
      `  claims on ${database}: median ${row.medianMs.toFixed(2)} ms, p90 ${row.p90Ms.toFixed(2)} ms, ` +
        `${statements.toFixed(1)} statements a claim; a read of every worker ${row.everyWorkerMs.toFixed(2)} ms\n`,
    );
    return row;
  } finally {
    await db.close();
  }
}

async function claimsPart(o: Options): Promise<ClaimRow[]> {
  const rows: ClaimRow[] = [];
  rows.push(await withPlainDatabase(o, 'claims', (url) => timeClaims(o, 'PostgreSQL', url)));
  for (const workers of o.claimWorkers)
    rows.push(await withCluster(o, workers, (url) => timeClaims(o, `Citus, ${workers} worker(s)`, url)));
  return rows;
}

function claimsReport(o: Options, rows: ClaimRow[]): string[] {
  return [
    `Claims: ${o.jobs.toLocaleString('en-US')} queued async jobs over ${o.claimCustomers} customers ` +
      `(every 50th live); ${o.claimCount} claims timed one at a time after 5 unmeasured; each leaves its job running`,
    "every-worker read: `select distinct customer_id, mode from jobs where status = 'queued'` (repairWorkQueue's; " +
      'a claim does not pay it), median of up to 20',
    '',
    ...table(
      [
        'database',
        'workers',
        'shards of jobs',
        'ms/claim (median)',
        'p90 ms',
        'max ms',
        'statements/claim',
        'every-worker read ms',
      ],
      rows.map((r) => [
        r.database,
        r.workers === null ? '—' : String(r.workers),
        r.shards === null ? '—' : String(r.shards),
        r.medianMs.toFixed(2),
        r.p90Ms.toFixed(2),
        r.maxMs.toFixed(2),
        r.statements.toFixed(1),
        r.everyWorkerMs.toFixed(2),
      ]),
    ),
  ];
}

// ---- The run ----

// ---- Part 3: a worker added and the shards rebalanced while sync redeems go on ----

interface RebalanceRow {
  /** Shard placements per worker port, before and after. */
  before: Record<string, number>;
  after: Record<string, number>;
  seconds: number;
  requests: number;
  reqPerSec: number;
  non2xx: number;
  errors: number;
  reasons: string;
  /** The worst p99 of the load's 2-second runs, and the slowest answer (ms). */
  p99: number;
  max: number;
}

/** Shard placements per worker (port), customer tables and reference tables together. */
async function placements(db: Database): Promise<Record<string, number>> {
  const r = await db.query<{ port: number; n: number }>(
    'select nodeport as port, count(*)::int as n from citus_shards group by nodeport order by nodeport',
  );
  return Object.fromEntries(r.rows.map((x) => [String(x.port), x.n]));
}

/**
 * A coordinator with three workers, the third taking no shards at first (as if not there yet):
 * the gateway distributes over two and gets its fixtures; then, while sync redeems run, the third
 * takes shards (`shouldhaveshards`) and `citus_rebalance_start` moves shard groups onto it
 * (`force_logical`, online), waited for with `citus_rebalance_wait`. The load runs in 2-second
 * autocannon runs until the rebalance is over.
 */
async function rebalancePart(o: Options): Promise<RebalanceRow> {
  return withCluster(o, 3, async (url) => {
    const added = o.port + 3;
    // No statement deadline: citus_rebalance_wait() lasts as long as the rebalance.
    const sql = await openPostgres(url, { max: 2, statementTimeoutMs: 0 });
    return using(
      'the coordinator connection',
      () => sql.close(),
      async () => {
        await sql.query("select citus_set_node_property('127.0.0.1', $1::int, 'shouldhaveshards', false)", [
          added,
        ]);
        return withGateway(o, 'citus', url, async (t) => {
          const before = await placements(sql);
          let turn = 0;
          const nextKey = () => t.keys[turn++ % t.keys.length]!;
          const reasons = new Map<string, number>();
          const requests = redeemRequests(nextKey).map((r) => ({
            ...r,
            onResponse: (status: number, body: string) => {
              if (status < 300) return;
              const why = notOkReason(status, body);
              reasons.set(why, (reasons.get(why) ?? 0) + 1);
            },
          }));
          const base = { url: t.gateway.publicUrl, connections: o.connections, requests };
          if (o.warmup > 0) await autocannon({ ...base, duration: o.warmup });
          reasons.clear();
          const started = performance.now();
          let done = false;
          const rebalance = (async () => {
            try {
              await sql.query(
                "select citus_set_node_property('127.0.0.1', $1::int, 'shouldhaveshards', true)",
                [added],
              );
              await sql.query("select citus_rebalance_start(shard_transfer_mode => 'force_logical')");
              await sql.query('select citus_rebalance_wait()');
            } finally {
              done = true;
            }
          })();
          // Awaited below, after the load; a failure meanwhile must not end the process unhandled.
          rebalance.catch(() => undefined);
          const total = { requests: 0, non2xx: 0, errors: 0, p99: 0, max: 0 };
          while (!done) {
            const r = await autocannon({ ...base, duration: 2 });
            total.requests += r.requests.total ?? 0;
            total.non2xx += r.non2xx;
            total.errors += r.errors + r.timeouts;
            total.p99 = Math.max(total.p99, r.latency.p99);
            total.max = Math.max(total.max, r.latency.max);
          }
          await rebalance;
          const seconds = (performance.now() - started) / 1000;
          const after = await placements(sql);
          process.stderr.write(
            `  rebalance onto worker ${added}: ${seconds.toFixed(1)} s, ${total.requests} redeems meanwhile, ` +
              `non-2xx ${total.non2xx}, errors ${total.errors}\n`,
          );
          return {
            before,
            after,
            seconds,
            ...total,
            reqPerSec: total.requests / seconds,
            reasons: [...reasons].map(([why, n]) => `${why} ×${n}`).join('; '),
          };
        });
      },
    );
  });
}

function rebalanceReport(o: Options, r: RebalanceRow): string[] {
  const shown = (m: Record<string, number>) =>
    Object.entries(m)
      .map(([port, n]) => `${port}: ${n}`)
      .join(', ');
  return [
    `Rebalance: a coordinator and three workers, the third (${o.port + 3}) taking no shards until the`,
    `gateway, ${o.customers} customers × ${o.keysPerCustomer} test keys, and ${o.connections} connections of sync redeems were running;`,
    "then citus_rebalance_start(shard_transfer_mode => 'force_logical') and citus_rebalance_wait()",
    '',
    ...table(
      [
        'shards per worker before',
        'after',
        'seconds',
        'redeems meanwhile',
        'req/s',
        'worst p99 ms',
        'slowest ms',
        'non-2xx',
        'errors',
      ],
      [
        [
          shown(r.before),
          shown(r.after),
          r.seconds.toFixed(1),
          String(r.requests),
          r.reqPerSec.toFixed(0),
          String(r.p99),
          String(r.max),
          String(r.non2xx),
          String(r.errors),
        ],
      ],
    ),
    ...(r.reasons ? [`not 2xx: ${r.reasons}`] : []),
  ];
}

// ---- Part 4: the mixed load of 100 customers and its two-phase commits (citus-mixed.ts) ----

async function mixedPart(o: Options): Promise<MixedResult> {
  return withCluster(o, 2, async (url) => {
    const ca = createTestCa();
    const receiver = await startWebhookReceiver(ca);
    const sim = await startBotApiSim();
    return using(
      'the webhook receiver and the Bot API stand-in',
      async () => {
        await receiver.close();
        await sim.close();
      },
      async () => {
        const gateway = await startGateway({
          databaseUrl: url,
          settings: {
            NODE_EXTRA_CA_CERTS: ca.caFile,
            WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
            ...(o.mixedChats > 0 ? { BOT_TOKEN: sim.token, BOT_API_ROOT: sim.url } : {}),
          },
        });
        return using(
          'the gateway of the mixed load',
          async () => {
            await gateway.stop();
            gateway.remove();
          },
          async () => {
            const customers = await createFixtureCustomers({
              adminUrl: gateway.adminUrl,
              adminToken: gateway.adminToken,
              customers: o.customers,
              keysPerCustomer: 1,
            });
            const keys = customers.map((c) => c.keys[0]!);
            const coordinator = await openPostgres(url, { max: 1 });
            try {
              await coordinator.query('alter system set citus.recover_2pc_interval = -1');
              await coordinator.query('select pg_reload_conf()');
              return await runMixed({
                publicUrl: gateway.publicUrl,
                keys,
                receiver,
                coordinator,
                seconds: o.mixedSeconds,
                clients: o.mixedClients,
                ...(o.mixedChats > 0
                  ? {
                      chat: {
                        sim,
                        adminUrl: gateway.adminUrl,
                        adminToken: gateway.adminToken,
                        customerIds: customers.map((c) => c.customerId),
                        clients: o.mixedChats,
                      },
                    }
                  : {}),
              });
            } finally {
              await coordinator.close();
            }
          },
        );
      },
    );
  });
}

async function main(): Promise<void> {
  const o = parseOptions();
  if (!o) {
    process.stdout.write(HELP);
    return;
  }
  citusDir();
  const load0 = loadavg();
  const started = new Date();
  const loadRows = o.load ? await loadPart(o) : [];
  const claimRows = o.claims ? await claimsPart(o) : [];
  const rebalanced = o.rebalance ? await rebalancePart(o) : null;
  const mixed = o.mixed ? await mixedPart(o) : null;
  const load1 = loadavg();
  const fmt = (l: number[]) => l.map((n) => n.toFixed(2)).join(' ');
  const out = [
    '',
    `Redeem Gateway on Citus against one PostgreSQL server, ${started.toISOString()} to ${new Date().toISOString()}`,
    `node ${process.version}, ${availableParallelism()} CPUs; load average ${fmt(load0)} at start, ${fmt(load1)} at end`,
    'Every server on this one machine: a ratio, not a speed-up, is the figure (docs/running/citus.md#benchmark)',
    '',
    ...(o.load ? [...loadReport(o, loadRows), ''] : []),
    ...(o.claims ? [...claimsReport(o, claimRows), ''] : []),
    ...(rebalanced ? [...rebalanceReport(o, rebalanced), ''] : []),
    ...(mixed ? [...mixedReport(mixed), ''] : []),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}

try {
  await main();
} catch (err) {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
