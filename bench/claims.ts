// Job claims at scale (docs/reference/jobs.md#fair-sharing): the fair claim (claimJob in src/core/jobs/states.ts: live
// before test, fewest running, least recently served customer, oldest job) against the plain
// oldest-first claim (the baseline, one index probe), timed in the same run on the same queue.
// One customer floods (90 % of the queue, and 100,000 finished jobs of history); the rest of the
// queue is spread over the other customers. Each claim leaves its job running, as a worker
// would. Nothing is asserted: the machines are noisy.
//
//   npm run bench:claims                         # embedded PGlite in a temporary directory
//   npm run bench:claims -- --postgres=URL       # a THROWAWAY PostgreSQL database (it is filled)
//   npm run bench:claims -- --sizes=1000,10000,50000 --customers=50 --claims=40
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { RedeemDeps } from '../src/core/context.ts';
import { claimJob } from '../src/core/jobs/states.ts';
import type { Database } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { withBenchDatabase } from './database.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000,50000' },
    customers: { type: 'string', default: '50' },
    claims: { type: 'string', default: '40' },
    history: { type: 'string', default: '100000' },
    postgres: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'npm run bench:claims -- [--sizes=N,N 1000,10000,50000] [--customers=N 50] [--claims=N 40] [--history=N 100000] [--postgres=URL (throwaway!)]\n',
  );
  process.exit(0);
}

const sizes = values.sizes.split(',').map(Number);
const customers = Number(values.customers);
const claims = Number(values.claims);
const history = Number(values.history);
const NOW = new Date('2026-11-22T12:00:00Z');

/** Inserts jobs g = from..to of a kind; `sql` gives customer and mode over g and first.id (the first customer). */
async function insertJobs(
  db: Database,
  prefix: string,
  from: number,
  to: number,
  status: string,
  sql: string,
) {
  await db.query(
    `insert into jobs (id, customer_id, mode, idempotency_key, is_async, status, source, player_id, total, hold_day,
                       rate_micros, hold_included, hold_wallet, created_at, started_at, finished_at)
     select $4 || g, ${sql}, 'k' || $4 || g, true, $3, 'codes', '5123456789', 1, $1::date,
            1000, 1, 0, $1::timestamptz + g * interval '1 millisecond',
            case when $3 = 'completed' then $1::timestamptz end, case when $3 = 'completed' then $1::timestamptz end
       from generate_series($2::int, $5::int) g, (select min(id) as id from customers) first`,
    [NOW, from, status, prefix, to],
  );
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timeClaims(fn: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < claims; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

async function benchOne(name: string, db: Database) {
  await migrate(db);
  await db.query(
    `insert into customers (name, created_at) select 'bench ' || g, $1 from generate_series(1, $2) g`,
    [NOW, customers],
  );
  // The flooder's history: finished jobs, which no claim may have to read.
  for (let from = 1; from <= history; from += 20_000)
    await insertJobs(db, 'done', from, Math.min(history, from + 19_999), 'completed', `first.id, 'test'`);
  const deps = { db, clock: { now: () => new Date() } } as unknown as RedeemDeps;
  // The plain claim: the oldest queued job, whoever's it is.
  const oldestFirst = () =>
    db.query(
      `update jobs set status = 'running', lease_owner = 'bench', lease_expires_at = $1, started_at = $2
        where id = (select id from jobs where status = 'queued' order by created_at, id limit 1 for update skip locked)
        returning id`,
      [new Date(Date.now() + 30_000), new Date()],
      'bench_oldest_first_claim',
    );
  const requeue = () =>
    db.query(
      `update jobs set status = 'queued', lease_owner = null, started_at = null where status = 'running'`,
    );

  process.stdout.write(
    `${name}: ${customers} customers, one with ${history.toLocaleString('en-US')} finished jobs; median of ${claims} claims\n`,
  );
  process.stdout.write(
    `  ${'queued'.padStart(8)}  ${'fair ms'.padStart(8)}  ${'oldest-first ms'.padStart(16)}  ratio\n`,
  );
  for (const size of sizes) {
    await db.query(`delete from jobs where status in ('queued', 'running')`);
    // 90 % the flooder's test jobs, the rest spread over the others; every 50th job live.
    await insertJobs(
      db,
      `q${size}_`,
      1,
      size,
      'queued',
      `first.id + case when g % 10 = 0 then 1 + g % ${customers - 1} else 0 end, case when g % 50 = 0 then 'live' else 'test' end`,
    );
    await db.exec('analyze jobs');
    // Warm-up (plans, caches, every customer's first turn), then the same queue for both.
    for (let i = 0; i < 5; i++) await claimJob(deps);
    await requeue();
    const fair = await timeClaims(() => claimJob(deps));
    await requeue();
    await oldestFirst();
    await requeue();
    const plain = await timeClaims(oldestFirst);
    await requeue();
    process.stdout.write(
      `  ${size.toLocaleString('en-US').padStart(8)}  ${fair.toFixed(2).padStart(8)}  ${plain.toFixed(2).padStart(16)}  ${(fair / plain).toFixed(1)}x\n`,
    );
  }
}

await withBenchDatabase(values.postgres, 'rg-bench-claims-', benchOne);
