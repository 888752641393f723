// Usage aggregates at scale: fills a database with a million job codes spread over 30 days, then
// times the rollup that catches up from nothing, and the usage queries the console makes (the
// rollup plus the live part, as GET /admin/v1/usage runs them) against the same aggregate
// computed straight from the job rows (the baseline). Nothing is asserted: the machines are noisy.
//
//   npm run bench:usage                         # embedded PGlite in a temporary directory
//   npm run bench:usage -- --postgres=URL       # a THROWAWAY PostgreSQL database (it is filled)
//   npm run bench:usage -- --codes=200000 --customers=50
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { rollUpUsage, usageBuckets, usageFromRows } from '../src/core/accounts/usage.ts';
import type { Database } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { withBenchDatabase } from './database.ts';

const { values } = parseArgs({
  options: {
    codes: { type: 'string', default: '1000000' },
    customers: { type: 'string', default: '100' },
    postgres: { type: 'string' },
    runs: { type: 'string', default: '7' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'npm run bench:usage -- [--codes=N 1000000] [--customers=N 100] [--runs=N 7] [--postgres=URL (throwaway!)]\n',
  );
  process.exit(0);
}

const CODES_PER_JOB = 10;
const codes = Number(values.codes);
const customers = Number(values.customers);
const runs = Number(values.runs);
const jobs = Math.ceil(codes / CODES_PER_JOB);
const NOW = new Date('2026-11-22T12:00:00Z');
const SPAN_MS = 30 * 86_400_000;

async function fill(db: Database) {
  await db.query(
    `insert into customers (name, created_at) select 'bench ' || g, $1 from generate_series(1, $2) g`,
    [NOW, customers],
  );
  const ids = (await db.query<{ id: number }>('select id from customers order by id')).rows.map((r) => r.id);
  const first = ids[0]!;
  const CHUNK = 20_000;
  for (let from = 1; from <= jobs; from += CHUNK) {
    const to = Math.min(jobs, from + CHUNK - 1);
    // Job g was created (g / jobs) of 30 days ago; its codes finished a second later.
    await db.query(
      `insert into jobs (id, customer_id, mode, idempotency_key, is_async, status, source, player_id, total, hold_day,
                         rate_micros, hold_included, hold_wallet, captured_included, released_included,
                         created_at, started_at, finished_at)
       select 'job_bench' || g, $3::bigint + g % $4::int, case when g % 4 = 0 then 'test' else 'live' end, 'k' || g, g % 3 = 0,
              'completed', 'codes', '5123456789', ${CODES_PER_JOB}, ($1::timestamptz - g * $2::float8 * interval '1 millisecond')::date,
              10000, ${CODES_PER_JOB}, 0, 8, 2,
              $1::timestamptz - g * $2::float8 * interval '1 millisecond',
              $1::timestamptz - g * $2::float8 * interval '1 millisecond',
              $1::timestamptz - g * $2::float8 * interval '1 millisecond' + interval '1 second'
         from generate_series($5::int, $6::int) g`,
      [NOW, SPAN_MS / jobs, first, customers, from, to],
    );
    await db.query(
      `insert into job_codes (customer_id, job_id, position, code_hash, code_encrypted, last4, state, status, error_code,
                              disposition, billed, started_at, finished_at)
       select $5::bigint + g % $6::int, 'job_bench' || g, p, md5(g || '-' || p), 'x', 'ABCD', 'done', s.status, s.error_code,
              s.disposition, s.billed,
              $1::timestamptz - g * $2::float8 * interval '1 millisecond',
              $1::timestamptz - g * $2::float8 * interval '1 millisecond' + interval '1 second'
         from generate_series($3::int, $4::int) g
         cross join generate_series(0, ${CODES_PER_JOB - 1}) p
         cross join lateral (select case
             when p < 6 then 'activated' when p = 6 then 'code_used' when p = 7 then 'invalid_code'
             when p = 8 then 'bad_player' else 'failed' end as status) o
         cross join lateral (select o.status,
             case o.status when 'activated' then '' when 'code_used' then 'CODE_USED' when 'invalid_code' then 'INVALID_CODE'
                           when 'bad_player' then 'CHARACTER_NOT_FOUND' else 'ACTIVATION_FAILED' end as error_code,
             case when o.status in ('bad_player', 'failed') then 'kept' when o.status = 'activated' then 'consumed'
                  else 'deleted' end as disposition,
             o.status in ('activated', 'code_used', 'invalid_code') as billed) s`,
      [NOW, SPAN_MS / jobs, from, to, first, customers],
    );
  }
  await db.exec('analyze');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function time(fn: () => Promise<unknown>, n = runs): Promise<number> {
  await fn(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

async function benchOne(name: string, db: Database) {
  await migrate(db);
  let t0 = performance.now();
  await fill(db);
  const fillMs = performance.now() - t0;
  const n = (await db.query<{ n: number }>('select count(*)::int as n from job_codes')).rows[0]!.n;
  process.stdout.write(
    `${name}: ${n.toLocaleString('en-US')} job codes in ${jobs.toLocaleString('en-US')} jobs, filled in ${(fillMs / 1000).toFixed(1)} s\n`,
  );

  t0 = performance.now();
  const rolledUntil = await rollUpUsage(db, NOW, 100_000);
  const rollMs = performance.now() - t0;
  const hourlyRows = (await db.query<{ n: number }>('select count(*)::int as n from usage_hourly')).rows[0]!
    .n;

  const hourStart = new Date(Math.floor(NOW.getTime() / 3_600_000) * 3_600_000 + 3_600_000);
  const dayEnd = new Date(Math.floor(NOW.getTime() / 86_400_000) * 86_400_000 + 86_400_000);
  const hourly = {
    granularity: 'hour' as const,
    from: new Date(hourStart.getTime() - 24 * 3_600_000),
    to: hourStart,
  };
  const daily = {
    granularity: 'day' as const,
    from: new Date(dayEnd.getTime() - 30 * 86_400_000),
    to: dayEnd,
  };
  const customerId = (await db.query<{ id: number }>('select min(id)::int as id from customers')).rows[0]!.id;
  // As GET /admin/v1/usage runs: a (caught-up) rollup step, then the query.
  const viaApi = (q: Parameters<typeof usageBuckets>[1]) => async () =>
    usageBuckets(db, q, await rollUpUsage(db, NOW));
  const rows: [string, number][] = [
    ['hourly, 24 h, all customers', await time(viaApi(hourly))],
    ['daily, 30 days, all customers', await time(viaApi(daily))],
    ['daily, 30 days, one customer', await time(viaApi({ ...daily, customerId }))],
    ['hourly, 24 h, one customer, live mode', await time(viaApi({ ...hourly, customerId, mode: 'live' }))],
    // The baseline: the same daily answer straight from the job rows (no rollup).
    ['baseline: daily, 30 days, all customers, from job rows', await time(() => usageFromRows(db, daily), 3)],
  ];
  const check = await usageBuckets(db, daily, rolledUntil);
  const raw = await usageFromRows(db, daily);
  process.stdout.write(
    `${name}: rollup from nothing ${(rollMs / 1000).toFixed(1)} s (${hourlyRows.toLocaleString('en-US')} customer-mode-hours); ` +
      `rollup answer ${JSON.stringify(check.totals) === JSON.stringify(raw.totals) ? 'equals' : 'DIFFERS FROM'} the raw answer\n`,
  );
  const baseline = rows.at(-1)![1];
  for (const [label, ms] of rows)
    process.stdout.write(
      `  ${label.padEnd(56)} ${ms.toFixed(1).padStart(8)} ms  (${(baseline / ms).toFixed(1)}x faster than the baseline)\n`,
    );
}

await withBenchDatabase(values.postgres, 'rg-bench-usage-', benchOne);
