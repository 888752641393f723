// The long fuzz run (npm run bench:fuzz): a gateway process on PGlite or on a new PostgreSQL
// database, the Bot API stand-in for its webhook-mode bot, and client processes that each send a
// seeded stream of generated requests (test/helpers/fuzz.ts) and check every answer. Prints
// requests, rate and findings as it goes, and the totals at the end; exits 1 on any finding.
//
//   npm run bench:fuzz -- --duration 600 --processes 2 --concurrency 64 --database pglite
//   npm run bench:fuzz -- --requests 500000 --database postgres   (FUZZ_POSTGRES_URL or the local server)
//
// The read budget (READ_RATE_LIMIT) is raised for the run, so keys reach the routes instead of
// their 429 after 300 reads; --default-limits keeps it. Not sent: GET /admin/v1/backup and
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
} from '../test/helpers/fuzz.ts';
import { startGateway } from './gateway.ts';
import { residentMb } from './processes.ts';

const { values: opts } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    requests: { type: 'string' },
    processes: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    database: { type: 'string', default: 'pglite' },
    seed: { type: 'string', default: '1' },
    'default-limits': { type: 'boolean', default: false },
    client: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (opts.help) {
  console.log(
    'npm run bench:fuzz -- [--duration S] [--requests N] [--processes P] [--concurrency C] ' +
      '[--database pglite|postgres] [--seed N] [--default-limits]\n' +
      'postgres: a new database on FUZZ_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres), dropped after.',
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
      keepFindings: 20,
      onProgress: (t) => process.send!({ kind: 'progress', totals: t }),
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

async function main() {
  const processes = Number(opts.processes);
  const concurrency = Number(opts.concurrency);
  const durationMs = Number(opts.duration) * 1000;
  const requests = opts.requests === undefined ? undefined : Number(opts.requests);
  const database = opts.database === 'postgres' ? await createDatabase() : null;
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
      ...(opts['default-limits'] ? {} : { READ_RATE_LIMIT: '1000000' }),
    },
  });
  const started = Date.now();
  let sum = emptyTotals();
  try {
    const world = await prepareWorld({
      publicUrl: gateway.publicUrl,
      adminUrl: gateway.adminUrl,
      rootToken: gateway.adminToken,
      adminRoutes: await adminRouteTable(),
      botSecret,
    });
    console.log(
      `fuzz: ${opts.database}, ${processes} client processes × ${concurrency} in flight, ` +
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
          `no request id ${t.noRequestId}, schema ${t.schemaMismatches}, no answer ${t.transportErrors}, ` +
          `gateway ${residentMb(gateway.child.pid).toFixed(0)} MB`,
      );
    }, 10_000);
    await Promise.all(clients);
    clearInterval(ticker);
    sum = merge(finals.filter(Boolean));
  } finally {
    await gateway.stop();
    gateway.remove();
    await sim.close();
    await database?.drop();
  }
  const seconds = (Date.now() - started) / 1000;
  console.log(
    JSON.stringify(
      {
        database: opts.database,
        processes,
        concurrency,
        seconds: Math.round(seconds),
        requests: sum.requests,
        per_second: Math.round(sum.requests / seconds),
        five_xx: sum.fiveXx,
        no_request_id: sum.noRequestId,
        schema_mismatches: sum.schemaMismatches,
        no_answer: sum.transportErrors,
        by_status: sum.byStatus,
      },
      null,
      1,
    ),
  );
  console.log('answers:', JSON.stringify(sum.byAnswer));
  for (const f of sum.findings) console.log(`FINDING ${describeFinding(f)}`);
  if (sum.findings.length) process.exitCode = 1;
}

function merge(all: FuzzTotals[]): FuzzTotals {
  const out = emptyTotals();
  for (const t of all) {
    out.requests += t.requests;
    out.fiveXx += t.fiveXx;
    out.noRequestId += t.noRequestId;
    out.schemaMismatches += t.schemaMismatches;
    out.transportErrors += t.transportErrors;
    out.findings.push(...t.findings);
    for (const [k, v] of Object.entries(t.byStatus)) out.byStatus[k] = (out.byStatus[k] ?? 0) + v;
    for (const [k, v] of Object.entries(t.byAnswer)) out.byAnswer[k] = (out.byAnswer[k] ?? 0) + v;
  }
  return out;
}
