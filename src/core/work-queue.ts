// The customers with work waiting (work_queue, migration 0111): how a claim on Citus finds whose
// turn it is without asking every worker (docs/running/citus.md#fair-claims-on-citus).
//
// - The SQL that makes work adds its customer (work_queue_add: redeem_create_job for an async job,
//   webhook_event_enqueue for an event, addWebhookWork for a redelivery).
// - A claim reads the first customers in turn order (live before test, then the one looked at
//   longest ago), tries each on its own worker, and moves the ones it looked at to the back.
// - A customer whose work is all gone loses its row, unless work was added since the claim read
//   it (the row's version moved).
// - Work made behind the table's back (a row written by hand, a write lost between two
//   statements) is found again by repairWorkQueue, which reads every worker, at most every 30 s.
// - A customer whose worker does not answer is skipped (moved to the back, its row kept), so a
//   stopped worker stops its own customers' work only (onReachableWorker).
// On one PostgreSQL server the claims find work with one statement (jobs/states.ts,
// webhooks/fair-claim.ts) and read this table not at all; the SQL keeps it written everywhere.
import { isWorkerUnreachable } from '../db/connection-errors.ts';
import type { Queryable } from '../db/database.ts';
import { readAcrossCustomers } from '../db/reachable-shards.ts';
import type { Mode } from './vocabulary.ts';

export type WorkKind = 'job' | 'webhook';

export interface WorkTurn {
  customerId: number;
  mode: Mode;
  version: number;
}

/** Customers looked at per claim at most: a claim's cost does not grow with the customers waiting. */
export const TURNS_PER_CLAIM = 16;

/** The customers with work of `kind`, in turn order. */
export async function workTurns(db: Queryable, kind: WorkKind, limit = TURNS_PER_CLAIM): Promise<WorkTurn[]> {
  const r = await db.query<WorkTurn>(
    `select customer_id as "customerId", mode, version from work_queue
      where kind = $1
      order by (mode = 'test'), last_turn nulls first, customer_id
      limit $2`,
    [kind, limit],
    'work_turns',
  );
  return r.rows.map((t) => ({ ...t, version: Number(t.version) }));
}

/**
 * After a claim looked at these customers: each goes to the back of the turn order, and those
 * whose work is all gone (`empty`) lose their row unless work was added since they were read.
 */
export async function tookTurns(
  db: Queryable,
  kind: WorkKind,
  looked: readonly WorkTurn[],
  empty: readonly WorkTurn[],
): Promise<void> {
  if (looked.length > 0)
    await db.query(
      `update work_queue q set last_turn = nextval('work_queue_turn')
         from unnest($2::bigint[], $3::text[]) as t(customer_id, mode)
        where q.kind = $1 and q.customer_id = t.customer_id and q.mode = t.mode`,
      [kind, looked.map((t) => t.customerId), looked.map((t) => t.mode)],
      'work_took_turns',
    );
  if (empty.length > 0)
    await db.query(
      `delete from work_queue q
        using unnest($2::bigint[], $3::text[], $4::bigint[]) as t(customer_id, mode, version)
        where q.kind = $1 and q.customer_id = t.customer_id and q.mode = t.mode and q.version = t.version`,
      [kind, empty.map((t) => t.customerId), empty.map((t) => t.mode), empty.map((t) => t.version)],
      'work_none_left',
    );
}

/** What onReachableWorker gives for a customer whose worker did not answer. */
export const UNREACHABLE: unique symbol = Symbol('unreachable');

/**
 * One customer's step of a claim on its worker; a worker that does not answer (stopped,
 * restarting) gives UNREACHABLE instead of an error, and the claim goes on to the next customer.
 */
export async function onReachableWorker<T>(step: () => Promise<T>): Promise<T | typeof UNREACHABLE> {
  try {
    return await step();
  } catch (err) {
    if (isWorkerUnreachable(err)) return UNREACHABLE;
    throw err;
  }
}

/** A redelivery queued outside SQL: its customer has webhook work. */
export async function addWebhookWork(db: Queryable, customerId: number, mode: Mode): Promise<void> {
  await db.query("select work_queue_add('webhook', $1, $2)", [customerId, mode], 'work_queue_add');
}

const repaired = new WeakMap<object, number>();
const REPAIR_EVERY_MS = 30_000;

/**
 * Adds every customer that has work but no row (at most every 30 s per database handle): reads
 * every worker, so a claim pays it rarely.
 */
export async function repairWorkQueue(db: Queryable & object, nowMs: number): Promise<void> {
  const last = repaired.get(db);
  if (last !== undefined && nowMs - last < REPAIR_EVERY_MS) return;
  repaired.set(db, nowMs);
  // A worker that does not answer: the others' work is found (readAcrossCustomers); should even
  // that fail, the repair waits for the next turn (the claims go on without it).
  const found = await onReachableWorker(() => workOnEveryWorker(db));
  if (found === UNREACHABLE) return;
  for (const [kind, rows] of found) {
    if (rows.length === 0) continue;
    await db.query(
      `insert into work_queue (kind, customer_id, mode)
       select $1, customer_id, mode from unnest($2::bigint[], $3::text[]) as t(customer_id, mode)
       on conflict do nothing`,
      [kind, rows.map((r) => r.customerId), rows.map((r) => r.mode)],
    );
  }
}

/**
 * The customers with work and its kind, read on every worker (while one does not answer, on the
 * others: readAcrossCustomers; the stopped worker's rows are kept, so nothing is lost).
 */
async function workOnEveryWorker(db: Queryable) {
  const jobs = await readAcrossCustomers<{ customerId: number; mode: Mode }>(db, {
    tables: ['jobs'],
    sql: `select distinct customer_id as "customerId", mode from jobs where status = 'queued'`,
    params: [],
  });
  const events = await readAcrossCustomers<{ customerId: number; mode: Mode }>(db, {
    tables: ['webhook_events', 'webhook_redeliveries'],
    sql: `select distinct customer_id as "customerId", mode from webhook_events where state = 'pending'
          union
          select distinct e.customer_id, e.mode
            from webhook_redeliveries r join webhook_events e on e.customer_id = r.customer_id and e.id = r.event_id
           where r.state = 'queued'`,
    params: [],
  });
  return [
    ['job', jobs.rows],
    ['webhook', events.rows],
  ] as const;
}
