// A sweep's read across customers that a stopped Citus worker does not stop
// (docs/running/citus.md#a-worker-that-stops).
//
// A read naming no customer asks every worker, and fails whole while one of them does not answer.
// For the periodic passes that read across customers and then act per customer (job recovery,
// the quarantine check, the bot's progress reports and expired confirmations, …) that would stop
// every customer's pass for one worker's sake. So when the read fails because a worker did not
// answer, it is made again on each shard group by itself (the groups of one worker joined in one
// command), with Citus's own `master_run_on_worker` (what `run_command_on_shards` runs on), which
// answers per command instead of failing whole: the rows of the workers that answer come back,
// those of the stopped worker wait for a later pass.
//
// Without Citus, or when every worker answers, the read is the plain statement.
import { escapeLiteral } from 'pg';
import pgUtils from 'pg/lib/utils.js';
import { shardedByCustomer } from './citus.ts';
import { isWorkerUnreachable } from './connection-errors.ts';
import type { Queryable } from './database.ts';

/** A read across customers: its statement, and the customer tables it reads. */
export interface AcrossCustomers {
  /** The customer tables the statement reads, each named after `from` or `join`. */
  tables: readonly string[];
  sql: string;
  params: readonly unknown[];
  /** The statement's name (prepared once per connection), as in Queryable.query. */
  name?: string;
}

/**
 * The rows of `read`. On Citus, while a worker does not answer: the rows of the workers that do
 * (the statement run on each shard group by itself, so its `order by` and `limit` hold per
 * group, not across them), and `partial` true. The rows come back through JSON then: select
 * numbers, text, booleans and JSON, not timestamps (they would come back as text).
 */
export async function readAcrossCustomers<T>(
  db: Queryable & object,
  read: AcrossCustomers,
): Promise<{ rows: T[]; partial: boolean }> {
  try {
    const r = await db.query<T>(read.sql, read.params, read.name);
    return { rows: r.rows, partial: false };
  } catch (err) {
    if (!isWorkerUnreachable(err) || !(await shardedByCustomer(db))) throw err;
    const rows = await readShardGroups<T>(db, read);
    if (rows === null) throw err;
    return { rows, partial: true };
  }
}

/**
 * The read run on every shard group, one command per worker (its groups' reads joined by `union
 * all`, each in parentheses with its own `order by` and `limit`); null when no worker answered.
 */
async function readShardGroups<T>(db: Queryable, read: AcrossCustomers): Promise<T[] | null> {
  // Co-located shards of the tables share their hash range: one group per range, on one worker.
  const placements = await db.query<{
    min: string;
    host: string;
    port: number;
    table: string;
    shard: string;
  }>(
    `select s.shardminvalue as min, p.nodename as host, p.nodeport as port,
            s.logicalrelid::regclass::text as "table", shard_name(s.logicalrelid, s.shardid) as shard
       from pg_dist_shard s join pg_dist_shard_placement p using (shardid)
      where s.logicalrelid = any($1::regclass[]) and p.shardstate = 1`,
    [read.tables],
  );
  const groups = new Map<string, { host: string; port: number; shards: Map<string, string> }>();
  for (const p of placements.rows) {
    const key = `${p.min}@${p.host}:${p.port}`;
    const group = groups.get(key) ?? { host: p.host, port: p.port, shards: new Map() };
    group.shards.set(p.table, p.shard);
    groups.set(key, group);
  }
  const byWorker = new Map<string, { host: string; port: number; reads: string[] }>();
  for (const g of groups.values()) {
    if (g.shards.size !== read.tables.length) continue;
    const key = `${g.host}:${g.port}`;
    const worker = byWorker.get(key) ?? { host: g.host, port: g.port, reads: [] };
    worker.reads.push(`(${withLiterals(onShards(read.sql, g.shards), read.params)})`);
    byWorker.set(key, worker);
  }
  const list = [...byWorker.values()];
  if (list.length === 0) return null;
  const answers = await db.query<{ success: boolean; result: string }>(
    'select success, result from master_run_on_worker($1::text[], $2::int[], $3::text[], true)',
    [
      list.map((w) => w.host),
      list.map((w) => w.port),
      list.map((w) => `select coalesce(json_agg(x), '[]') from (${w.reads.join(' union all ')}) x`),
    ],
  );
  const answered = answers.rows.filter((a) => a.success);
  if (answered.length === 0) return null;
  return answered.flatMap((a) => JSON.parse(a.result) as T[]);
}

/** The statement with each `$n` replaced by its parameter as a quoted literal (as `pg` sends it). */
export function withLiterals(sql: string, params: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => {
    const i = Number(n) - 1;
    if (i >= params.length) throw new Error(`the statement uses $${n}, and has ${params.length} parameters`);
    const v = pgUtils.prepareValue(params[i]);
    if (v === null) return 'null';
    if (typeof v !== 'string') throw new Error('a read across customers takes no binary parameter');
    return escapeLiteral(v);
  });
}

/** The statement with each table after `from` or `join` replaced by its shard's name. */
export function onShards(sql: string, shards: ReadonlyMap<string, string>): string {
  return sql.replace(
    /\b(from|join)(\s+)([a-z_]+)\b/gi,
    (whole, word: string, space: string, table: string) => {
      const shard = shards.get(table);
      return shard ? `${word}${space}${shard}` : whole;
    },
  );
}
