// Usage per hour or day by outcome, for the operator (GET /admin/v1/usage, the console's plots).
// A million job codes cannot be grouped in 50 ms, so finished work is read from the rollups
// `usage_hourly` and `usage_daily` (migration 0009) and only recent work is counted from the job rows. The rollup
// is advanced here, by whoever reads usage, never by the redeem path: each step takes the
// watermark row's lock, adds the codes of the jobs created in [rolled_until, target) and moves
// the watermark, in one transaction, so two readers never add a job twice.
import type { Database, Queryable } from '../../db/database.ts';
import { isoUtc } from '../clock.ts';
import { CODE_STATUSES, type Mode } from '../vocabulary.ts';

export type Granularity = 'hour' | 'day';

/** The per-code statuses, counted in this order (core/vocabulary.ts). */
export const OUTCOMES = CODE_STATUSES;

/** The counted columns, in the order the rollup tables and every answer hold them. */
const COUNTED = [...OUTCOMES, 'billed', 'refunded'] as const;
export type UsageCounts = Record<(typeof COUNTED)[number], number>;

/**
 * A job is rolled up only once it was created this long ago: its phase 1 transaction (which
 * stamps created_at) has surely committed by then, so no job can appear behind the watermark.
 */
export const ROLLUP_MARGIN_MS = 5 * 60_000;
// The rollup tables (migration 0009): table, bucket column, date_trunc unit.
const ROLLUP_TABLES = [
  ['usage_hourly', 'hour', 'hour'],
  ['usage_daily', 'day', 'day'],
] as const;

/** One step rolls up at most this much creation time, so each transaction stays short. */
const ROLLUP_SPAN_MS = 6 * 3_600_000;

const unitMs = (g: Granularity) => (g === 'hour' ? 3_600_000 : 86_400_000);

/** The start of the hour or UTC day holding `d`. */
export function bucketStart(d: Date, g: Granularity): Date {
  const u = unitMs(g);
  return new Date(Math.floor(d.getTime() / u) * u);
}

// The per-outcome counts of a set of done, non-reused job codes `c`.
const COUNT_COLUMNS = [
  ...OUTCOMES.map((s) => `count(*) filter (where c.status = '${s}')::int as ${s}`),
  'count(*) filter (where c.billed is true)::int as billed',
  'count(*) filter (where c.billed is not true)::int as refunded',
].join(',\n  ');

const SUM_COLUMNS = COUNTED.map((c) => `sum(${c})::int as ${c}`).join(', ');
const ADDED_COLUMNS = COUNTED.map((c) => `${c} = u.${c} + excluded.${c}`).join(', ');

/**
 * Advances the rollup as far as it safely can (at most `maxSteps` steps); returns the watermark:
 * every job created before it is finished and counted in the rollup tables, no later job is.
 */
export async function rollUpUsage(db: Database, now: Date, maxSteps = 40): Promise<Date> {
  for (let step = 0; ; step++) {
    const r = await db.transaction(async (tx) => {
      const state = await tx.query<{ rolledUntil: Date | null }>(
        'select rolled_until as "rolledUntil" from usage_rollup where id = 1 for update',
      );
      const bounds = await tx.query<{ firstJob: Date | null; firstUnfinished: Date | null }>(
        `select (select min(created_at) from jobs) as "firstJob",
                (select min(created_at) from jobs where status in ('queued', 'running')) as "firstUnfinished"`,
      );
      const { firstJob, firstUnfinished } = bounds.rows[0]!;
      let target = now.getTime() - ROLLUP_MARGIN_MS;
      if (firstUnfinished) target = Math.min(target, firstUnfinished.getTime());
      const from = state.rows[0]!.rolledUntil ?? firstJob ?? new Date(target);
      target = Math.min(target, from.getTime() + ROLLUP_SPAN_MS);
      if (target <= from.getTime()) return { until: from, done: true };
      for (const [table, column, unit] of ROLLUP_TABLES) {
        await tx.query(
          `insert into ${table} as u (customer_id, mode, ${column}, ${COUNTED.join(', ')})
           select j.customer_id, j.mode, date_trunc('${unit}', c.finished_at, 'UTC'), ${COUNT_COLUMNS}
             from jobs j join job_codes c on c.customer_id = j.customer_id and c.job_id = j.id
            where j.created_at >= $1 and j.created_at < $2 and c.state = 'done' and not c.reused
            group by 1, 2, 3
           on conflict (customer_id, mode, ${column}) do update set ${ADDED_COLUMNS}`,
          [from, new Date(target)],
        );
      }
      await tx.query('update usage_rollup set rolled_until = $1 where id = 1', [new Date(target)]);
      return { until: new Date(target), done: false };
    });
    if (r.done || step + 1 >= maxSteps) return r.until;
  }
}

export interface UsageQuery {
  customerId?: number | undefined;
  mode?: Mode | undefined;
  granularity: Granularity;
  /** Bucket-aligned start (inclusive) and end (exclusive). */
  from: Date;
  to: Date;
}

export interface UsageBucket extends UsageCounts {
  start: string;
}

const zero = (): UsageCounts => Object.fromEntries(COUNTED.map((c) => [c, 0])) as UsageCounts;

type BucketRow = UsageCounts & { bucket: Date };

/** Counts of the done codes of jobs created at or after `since`, per bucket of when they finished.
 * A customer given is named in the statement's text: Citus sends it to that customer's worker
 * alone only then (it does not prune on `$4 is null or customer_id = $4`); so in countFromRollup.
 */
function countFromRows(q: Queryable, query: UsageQuery, since: Date) {
  return q.query<BucketRow>(
    `select date_trunc($1, c.finished_at, 'UTC') as bucket, ${COUNT_COLUMNS}
       from jobs j join job_codes c on c.customer_id = j.customer_id and c.job_id = j.id
      where j.created_at >= $6 and c.state = 'done' and not c.reused
        and c.finished_at >= $2 and c.finished_at < $3
        and ${query.customerId == null ? '$4::bigint is null' : 'j.customer_id = $4'} and ($5::text is null or j.mode = $5)
      group by 1`,
    [query.granularity, query.from, query.to, query.customerId ?? null, query.mode ?? null, since],
  );
}

function countFromRollup(q: Queryable, query: UsageQuery) {
  const [table, column] = query.granularity === 'hour' ? ROLLUP_TABLES[0] : ROLLUP_TABLES[1];
  return q.query<BucketRow>(
    `select ${column} as bucket, ${SUM_COLUMNS}
       from ${table}
      where ${column} >= $1 and ${column} < $2
        and ${query.customerId == null ? '$3::bigint is null' : 'customer_id = $3'}
        and ($4::text is null or mode = $4)
      group by 1`,
    [query.from, query.to, query.customerId ?? null, query.mode ?? null],
  );
}

/** Zero-filled buckets of the range, oldest first, with the rows' counts added in. */
function toBuckets(query: UsageQuery, rows: BucketRow[]): { buckets: UsageBucket[]; totals: UsageCounts } {
  const byStart = new Map<number, UsageCounts>();
  const u = unitMs(query.granularity);
  for (let t = query.from.getTime(); t < query.to.getTime(); t += u) byStart.set(t, zero());
  const totals = zero();
  for (const row of rows) {
    const counts = byStart.get(new Date(row.bucket).getTime());
    if (!counts) continue;
    for (const k of Object.keys(totals) as (keyof UsageCounts)[]) {
      counts[k] += row[k];
      totals[k] += row[k];
    }
  }
  return {
    buckets: [...byStart].map(([start, counts]) => ({ start: isoUtc(new Date(start)), ...counts })),
    totals,
  };
}

/**
 * Counts per bucket, every bucket of the range present (zeros included), oldest first: the
 * rollup for jobs created before `rolledUntil` (from rollUpUsage), the job rows for the rest.
 */
export async function usageBuckets(q: Queryable, query: UsageQuery, rolledUntil: Date) {
  const [rolled, live] = await Promise.all([countFromRollup(q, query), countFromRows(q, query, rolledUntil)]);
  return toBuckets(query, [...rolled.rows, ...live.rows]);
}

/** The same answer from the job rows alone (no rollup): the benchmark's baseline and the tests' check. */
export async function usageFromRows(q: Queryable, query: UsageQuery) {
  return toBuckets(query, (await countFromRows(q, query, new Date(0))).rows);
}
