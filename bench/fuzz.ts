// The long fuzz run (npm run bench:fuzz): a gateway process on PGlite or on a new PostgreSQL
// database, the Bot API stand-in for its webhook-mode bot, and client processes that each send a
// seeded stream of generated requests (test/helpers/fuzz/) and check every answer. Prints
// requests, rate and findings as it goes, and the totals at the end; exits 1 on any finding.
//
//   npm run bench:fuzz -- --duration 600 --processes 2 --concurrency 64 --database pglite
//   npm run bench:fuzz -- --requests 500000 --database postgres   (FUZZ_POSTGRES_URL or the local server)
//   npm run bench:fuzz -- --duration 120 --database both          (PGlite, then PostgreSQL; a table of both)
//   npm run bench:fuzz -- --total 1000000 --database both --processes 2   (the long run: 500,000 each)
//   DATABASE_URL=postgres://…/throwaway npm run bench:fuzz -- --database postgres   (that database, as is)
//
// PostgreSQL: with --postgres=URL or DATABASE_URL, that database (a throwaway one: the gateway
// migrates it and the run fills it); otherwise a new database on FUZZ_POSTGRES_URL's server
// (default the local one), dropped after the run. Each database gets its own gateway and world;
// --duration and --requests are per database, --total is shared evenly between them (and, like
// --requests, between the client processes).
//
// Two limits are raised for the run (--default-limits keeps both): the read budget
// (READ_RATE_LIMIT), so keys reach the routes instead of their 429 after 300 reads, and the admin
// lockout (ADMIN_LOCKOUT_AFTER), so the wrong admin tokens the run sends on purpose (a fifth of
// its admin requests, from 127.0.0.2) reach the door's 401 instead of a 429 after 10 a minute: with
// the default, about a third of all admin answers were that 429. The lockout's 429 stays checked by
// the short run in `npm test` (test/fuzz/fuzz.test.ts), which keeps the default. 429s are counted apart
// per listener. Not sent: GET /admin/v1/backup and
// POST /admin/v1/encryption/rotate (each copies or rewrites the whole database).
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startBotApiSim } from '../src/dev/bot-api-sim.ts';
import {
  adminRouteTable,
  describeFinding,
  emptyTotals,
  type FuzzTotals,
  type FuzzWorld,
  prepareWorld,
  runFuzz,
  templateOf,
} from '../test/helpers/fuzz/index.ts';
import { startGateway } from './gateway.ts';
import { residentMb } from './processes.ts';

const { values: opts } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    requests: { type: 'string' },
    total: { type: 'string' },
    processes: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    database: { type: 'string', default: 'pglite' },
    postgres: { type: 'string' },
    seed: { type: 'string', default: '1' },
    'default-limits': { type: 'boolean', default: false },
    client: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (opts.help) {
  console.log(
    'npm run bench:fuzz -- [--duration S] [--requests N per database | --total N in all] [--processes P] [--concurrency C] ' +
      '[--database pglite|postgres|both] [--postgres URL] [--seed N] [--default-limits]\n' +
      'postgres: --postgres=URL or DATABASE_URL (a throwaway database, used as is), else a new database on\n' +
      'FUZZ_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres), dropped after.',
  );
  process.exit(0);
}

interface ClientJob {
  world: FuzzWorld;
  seed: number;
  requests?: number;
  durationMs: number;
  concurrency: number;
}

if (opts.client) {
  // A client process: runs its stream, reports its totals every 2 s and at the end.
  process.once('message', async (job: ClientJob) => {
    const totals = await runFuzz({
      world: job.world,
      seed: job.seed,
      requests: job.requests,
      durationMs: job.durationMs,
      concurrency: job.concurrency,
      keepFindings: 200,
      onProgress: (t) => {
        if (process.connected) process.send!({ kind: 'progress', totals: t });
      },
    });
    process.send!({ kind: 'done', totals }, () => process.exit(0));
  });
} else {
  await main();
}

async function createDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const server = process.env.FUZZ_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `fuzz_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

type Database = 'pglite' | 'postgres';

interface RunSummary {
  database: Database;
  seconds: number;
  totals: FuzzTotals;
}

async function main() {
  const databases: Database[] =
    opts.database === 'both'
      ? ['pglite', 'postgres']
      : opts.database === 'postgres'
        ? ['postgres']
        : ['pglite'];
  if (!['pglite', 'postgres', 'both'].includes(opts.database))
    throw new Error('--database pglite|postgres|both');
  if (opts.total !== undefined && opts.requests !== undefined)
    throw new Error('--total or --requests, not both');
  for (const [name, v] of Object.entries({
    requests: opts.requests,
    total: opts.total,
    processes: opts.processes,
  }))
    if (v !== undefined && !/^[1-9]\d*$/.test(v))
      throw new Error(`--${name} must be a positive whole number`);
  // --total: the requests of the whole run, the same share on each database.
  if (opts.total !== undefined) opts.requests = String(Math.ceil(Number(opts.total) / databases.length));
  const runs: RunSummary[] = [];
  for (const database of databases) runs.push(await runOn(database));
  console.log(
    '\n| Database | Requests | Seconds | Rate | 5xx | Documented 503 | No request id | Schema mismatches | No answer | Kinds of finding | 429 admin | 429 public |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  const row = (name: string, t: FuzzTotals, seconds: number) =>
    console.log(
      `| ${name} | ${t.requests} | ${Math.round(seconds)} | ${Math.round(t.requests / seconds)}/s | ${t.fiveXx} | ` +
        `${t.documented503} | ${t.noRequestId} | ${t.schemaMismatches} | ${t.transportErrors} | ` +
        `${findingKinds(t)} | ${t.rateLimited.admin} | ${t.rateLimited.public} |`,
    );
  for (const r of runs) row(r.database, r.totals, r.seconds);
  if (runs.length > 1)
    row(
      'all',
      merge(runs.map((r) => r.totals)),
      runs.reduce((s, r) => s + r.seconds, 0),
    );
  if (runs.some((r) => r.totals.findings.length)) process.exitCode = 1;
}

/** The given PostgreSQL database (--postgres, DATABASE_URL), or a new one dropped after. */
async function postgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const given = opts.postgres ?? process.env.DATABASE_URL;
  if (given) return { url: given, drop: async () => {} };
  return createDatabase();
}

async function runOn(databaseKind: Database): Promise<RunSummary> {
  const processes = Number(opts.processes);
  const concurrency = Number(opts.concurrency);
  const durationMs = Number(opts.duration) * 1000;
  const requests = opts.requests === undefined ? undefined : Number(opts.requests);
  const database = databaseKind === 'postgres' ? await postgresDatabase() : null;
  const sim = await startBotApiSim();
  const botSecret = randomBytes(16).toString('hex');
  const gateway = await startGateway({
    databaseUrl: database?.url,
    settings: {
      BOT_TOKEN: sim.token,
      BOT_API_ROOT: sim.url,
      BOT_UPDATES: 'webhook',
      BOT_WEBHOOK_SECRET: botSecret,
      LOG_LEVEL: 'error',
      ...(opts['default-limits'] ? {} : { READ_RATE_LIMIT: '1000000', ADMIN_LOCKOUT_AFTER: '9999999' }),
    },
  }).catch(async (err: unknown) => {
    // A gateway that does not start leaves no database behind (two runs once did).
    await sim.close();
    await database?.drop();
    throw err;
  });
  const started = Date.now();
  let sum = emptyTotals();
  let stopping = false;
  // A gateway that goes away during the run (a crash, a signal from elsewhere) is said so, with its
  // last output, instead of showing only as requests without an answer.
  gateway.child.process.once('exit', (code, signal) => {
    if (stopping) return;
    console.log(`gateway exited during the run (${signal ?? `code ${code}`}); its last output:`);
    console.log(gateway.child.output().slice(-4000));
  });
  const memory = () => {
    try {
      return `${residentMb(gateway.child.pid).toFixed(0)} MB`;
    } catch {
      return 'gone';
    }
  };
  try {
    const world = await prepareWorld({
      publicUrl: gateway.publicUrl,
      adminUrl: gateway.adminUrl,
      rootToken: gateway.adminToken,
      adminRoutes: await adminRouteTable(),
      botSecret,
    });
    console.log(
      `fuzz: ${databaseKind}, ${processes} client processes × ${concurrency} in flight, ` +
        `${requests ? `${requests} requests` : `${durationMs / 1000} s`}, seed ${opts.seed}`,
    );
    const latest = new Map<number, FuzzTotals>();
    const seen = new Set<string>();
    const finals: FuzzTotals[] = [];
    const clients = Array.from({ length: processes }, (_, i) => {
      const child = fork(fileURLToPath(import.meta.url), ['--client'], {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      child.on('message', (m: { kind: string; totals: FuzzTotals }) => {
        if (m.kind === 'progress') latest.set(i, m.totals);
        else finals[i] = m.totals;
        // Each kind of finding once, when it is first seen.
        for (const f of m.totals.findings) {
          const kind = `${f.case.listener} ${f.case.method} ${templateOf(f.case.url)} ${f.status} ${f.problems.join('; ')}`;
          if (seen.has(kind)) continue;
          seen.add(kind);
          console.log(`finding: ${describeFinding(f)}`);
        }
      });
      child.send({
        world,
        seed: Number(opts.seed) * 1000 + i,
        requests: requests === undefined ? undefined : Math.ceil(requests / processes),
        durationMs: requests === undefined ? durationMs : 24 * 3600_000,
        concurrency,
      } satisfies ClientJob);
      return new Promise<void>((done) => child.once('exit', () => done()));
    });
    const ticker = setInterval(() => {
      const t = merge([...latest.values()]);
      const s = (Date.now() - started) / 1000;
      console.log(
        `${s.toFixed(0)} s: ${t.requests} requests (${(t.requests / s).toFixed(0)}/s), 5xx ${t.fiveXx}, ` +
          `documented 503 ${t.documented503}, no request id ${t.noRequestId}, schema ${t.schemaMismatches}, ` +
          `no answer ${t.transportErrors}, 429 admin ${t.rateLimited.admin} public ${t.rateLimited.public}, ` +
          `gateway ${memory()}`,
      );
    }, 10_000);
    await Promise.all(clients);
    clearInterval(ticker);
    sum = merge(finals.filter(Boolean));
  } finally {
    stopping = true;
    await gateway.stop();
    gateway.remove();
    await sim.close();
    await database?.drop();
  }
  const seconds = (Date.now() - started) / 1000;
  console.log(
    JSON.stringify(
      {
        database: databaseKind,
        processes,
        concurrency,
        seconds: Math.round(seconds),
        requests: sum.requests,
        per_second: Math.round(sum.requests / seconds),
        five_xx: sum.fiveXx,
        documented_503: sum.documented503,
        documented_503_by_route: sum.documented503ByRoute,
        no_request_id: sum.noRequestId,
        schema_mismatches: sum.schemaMismatches,
        no_answer: sum.transportErrors,
        rate_limited_429: sum.rateLimited,
        by_status: sum.byStatus,
      },
      null,
      1,
    ),
  );
  console.log('answers:', JSON.stringify(sum.byAnswer));
  for (const f of sum.findings) console.log(`FINDING ${describeFinding(f)}`);
  return { database: databaseKind, seconds, totals: sum };
}

/** How many different kinds of finding a run kept (each kind once: route, status and problems). */
function findingKinds(t: FuzzTotals): number {
  return new Set(
    t.findings.map(
      (f) =>
        `${f.case.listener} ${f.case.method} ${templateOf(f.case.url)} ${f.status} ${f.problems.join('; ')}`,
    ),
  ).size;
}

function merge(all: FuzzTotals[]): FuzzTotals {
  const out = emptyTotals();
  for (const t of all) {
    out.requests += t.requests;
    out.fiveXx += t.fiveXx;
    out.rateLimited.admin += t.rateLimited.admin;
    out.rateLimited.public += t.rateLimited.public;
    out.documented503 += t.documented503;
    for (const [k, v] of Object.entries(t.documented503ByRoute))
      out.documented503ByRoute[k] = (out.documented503ByRoute[k] ?? 0) + v;
    out.noRequestId += t.noRequestId;
    out.schemaMismatches += t.schemaMismatches;
    out.transportErrors += t.transportErrors;
    out.findings.push(...t.findings);
    for (const [k, v] of Object.entries(t.byStatus)) out.byStatus[k] = (out.byStatus[k] ?? 0) + v;
    for (const [k, v] of Object.entries(t.byAnswer)) out.byAnswer[k] = (out.byAnswer[k] ?? 0) + v;
  }
  return out;
}
