// Citus (the PostgreSQL extension that shards tables across worker servers): which table lives
// where, and the step that puts them there. Without the extension nothing here runs: PGlite and
// one PostgreSQL server keep every table local. docs/running/citus.md is the runbook.
//
// Every table that holds one customer's rows is distributed by `customer_id` (customers by its
// `id`), all co-located with `customers`, so one customer's rows live on one worker and a request
// for one customer commits there. The rest stays on the coordinator: what operators read (audit,
// operators, the request log's day counts), bookkeeping (migrations, rotation, usage roll-up) and
// the few tables whose rows are not one customer's (listed in COORDINATOR_TABLES with why).
import type { Queryable } from './database.ts';

/** Distributed by customer, co-located with customers, in an order where a referenced table comes first. */
export const CUSTOMER_TABLES: readonly string[] = [
  'customers',
  'plans',
  'accounts',
  'api_keys',
  'wallet_ledger',
  'daily_usage',
  'stock_codes',
  'jobs',
  'job_codes',
  'idempotency_keys',
  'webhooks',
  'webhook_events',
  'webhook_attempts',
  'webhook_redeliveries',
  'webhook_receiver_health',
  'usage_hourly',
  'usage_daily',
  'admin_idempotency_keys',
  'bot_links',
  'bot_users',
  'bot_redeems',
  'bot_check_usage',
  'bot_alert_states',
  'topup_requests',
  'key_burst_windows',
];

/**
 * Small tables every node reads, copied to each (Citus reference tables), and why. A write
 * commits on every node (an operator's action); a read is answered where it arrives.
 */
export const REFERENCE_TABLES: Readonly<Record<string, string>> = {
  key_directory: "a key's customer, found by its digest without asking every worker",
};

/** On the coordinator, and why. */
export const COORDINATOR_TABLES: Readonly<Record<string, string>> = {
  schema_migrations: 'bookkeeping',
  schema_functions: 'bookkeeping',
  encryption_rotation: 'one row: the rotation in progress',
  usage_rollup: 'one row per roll-up step',
  operators: 'operators are not a customer',
  audit_events: 'read by operators; an action may span customers or none',
  request_log: 'read by operators; a row may have no customer (an unknown key)',
  request_log_days: 'per subject (a customer, or the unidentified callers) and day',
  bot_updates: 'the bot as a whole: an update is recorded before its sender is known',
  bot_poll_lease: 'the bot as a whole',
  burst_windows:
    "per subject (a key's reads, a person, an address), not per customer; a key's redeem window is its customer's (key_burst_windows)",
  sandbox_redemptions: 'the sandbox remembers a code for every customer of the mode',
  topup_payments: "keyed by Telegram's charge id; the payer may be no customer's",
  citus_foreign_keys_set_aside: 'only while db distribute runs (distributeTables)',
  work_queue: 'which customers have work waiting: what a claim reads before it goes to one worker',
  job_claim_turns: "each customer's last job claim: the claims' turn order, read across customers",
  webhook_claim_turns: "each customer's last webhook claim: the claims' turn order, read across customers",
};

/**
 * The SQL functions that act for one customer and are distributed by it (Citus's distributed
 * functions, co-located with customers): called alone (`select f(…)`, outside a transaction
 * block) the coordinator sends the whole call to the worker that holds the customer, one round
 * trip, where each of the function's statements runs on that worker's shards. Inside a
 * transaction block Citus runs the call on the coordinator as before: the callers do that when
 * the call must write a coordinator table (docs/running/citus.md#distributed-functions).
 */
export const DISTRIBUTED_FUNCTIONS: Readonly<Record<string, string>> = {
  redeem_start: 'p_customer',
  redeem_record_outcome: 'p_customer',
  redeem_begin: 'p_customer',
  key_burst_take: 'p_customer',
  account_lock: 'p_customer',
  account_row: 'p_customer',
  account_state: 'p_customer',
  usage_record: 'p_customer',
  billing_hold: 'p_customer',
  billing_release_one: 'p_customer',
  job_finish_sync_as: 'p_customer',
  job_finish_sync: 'p_customer',
  job_codes_scan: 'p_customer',
  job_codes_json: 'p_customer',
  stock_set_state: 'p_customer',
};

/**
 * The SQL functions with a customer argument that stay on the coordinator, each with its reason:
 * a call sent whole to a worker must not write a coordinator table, nor take an id from a
 * sequence whose order matters (a worker numbers a sequence from 2^48 times its group, so a
 * ledger row written there would sort after every row written on the coordinator).
 */
export const COORDINATOR_FUNCTIONS: Readonly<Record<string, string>> = {
  ledger_append: "writes the wallet ledger, whose ids (a sequence's) order each customer's rows",
  billing_capture_one: 'captures a charge: a wallet ledger row (ledger_append)',
  quarantine_settle: 'settles a quarantined code: a wallet ledger row (ledger_append)',
  redeem_create_job: "an async job's or a bot redeem's phase 1: the job's work_queue row, and wallet charges",
  job_finish_async: "an async job's end: its event's work_queue row (webhook_event_enqueue)",
  webhook_event_enqueue: "an event in the outbox: its customer's work_queue row",
  work_queue_add: 'writes work_queue, a coordinator table',
  sibling_table: "a trigger's helper: names the shard of a table on the node the trigger runs on",
};

/** True when the database is a Citus coordinator (the extension is installed in it). */
export async function hasCitus(db: Queryable): Promise<boolean> {
  const r = await db.query("select 1 from pg_extension where extname = 'citus'");
  return r.rows.length > 0;
}

const sharded = new WeakMap<object, Promise<boolean>>();

/**
 * True when the customer tables are distributed (a Citus coordinator after placeTables or db
 * distribute): the claims then take turns through work_queue (core/work-queue.ts). Read once per
 * database handle; a handle opened before `db distribute` finished keeps the answer it read.
 */
export function shardedByCustomer(db: Queryable & object): Promise<boolean> {
  let known = sharded.get(db);
  if (!known) {
    known = db
      .query<{ sharded: boolean }>(
        `select exists (select 1 from pg_extension where extname = 'citus')
            and exists (select 1 from pg_class where relname = 'pg_dist_partition') as sharded`,
      )
      .then(async (r) => {
        if (!r.rows[0]?.sharded) return false;
        return (await citusTables(db)).has('jobs');
      })
      .catch((err: unknown) => {
        // Not kept: the next call asks again (the database may be away for a moment).
        sharded.delete(db);
        throw err;
      });
    sharded.set(db, known);
  }
  return known;
}

/** Workers that take shards (primary nodes with shouldhaveshards). */
export async function shardWorkerCount(db: Queryable): Promise<number> {
  const r = await db.query(
    "select 1 from pg_dist_node where noderole = 'primary' and shouldhaveshards and groupid > 0",
  );
  return r.rows.length;
}

/** Tables already known to Citus, by name. */
async function citusTables(db: Queryable): Promise<Set<string>> {
  const r = await db.query<{ name: string }>(
    'select logicalrelid::regclass::text as name from pg_dist_partition',
  );
  return new Set(r.rows.map((x) => x.name));
}

/**
 * Distributes every customer table not distributed yet (customers first, then the others
 * co-located with it), then makes the reference tables. `concurrently`: with Citus's online distribution, one table at a time, so
 * a database that already serves keeps serving (writes wait only for a moment at the end of
 * each table). Returns the tables it distributed. Idempotent.
 *
 * Citus distributes a table online only without foreign keys, so those between customer tables
 * are set aside first (kept in citus_foreign_keys_set_aside, so a run that stops half-way leaves
 * them for the next run), and put back, validated, once every table is distributed.
 */
export async function distributeTables(
  db: Queryable,
  opts: { concurrently?: boolean } = {},
): Promise<string[]> {
  const done = await citusTables(db);
  const distributed: string[] = [];
  if (!CUSTOMER_TABLES.every((t) => done.has(t))) {
    // Later sessions (the function files re-create triggers on distributed tables) need it too.
    await db.query(
      `do $$ begin execute format('alter database %I set citus.enable_unsafe_triggers = on', current_database()); end $$`,
    );
    if (opts.concurrently) await setForeignKeysAside(db);
    const fn = opts.concurrently ? 'create_distributed_table_concurrently' : 'create_distributed_table';
    for (const table of CUSTOMER_TABLES) {
      if (done.has(table)) continue;
      const column = table === 'customers' ? 'id' : 'customer_id';
      const colocate = table === 'customers' ? 'default' : 'customers';
      // Its triggers go with it to the shards, and Citus asks for this setting to allow it. A
      // wake-up is then notified on the worker where the row is written, where no process listens
      // yet (docs/running/citus.md#what-is-not-done-yet): the workers' polls find the work.
      await db.query(
        `select set_config('citus.enable_unsafe_triggers', 'on', false), ${fn}($1, $2, colocate_with => $3)`,
        [table, column, colocate],
      );
      distributed.push(table);
    }
  }
  await putForeignKeysBack(db);
  for (const table of Object.keys(REFERENCE_TABLES)) {
    if (done.has(table)) continue;
    await db.query('select create_reference_table($1)', [table]);
    distributed.push(table);
  }
  return distributed;
}

async function setForeignKeysAside(db: Queryable): Promise<void> {
  await db.query(
    'create table if not exists citus_foreign_keys_set_aside (tbl text not null, name text not null, def text not null, primary key (tbl, name))',
  );
  const fks = await db.query<{ tbl: string; name: string; def: string }>(
    `select conrelid::regclass::text as tbl, conname as name, pg_get_constraintdef(oid) as def
       from pg_constraint where contype = 'f' and conrelid::regclass::text = any($1)`,
    [CUSTOMER_TABLES],
  );
  for (const fk of fks.rows) {
    await db.query(
      'insert into citus_foreign_keys_set_aside (tbl, name, def) values ($1, $2, $3) on conflict do nothing',
      [fk.tbl, fk.name, fk.def],
    );
    await db.query(`alter table ${quote(fk.tbl)} drop constraint ${quote(fk.name)}`);
  }
}

async function putForeignKeysBack(db: Queryable): Promise<void> {
  const kept = await db.query("select 1 from pg_class where relname = 'citus_foreign_keys_set_aside'");
  if (kept.rows.length === 0) return;
  const fks = await db.query<{ tbl: string; name: string; def: string }>(
    'select tbl, name, def from citus_foreign_keys_set_aside order by tbl, name',
  );
  for (const fk of fks.rows) {
    const exists = await db.query(
      'select 1 from pg_constraint where conrelid = $1::regclass and conname = $2',
      [fk.tbl, fk.name],
    );
    if (exists.rows.length === 0) {
      // Added unchecked (a moment's lock), then checked without blocking writes.
      await db.query(`alter table ${quote(fk.tbl)} add constraint ${quote(fk.name)} ${fk.def} not valid`);
      await db.query(`alter table ${quote(fk.tbl)} validate constraint ${quote(fk.name)}`);
    }
    await db.query('delete from citus_foreign_keys_set_aside where tbl = $1 and name = $2', [
      fk.tbl,
      fk.name,
    ]);
  }
  await db.query('drop table citus_foreign_keys_set_aside');
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * After the migrations at start, on a Citus coordinator (a no-op elsewhere): a new database's
 * customer tables are distributed at once (they are empty: a moment's work). A database that
 * already holds customers is left as it is and `pending` says so: distributing it copies every
 * row, which `redeem-gateway db distribute` does online, when the operator chooses.
 */
export async function placeTables(
  db: Queryable,
): Promise<{ distributed: string[]; pending: boolean; sharded: boolean }> {
  if (!(await hasCitus(db))) return { distributed: [], pending: false, sharded: false };
  const done = await citusTables(db);
  let distributed: string[] = [];
  if (![...CUSTOMER_TABLES, ...Object.keys(REFERENCE_TABLES)].every((t) => done.has(t))) {
    if (!done.has('customers')) {
      const some = await db.query('select 1 from customers limit 1');
      if (some.rows.length > 0) return { distributed: [], pending: true, sharded: false };
    }
    distributed = await distributeTables(db);
  }
  return { distributed, pending: false, sharded: true };
}

/**
 * Makes DISTRIBUTED_FUNCTIONS distributed functions keyed by their customer argument, those
 * that are not yet. Idempotent; needs the customer tables distributed (placeTables, db
 * distribute), and its own transaction (Citus refuses it after a write to many shards in the
 * same one). A function the function files replace later keeps its distribution.
 */
export async function distributeFunctions(db: Queryable): Promise<string[]> {
  const r = await db.query<{ name: string; signature: string }>(
    `select p.proname as name, p.oid::regprocedure::text as signature
       from pg_proc p
       left join pg_dist_object d on d.classid = 'pg_proc'::regclass and d.objid = p.oid
      where p.pronamespace = 'public'::regnamespace and p.proname = any($1)
        and d.distribution_argument_index is null`,
    [Object.keys(DISTRIBUTED_FUNCTIONS)],
  );
  for (const f of r.rows)
    await db.query("select create_distributed_function($1, $2, colocate_with => 'customers')", [
      f.signature,
      DISTRIBUTED_FUNCTIONS[f.name],
    ]);
  return r.rows.map((f) => f.name);
}
