// Load benchmark (npm run bench): a plain Fastify hello-world as the baseline, then the gateway's
// GET /v1/health, GET /v1/me and a synchronous one-code POST /v1/redeem (sandbox activator, test
// keys), on the embedded PGlite database and, given a URL, on PostgreSQL, with the floors and
// ceilings of the goals (pgbench, the SQL alone, the least a /v1/me and a redeem can do,
// PGlite). Every server runs as a child process; autocannon runs here. Ratios are against the
// baseline of this same run, because the machines are noisy: compare ratios between runs, not raw
// numbers. See bench/README.md.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { refuseUsedDatabase } from './database.ts';
import { createFixtures } from './fixtures.ts';
import { gatewayEnv } from './gateway.ts';
import { backendCpuBetween, pgSnapshot } from './pg-stats.ts';
import { type PgbenchResult, pgbenchTps, sqlRedeemTps, withSqlRedeemDatabase } from './pgbench.ts';
import { pgliteSqlRedeem } from './pglite-sql-redeem.ts';
import {
  type Child,
  freePort,
  HOST,
  machineCpu,
  processCpuSeconds,
  residentMb,
  startChild,
  waitForHttp,
  waitForLine,
} from './processes.ts';
import { meRequests, notOkReason, redeemRequests, seamCounts } from './requests.ts';

const HELP = `npm run bench -- [options]

Options (defaults in brackets):
  --duration=S            seconds measured per scenario [10]
  --warmup=S              seconds of unmeasured load before each scenario [2]
  --connections=N         concurrent connections [16]
  --scenarios=LIST        gateway scenarios, comma-separated: health,me,redeem [health,me,redeem]
  --postgres=URL          also run on this PostgreSQL database [DATABASE_URL if set]
                          use a new, empty database: the run creates customers and keys in
                          it, and refuses a database that already has tables
  --skip-pglite           do not run on the embedded database
  --skip-pgbench          do not run pgbench (TPC-B and the SQL-only redeem; each makes and drops
                          its own database)
  --customers=N           bench customers per database [200]
  --keys-per-customer=N   test keys per customer [5]; redeems rotate over all keys so that no
                          key passes the burst limit (30 per key per sliding 10 s)
  --pairs=N               each goal measured against its ceiling N times in turn [3]: GET /v1/me
                          then its ceiling and Fastify + one prepared query (PostgreSQL); the
                          redeem, then its SQL alone (and TPC-B on
                          PostgreSQL). A goal's ratio is the median pair's; every pair is printed
  --cpu-prof=DIR          write a V8 CPU profile of each gateway process and of the /me
                          ceiling's into DIR (summarise one with:
                          npx tsx bench/profile-summary.ts DIR/<file>.cpuprofile)
  --help
`;

const GATEWAY_SCENARIOS = ['health', 'me', 'redeem'] as const;
type Scenario =
  | 'hello-world'
  | 'one-query'
  | 'me-floor'
  | 'redeem-floor'
  | (typeof GATEWAY_SCENARIOS)[number];

interface Options {
  duration: number;
  warmup: number;
  connections: number;
  scenarios: Scenario[];
  postgres: string | undefined;
  pglite: boolean;
  pgbench: boolean;
  customers: number;
  keysPerCustomer: number;
  pairs: number;
  cpuProfDir: string | undefined;
}

interface Row {
  scenario: string;
  database: string;
  reqPerSec: number;
  total: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  statuses: string;
  serverCpu: number;
  cpuMsPerRequest: number;
  machineCpu: number;
  reasons: string;
  /** PostgreSQL's backends of the database: % of one core, and transactions committed per request. */
  pgCpu?: number;
  commitsPerRequest?: number;
  /** Statements and round trips per request, from the gateway's own counts (its /metrics). */
  statementsPerRequest?: number;
  roundTripsPerRequest?: number;
}

/** The embedded (PGlite) gateway's resident memory: right after start, and after the redeem load. */
const embedded: { afterStartMb?: number; afterRedeemMb?: number; startSeconds?: number } = {};

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '2' },
      connections: { type: 'string', default: '16' },
      scenarios: { type: 'string', default: GATEWAY_SCENARIOS.join(',') },
      postgres: { type: 'string' },
      'skip-pglite': { type: 'boolean', default: false },
      'skip-pgbench': { type: 'boolean', default: false },
      customers: { type: 'string', default: '200' },
      'keys-per-customer': { type: 'string', default: '5' },
      pairs: { type: 'string', default: '3' },
      'cpu-prof': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return null;
  const int = (name: string, raw: string, min: number) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return n;
  };
  const scenarios = values.scenarios
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of scenarios) {
    if (!(GATEWAY_SCENARIOS as readonly string[]).includes(s)) throw new Error(`--scenarios: unknown "${s}"`);
  }
  const postgres = values.postgres ?? (process.env['DATABASE_URL'] || undefined);
  if (postgres !== undefined && !/^postgres(ql)?:\/\//.test(postgres)) {
    throw new Error('--postgres must be a postgres:// URL');
  }
  return {
    duration: int('duration', values.duration, 1),
    warmup: int('warmup', values.warmup, 0),
    connections: int('connections', values.connections, 1),
    scenarios: scenarios as Scenario[],
    postgres,
    pglite: !values['skip-pglite'],
    pgbench: !values['skip-pgbench'],
    customers: int('customers', values.customers, 1),
    keysPerCustomer: int('keys-per-customer', values['keys-per-customer'], 1),
    pairs: int('pairs', values.pairs, 1),
    cpuProfDir: values['cpu-prof'] ? resolve(values['cpu-prof']) : undefined,
  };
}

/** Runs one scenario: warm-up (discarded), then the measured run, with the server's CPU use. */
async function measure(
  o: Options,
  scenario: Scenario,
  database: string,
  server: Child,
  target: autocannon.Options,
  pgUrl?: string,
  admin?: { url: string; token: string },
): Promise<Row> {
  // Why requests were not 2xx: "status error_code" (or the code's status for a 422 redeem result).
  const reasons = new Map<string, number>();
  const onResponse = (status: number, body: string) => {
    if (status < 300) return;
    const reason = notOkReason(status, body);
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  };
  const requests = target.requests?.map((r) => ({ ...r, onResponse }));
  const base = { connections: o.connections, ...target, ...(requests ? { requests } : {}) };
  if (o.warmup > 0) await autocannon({ ...base, duration: o.warmup });
  const pg0 = pgUrl ? await pgSnapshot(pgUrl) : undefined;
  const seam0 = admin ? await seamCounts(admin) : undefined;
  const cpu0 = processCpuSeconds(server.pid);
  const machine0 = machineCpu();
  const t0 = process.hrtime.bigint();
  reasons.clear();
  const r = await autocannon({ ...base, duration: o.duration });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu1 = processCpuSeconds(server.pid);
  const machine1 = machineCpu();
  const pg1 = pgUrl && pg0 ? await pgSnapshot(pgUrl, pg0.pids) : undefined;
  const seam1 = admin ? await seamCounts(admin) : undefined;
  const statuses = Object.entries(r.statusCodeStats)
    .filter(([status]) => !status.startsWith('2'))
    .map(([status, s]) => `${status}×${s.count}`)
    .join(' ');
  const row: Row = {
    scenario,
    database,
    reqPerSec: r.requests.mean,
    total: r.requests.total ?? 0,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    statuses,
    serverCpu: (100 * (cpu1 - cpu0)) / seconds,
    cpuMsPerRequest: (1000 * (cpu1 - cpu0)) / Math.max(1, r.requests.total ?? 0),
    machineCpu: (100 * (machine1.busy - machine0.busy)) / (machine1.total - machine0.total),
    reasons: [...reasons].map(([why, n]) => `${why} ×${n}`).join('; '),
    ...(seam0 && seam1
      ? {
          // The gateway's own count (its /metrics), less the second scrape's one query.
          statementsPerRequest:
            (seam1.statements - seam0.statements - 1) / Math.max(1, r.requests.total ?? 0),
          roundTripsPerRequest:
            (seam1.roundTrips - seam0.roundTrips - 1) / Math.max(1, r.requests.total ?? 0),
        }
      : {}),
    ...(pg0 && pg1
      ? {
          pgCpu: (100 * backendCpuBetween(pg0, pg1)) / seconds,
          // Less the two snapshots' own (approximate: statistics reach pg_stat_database within a second).
          commitsPerRequest: (pg1.commits - pg0.commits) / Math.max(1, r.requests.total ?? 0),
        }
      : {}),
  };
  process.stderr.write(
    `  ${scenario} on ${database}: ${row.reqPerSec.toFixed(0)} req/s, p99 ${row.p99} ms` +
      `${row.non2xx || row.errors ? `, errors ${row.errors}, non-2xx ${row.non2xx} ${statuses}` : ''}` +
      `${row.reasons ? ` (${row.reasons})` : ''}\n`,
  );
  if (Object.keys(r.statusCodeStats).some((s) => s.startsWith('5'))) {
    process.stderr.write(`  server output (tail):\n${server.output().slice(-3000)}\n`);
  }
  return row;
}

/**
 * Runs a bench server (bench/*-server.ts) as a child under tsx, hands its process and base URL to
 * `body` once it listens, and stops it afterwards.
 */
async function withBenchServer<T>(
  script: string,
  env: NodeJS.ProcessEnv,
  body: (child: Child, url: string) => Promise<T>,
): Promise<T> {
  const child = startChild(['--import', 'tsx', join(repoRoot, 'bench', script)], env, repoRoot);
  try {
    const [, port] = await waitForLine(child, /listening (\d+)/);
    return await body(child, `http://${HOST}:${port}`);
  } finally {
    await child.stop();
  }
}

function runBaseline(o: Options, label: string): Promise<Row> {
  return withBenchServer('hello-server.ts', process.env, (child, url) =>
    measure(o, 'hello-world', label, child, { url: `${url}/` }),
  );
}

/** The label of the one-query runs measured in turn with each /me pair (PostgreSQL). */
const ONE_QUERY_IN_TURN = 'postgres (prepared, in turn)';

/**
 * Fastify + one prepared query (bench/query-server.ts) on the gateway's database, started once
 * and measured after each /me pair, so `me` / one-query is a median of pairs measured moments
 * apart like `me` / its ceiling: one run at the start measured this machine's drift as much as
 * the gateway (one-query moved by ±25 % between runs).
 */
async function startOneQueryInTurn(o: Options, databaseUrl: string) {
  const env = { ...process.env, QUERY_DATABASE_URL: databaseUrl };
  const child = startChild(['--import', 'tsx', join(repoRoot, 'bench', 'query-server.ts')], env, repoRoot);
  try {
    const [, port] = await waitForLine(child, /listening (\d+)/);
    const target = { url: `http://${HOST}:${port}/` };
    return {
      measure: () => measure(o, 'one-query', ONE_QUERY_IN_TURN, child, target, databaseUrl),
      stop: () => child.stop(),
    };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/** Fastify + one query per request (bench/query-server.ts): on PGlite, or prepared on PostgreSQL. */
function runOneQuery(o: Options, databaseUrl?: string): Promise<Row> {
  const env = { ...process.env, ...(databaseUrl ? { QUERY_DATABASE_URL: databaseUrl } : {}) };
  const database = databaseUrl ? 'postgres (prepared)' : 'pglite';
  return withBenchServer('query-server.ts', env, (child, url) =>
    measure(o, 'one-query', database, child, { url: `${url}/` }, databaseUrl),
  );
}

/**
 * The least an HTTP front can do for a sync redeem (bench/redeem-floor-server.ts): the SQL alone's
 * two statements behind Fastify and a `pg` pool, on a throwaway database of its own made like the
 * SQL alone's, under the same load as the gateway's redeem.
 */
function measureRedeemFloor(o: Options, baseUrl: string): Promise<Row> {
  // The floor checks no key: any well-formed one will do.
  const key = `rk_test_${'0'.repeat(32)}`;
  return withSqlRedeemDatabase(baseUrl, (target) =>
    withBenchServer('redeem-floor-server.ts', { ...process.env, QUERY_DATABASE_URL: target }, (child, url) =>
      measure(o, 'redeem-floor', 'postgres', child, { url, requests: redeemRequests(() => key) }, target),
    ),
  );
}

/**
 * The least a GET /v1/me can do (bench/me-floor-server.ts), on the gateway's database and keys:
 * started once, then measured as often as the caller asks.
 */
async function startMeFloor(o: Options, databaseUrl: string, keys: string[], gatewayUrl: string) {
  const env = { ...process.env, QUERY_DATABASE_URL: databaseUrl };
  const profile = o.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${o.cpuProfDir}`] : [];
  const script = join(repoRoot, 'bench/me-floor-server.ts');
  const child = startChild([...profile, '--import', 'tsx', script], env, repoRoot);
  try {
    const [, port] = await waitForLine(child, /listening (\d+)/);
    await checkSameAnswer(`${gatewayUrl}/v1/me`, `http://${HOST}:${port}/v1/me`, keys[0]!);
    let turn = 0;
    const target = { url: `http://${HOST}:${port}`, requests: meRequests(() => keys[turn++ % keys.length]!) };
    return {
      measure: () => measure(o, 'me-floor', 'postgres', child, target, databaseUrl),
      stop: () => child.stop(),
    };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/**
 * The ceiling must do the gateway's work, not less: the same status, body (but its request id)
 * and service headers for the same key, or the bench stops.
 */
async function checkSameAnswer(gatewayUrl: string, ceilingUrl: string, key: string): Promise<void> {
  const answer = async (url: string) => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    const { request_id: _id, ...body } = (await res.json()) as Record<string, unknown>;
    const headers = [...res.headers].filter(([name]) => /^(svc-|cache-control$|content-type$)/.test(name));
    return JSON.stringify({ status: res.status, body, headers: headers.sort() });
  };
  const [gateway, ceiling] = [await answer(gatewayUrl), await answer(ceilingUrl)];
  if (gateway !== ceiling) {
    throw new Error(`bench/me-floor-server.ts answers otherwise than the gateway:\n${ceiling}\n${gateway}`);
  }
}

/**
 * The gateway's scenarios on one database. `afterRedeem`: the redeem's ceilings, measured right
 * after each of `--pairs` redeem runs, so each pair shares the machine's moment.
 */
async function runGateway(
  o: Options,
  database: 'pglite' | 'postgres',
  databaseUrl?: string,
  afterRedeem?: () => Promise<void>,
): Promise<Row[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'redeem-bench-'));
  const port = await freePort();
  const adminPort = await freePort();
  const adminToken = `adm_bench_${randomBytes(16).toString('hex')}`;
  const settings: Record<string, string> = {
    HOST,
    PORT: String(port),
    ADMIN_HOST: HOST,
    ADMIN_PORT: String(adminPort),
    ADMIN_TOKEN: adminToken,
    DATA_DIR: dataDir,
    CODE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
  };
  if (databaseUrl) settings['DATABASE_URL'] = databaseUrl;
  const publicUrl = `http://${HOST}:${port}`;
  const started = Date.now();
  const profile = o.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${o.cpuProfDir}`] : [];
  const server = startChild(
    [...profile, join(repoRoot, 'bin/redeem-gateway.js'), 'serve'],
    gatewayEnv(settings),
    repoRoot,
  );
  try {
    await waitForHttp(server, `${publicUrl}/v1/health`);
    const startSeconds = (Date.now() - started) / 1000;
    if (!databaseUrl) {
      embedded.afterStartMb = residentMb(server.pid);
      embedded.startSeconds = startSeconds;
    }
    const fixturesStarted = Date.now();
    const keys = await createFixtures({
      adminUrl: `http://${HOST}:${adminPort}`,
      adminToken,
      customers: o.customers,
      keysPerCustomer: o.keysPerCustomer,
    });
    process.stderr.write(
      `${database}: server ready in ${startSeconds.toFixed(1)} s; ${keys.length} keys for ` +
        `${o.customers} customers in ${((Date.now() - fixturesStarted) / 1000).toFixed(1)} s\n`,
    );

    let turn = 0;
    const nextKey = () => keys[turn++ % keys.length]!;

    const admin = { url: `http://${HOST}:${adminPort}`, token: adminToken };
    const rows: Row[] = [];
    for (const scenario of o.scenarios) {
      if (scenario === 'health') {
        rows.push(
          await measure(o, scenario, database, server, { url: `${publicUrl}/v1/health` }, databaseUrl, admin),
        );
      } else if (scenario === 'me') {
        const me = () =>
          measure(
            o,
            scenario,
            database,
            server,
            { url: publicUrl, requests: meRequests(nextKey) },
            databaseUrl,
            admin,
          );
        if (!databaseUrl) {
          rows.push(await me());
          continue;
        }
        // The ceiling of the /me goal: the same answer with nothing around it, on the same keys,
        // measured in turn with the gateway: this machine's speed drifts by 10-15 % within
        // minutes, so one run of each measured the drift as much as the gateway.
        const ceiling = await startMeFloor(o, databaseUrl, keys, publicUrl);
        const oneQuery = await startOneQueryInTurn(o, databaseUrl).catch(async (err) => {
          await ceiling.stop();
          throw err;
        });
        try {
          for (let pair = 0; pair < o.pairs; pair++)
            rows.push(await me(), await ceiling.measure(), await oneQuery.measure());
        } finally {
          await ceiling.stop();
          await oneQuery.stop();
        }
      } else if (scenario === 'redeem') {
        const redeem = () =>
          measure(
            o,
            scenario,
            database,
            server,
            { url: publicUrl, requests: redeemRequests(nextKey) },
            databaseUrl,
            admin,
          );
        for (let pair = 0; pair < (afterRedeem ? o.pairs : 1); pair++) {
          rows.push(await redeem());
          // The embedded goal's RSS is after one redeem run, the first.
          if (!databaseUrl && pair === 0) embedded.afterRedeemMb = residentMb(server.pid);
          await afterRedeem?.();
        }
      }
    }
    return rows;
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function printTable(
  o: Options,
  rows: Row[],
  baselines: Row[],
  meta: { loadStart: number[]; loadEnd: number[] } & Ceilings,
) {
  const baseline = baselines.reduce((a, r) => a + r.reqPerSec, 0) / baselines.length;
  const header = [
    'scenario',
    'database',
    'req/s (mean)',
    'p50 ms',
    'p99 ms',
    'errors',
    'non-2xx',
    'vs baseline',
    'server CPU',
    'CPU ms/req',
    'machine CPU',
    'PG CPU',
    'commits/req',
    'statements/req',
    'round trips/req',
  ];
  const lines = [...baselines, ...rows].map((r) => [
    r.scenario,
    r.database,
    r.reqPerSec.toFixed(0),
    String(r.p50),
    String(r.p99),
    String(r.errors),
    r.statuses ? `${r.non2xx} (${r.statuses})` : String(r.non2xx),
    r.scenario === 'hello-world' ? (r.reqPerSec / baseline).toFixed(2) : (r.reqPerSec / baseline).toFixed(3),
    Number.isNaN(r.serverCpu) ? '?' : `${r.serverCpu.toFixed(0)}%`,
    Number.isNaN(r.cpuMsPerRequest) ? '?' : r.cpuMsPerRequest.toFixed(3),
    Number.isNaN(r.machineCpu) ? '?' : `${r.machineCpu.toFixed(0)}%`,
    r.pgCpu === undefined || Number.isNaN(r.pgCpu) ? '' : `${r.pgCpu.toFixed(0)}%`,
    r.commitsPerRequest === undefined ? '' : r.commitsPerRequest.toFixed(2),
    r.statementsPerRequest === undefined ? '' : r.statementsPerRequest.toFixed(2),
    r.roundTripsPerRequest === undefined ? '' : r.roundTripsPerRequest.toFixed(2),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const out = [
    '',
    `Redeem Gateway load benchmark, ${new Date().toISOString()}`,
    `node ${process.version}, ${availableParallelism()} CPUs, ${(totalmem() / 2 ** 30).toFixed(1)} GiB; ` +
      `load average ${meta.loadStart.map((n) => n.toFixed(2)).join(' ')} at start, ` +
      `${meta.loadEnd.map((n) => n.toFixed(2)).join(' ')} at end`,
    `${o.connections} connections, ${o.duration} s measured after ${o.warmup} s warm-up per scenario; ` +
      `baseline = mean of the hello-world runs (${baseline.toFixed(0)} req/s)`,
    'server CPU: the server process, % of one core; CPU ms/req: its CPU time per completed request ' +
      "(PostgreSQL's own processes not included); machine CPU: all processes, % of all cores; " +
      "PG CPU: the database's backends, % of one core; commits/req: pg_stat_database's xact_commit per request",
    '',
    format(header),
    format(widths.map((w) => '-'.repeat(w))),
    ...lines.map(format),
    '',
    ...goalLines(rows, meta),
    '',
    ...[...baselines, ...rows]
      .filter((r) => r.reasons)
      .map((r) => `non-2xx in ${r.scenario} on ${r.database}: ${r.reasons}`),
    '',
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}

/** One pair of pgbench runs, right after one redeem run: the redeem's SQL alone, then TPC-B. */
interface Pgbench {
  tpcb: PgbenchResult;
  sqlRedeem: PgbenchResult;
  /** The redeem's least HTTP front (bench/redeem-floor-server.ts), measured just before. */
  floor: Row;
}

/** A measurement and its ceiling, measured in turn. */
interface Pair {
  value: number;
  ceiling: number;
}

/** The index of the pair whose ratio is the median (the lower middle one of an even count). */
function medianPair(pairs: Pair[]): number {
  const order = pairs.map((p, i) => ({ i, ratio: p.value / p.ceiling })).sort((a, b) => a.ratio - b.ratio);
  return order[Math.floor((order.length - 1) / 2)]!.i;
}

/** A goal's line: the median pair's ratio, and every pair when there are several. */
function pairedRatio(label: string, pairs: Pair[], goal: number): string {
  if (pairs.length === 0) return `${label}: not measured`;
  const ratio = (p: Pair) => (p.value / p.ceiling).toFixed(2);
  const values = (p: Pair) => `${p.value.toFixed(0)} / ${p.ceiling.toFixed(0)}`;
  const median = pairs[medianPair(pairs)]!;
  const detail =
    pairs.length === 1
      ? values(median)
      : `median of ${pairs.length} pairs measured in turn: ${pairs.map((p) => `${ratio(p)} (${values(p)})`).join(', ')}`;
  return `${label}: ${ratio(median)} (goal >= ${goal}; ${detail})`;
}

/** The ratios of the goals, each against its ceiling measured in this same run. */
function goalLines(rows: Row[], ceilings: Ceilings): string[] {
  const all = (scenario: string, database: string) =>
    rows.filter((r) => r.scenario === scenario && r.database === database);
  const find = (scenario: string, database: string) => all(scenario, database)[0]?.reqPerSec;
  const single = (value: number | undefined, ceiling: number | undefined): Pair[] =>
    value === undefined || ceiling === undefined ? [] : [{ value, ceiling }];
  const { pgbench, pgliteSql } = ceilings;
  const redeems = all('redeem', 'postgres').slice(0, pgbench.length);
  const redeemPairs = redeems.map((r, i) => ({ value: r.reqPerSec, ceiling: pgbench[i]!.sqlRedeem.tps }));
  const sqlPairs = pgbench.map((p) => ({ value: p.sqlRedeem.tps, ceiling: p.tpcb.tps }));
  const sqlMedian = pgbench[sqlPairs.length ? medianPair(sqlPairs) : 0];
  const redeemMedian = redeemPairs.length ? medianPair(redeemPairs) : -1;
  const pgliteRedeems = all('redeem', 'pglite').slice(0, pgliteSql.length);
  const pglitePairs = pgliteRedeems.map((r, i) => ({ value: r.reqPerSec, ceiling: pgliteSql[i]!.redeem }));
  const pgliteMedian = pglitePairs.length ? medianPair(pglitePairs) : -1;
  const meOf = (scenario: string) => all(scenario, 'postgres').map((r) => r.reqPerSec);
  const [me, meCeiling] = [meOf('me'), meOf('me-floor')];
  const oneQueryInTurn = all('one-query', ONE_QUERY_IN_TURN).map((r) => r.reqPerSec);
  const mb = (n: number | undefined) => (n === undefined ? '?' : `${n.toFixed(0)} MB`);
  return [
    'Goals, each against a ceiling measured in this run:',
    pairedRatio('  sync redeem on PostgreSQL / its SQL alone under pgbench (tps)', redeemPairs, 0.8),
    ...redeemCpuLines(redeems[redeemMedian], pgbench[redeemMedian]),
    ...floorLines(pgbench),
    pairedRatio("  the redeem's SQL alone / pgbench TPC-B (tps)", sqlPairs, 0.5),
    ...(sqlMedian
      ? [
          `    machine CPU ms per transaction: ${sqlMedian.sqlRedeem.cpuMsPerTx.toFixed(2)} (SQL alone) / ` +
            `${sqlMedian.tpcb.cpuMsPerTx.toFixed(2)} (TPC-B)`,
          `    write-ahead log bytes per transaction: ${sqlMedian.sqlRedeem.walBytesPerTx.toFixed(0)} (SQL alone) / ` +
            `${sqlMedian.tpcb.walBytesPerTx.toFixed(0)} (TPC-B)`,
        ]
      : []),
    pairedRatio(
      '  GET /v1/me on PostgreSQL / its ceiling (bench/me-floor-server.ts)',
      me.slice(0, meCeiling.length).map((value, i) => ({ value, ceiling: meCeiling[i]! })),
      0.9,
    ),
    pairedRatio(
      '  sync redeem on PGlite / its SQL alone on PGlite (bench/pglite-sql-redeem.ts, sequential)',
      pglitePairs,
      0.8,
    ),
    ...pgliteCpuLines(pgliteRedeems[pgliteMedian], pgliteSql[pgliteMedian]),
    `  embedded serving process RSS (goal < 400 MB): ${mb(embedded.afterStartMb)} after start ` +
      `(healthy in ${embedded.startSeconds?.toFixed(1) ?? '?'} s, new data dir), ` +
      `${mb(embedded.afterRedeemMb)} after the redeem load`,
    'Floors, for comparison across runs:',
    pairedRatio(
      '  GET /v1/me on PostgreSQL / Fastify + one prepared pg query (goal: >= 0.45)',
      oneQueryInTurn.length > 0
        ? me.slice(0, oneQueryInTurn.length).map((value, i) => ({ value, ceiling: oneQueryInTurn[i]! }))
        : single(find('me', 'postgres'), find('one-query', 'postgres (prepared)')),
      0.6,
    ),
    pairedRatio(
      '  sync redeem on PostgreSQL / pgbench TPC-B',
      redeems.map((r, i) => ({ value: r.reqPerSec, ceiling: pgbench[i]!.tpcb.tps })),
      0.5,
    ),
    pairedRatio(
      '  sync redeem on PGlite / Fastify + one PGlite query',
      single(find('redeem', 'pglite'), find('one-query', 'pglite')),
      0.3,
    ),
    ...pgliteSql.map(
      (p) =>
        `    PGlite sequential: one query ${p.one.toFixed(0)}/s, the redeem's SQL alone ${p.redeem.toFixed(0)}/s`,
    ),
  ];
}

/**
 * Where the machine's CPU goes per redeem through the gateway, against the SQL alone's. Both runs
 * keep every core busy on a small machine, so their tps ratio is about the inverse ratio of their
 * machine CPU per redeem: the gateway's redeem ratio can only pass its goal when the gateway
 * process and the load generator together cost less than (1 / goal - 1) of PostgreSQL's share.
 */
function redeemCpuLines(row: Row | undefined, pgbench: Pgbench | undefined): string[] {
  if (!row || !pgbench || row.pgCpu === undefined || !(row.reqPerSec > 0)) return [];
  const machine = machineMsPerRequest(row);
  const pg = (10 * row.pgCpu) / row.reqPerSec;
  const gateway = row.cpuMsPerRequest;
  const sql = pgbench.sqlRedeem.cpuMsPerTx;
  return [
    `    machine CPU ms per redeem: ${machine.toFixed(2)} through the gateway (PostgreSQL ${pg.toFixed(2)}, ` +
      `the gateway process ${gateway.toFixed(2)}, the rest ${(machine - pg - gateway).toFixed(2)}: the load ` +
      `generator and the machine) / ${sql.toFixed(2)} for the SQL alone under pgbench`,
    `    so on this machine the ratio can reach about ${(sql / machine).toFixed(2)} (${sql.toFixed(2)} / ` +
      `${machine.toFixed(2)}); 0.8 needs the gateway's whole redeem at <= ${(sql / 0.8).toFixed(2)} ms of machine CPU`,
  ];
}

/** The whole machine's CPU milliseconds per request of a run (its busy % of all cores). */
function machineMsPerRequest(row: Row): number {
  return (10 * row.machineCpu * availableParallelism()) / row.reqPerSec;
}

/**
 * The redeem's least HTTP front against the same SQL alone: the most any gateway in Node could
 * reach on this machine, and what the gateway's own work would have to fit in for the goal.
 */
function floorLines(pgbench: Pgbench[]): string[] {
  if (pgbench.length === 0) return [];
  const pairs = pgbench.map((p) => ({ value: p.floor.reqPerSec, ceiling: p.sqlRedeem.tps }));
  const median = pgbench[medianPair(pairs)]!;
  const { floor, sqlRedeem } = median;
  const machine = machineMsPerRequest(floor);
  const room = sqlRedeem.cpuMsPerTx / 0.8 - machine;
  return [
    pairedRatio(
      '    its least HTTP front (bench/redeem-floor-server.ts: the same two statements, nothing else) / the SQL alone',
      pairs,
      0.8,
    ),
    `      machine CPU ms per redeem: ${machine.toFixed(2)} through the least front (its process ` +
      `${floor.cpuMsPerRequest.toFixed(2)}); so a gateway meets 0.8 here only if all its own work (keys, ` +
      `validation, idempotency, crypto, answers, logs, metrics) costs at most ${room.toFixed(2)} ms of ` +
      `machine CPU per redeem more than the least front's`,
  ];
}

/**
 * The embedded gateway runs its database in its own process: its CPU per redeem against the SQL
 * alone's time per redeem (sequential, one core busy), the most the ratio can reach.
 */
function pgliteCpuLines(row: Row | undefined, pgliteSql: { redeem: number } | undefined): string[] {
  if (!row || !pgliteSql || !(row.cpuMsPerRequest > 0)) return [];
  const sql = 1000 / pgliteSql.redeem;
  return [
    `    the embedded process's CPU ms per redeem: ${row.cpuMsPerRequest.toFixed(2)}, of which its SQL alone ` +
      `would take ${sql.toFixed(2)}; the rest (${(row.cpuMsPerRequest - sql).toFixed(2)}) is HTTP, crypto, ` +
      `the protocol, the hop between the process's two threads and answers (PGlite's thread runs the SQL, ` +
      `the serving thread the rest, on both cores)`,
  ];
}

/**
 * The redeem's least HTTP front, its SQL alone under pgbench, then TPC-B, each on a throwaway
 * database of its own.
 */
async function pgbenchPair(o: Options, url: string): Promise<Pgbench> {
  const floor = await measureRedeemFloor(o, url);
  const sqlRedeem = await sqlRedeemTps(url, o.connections, o.duration);
  process.stderr.write(
    `  pgbench, a sync redeem's SQL alone, ${o.connections} clients: ${sqlRedeem.tps.toFixed(0)} tps\n`,
  );
  const tpcb = await pgbenchTps(url, o.connections, o.duration);
  process.stderr.write(
    `  pgbench TPC-B, scale ${o.connections}, ${o.connections} clients: ${tpcb.tps.toFixed(0)} tps\n`,
  );
  return { tpcb, sqlRedeem, floor };
}

/** The ceilings measured outside the gateway in this run. */
interface Ceilings {
  /** The pairs measured in turn (--pairs), in order; empty when pgbench did not run. */
  pgbench: Pgbench[];
  /** PGlite's: the pairs measured in turn, in order. */
  pgliteSql: { one: number; redeem: number }[];
}

async function main() {
  const o = parseOptions(process.argv.slice(2));
  if (!o) {
    process.stdout.write(HELP);
    return;
  }
  if (o.postgres) await refuseUsedDatabase(o.postgres);
  const loadStart = loadavg();
  const baselines = [await runBaseline(o, 'none (first)')];
  const rows: Row[] = [];
  const pgliteSql: Ceilings['pgliteSql'] = [];
  if (o.pglite) {
    // Right after each redeem run, as on PostgreSQL: the embedded redeem's SQL alone.
    const ceiling = async () => {
      const measured = await pgliteSqlRedeem(2000);
      process.stderr.write(
        `  PGlite, a sync redeem's SQL alone, sequential: ${measured.redeem.toFixed(0)}/s\n`,
      );
      pgliteSql.push(measured);
    };
    rows.push(await runOneQuery(o), ...(await runGateway(o, 'pglite', undefined, ceiling)));
  }
  const pgbench: Pgbench[] = [];
  if (o.postgres) {
    const url = o.postgres;
    const ceilings = async () => {
      pgbench.push(await pgbenchPair(o, url));
    };
    // With the redeem scenario, each pair runs right after a redeem run (runGateway).
    const paired = o.pgbench && o.scenarios.includes('redeem');
    rows.push(
      await runOneQuery(o, url),
      ...(await runGateway(o, 'postgres', url, paired ? ceilings : undefined)),
    );
    if (o.pgbench && !paired) for (let pair = 0; pair < o.pairs; pair++) await ceilings();
    rows.push(...pgbench.map((p) => p.floor));
  } else process.stderr.write('postgres: skipped (set DATABASE_URL or --postgres=URL)\n');
  // A second baseline at the end: how far the two differ shows how noisy the machine was.
  baselines.push(await runBaseline(o, 'none (last)'));
  printTable(o, rows, baselines, { loadStart, loadEnd: loadavg(), pgbench, pgliteSql });
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
