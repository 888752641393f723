// On a Citus coordinator (DATABASE_URL names a database with the citus extension): a test
// database is a database on every node. The template is made on each node and put together
// (the extension, the coordinator and its workers registered, migrated, the tables distributed);
// a test file's database is that template cloned on every node under one name, which clones the
// shards with the metadata that finds them. Elsewhere these helpers are not used.
import pg from 'pg';
import { databaseUrl } from './database-url.ts';

export interface Node {
  host: string;
  port: number;
}

/** The workers of a Citus coordinator's database, or null when it is not one. */
export async function citusWorkers(admin: pg.Client): Promise<Node[] | null> {
  const ext = await admin.query("select 1 from pg_extension where extname = 'citus'");
  if (ext.rows.length === 0) return null;
  const r = await admin.query<{ host: string; port: number }>(
    "select nodename as host, nodeport as port from pg_dist_node where groupid > 0 and noderole = 'primary' order by nodeid",
  );
  return r.rows;
}

function nodeUrl(base: string, node: Node, db: string): string {
  const url = new URL(databaseUrl(base, db));
  url.hostname = node.host;
  url.port = String(node.port);
  return url.toString();
}

async function onNode<T>(base: string, node: Node, db: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: nodeUrl(base, node, db) });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

function coordinatorOf(base: string): Node {
  const url = new URL(base);
  return { host: url.hostname, port: Number(url.port || 5432) };
}

/** An empty Citus database `name`: made on every node, the extension in each, the workers registered. */
export async function makeCitusDatabase(base: string, workers: Node[], name: string): Promise<void> {
  const coordinator = coordinatorOf(base);
  const maintenance = new URL(base).pathname.slice(1);
  for (const node of [coordinator, ...workers]) {
    await onNode(base, node, maintenance, (c) => c.query(`create database ${name}`));
    await onNode(base, node, name, (c) => c.query('create extension citus'));
  }
  await onNode(base, coordinator, name, async (c) => {
    await c.query('select citus_set_coordinator_host($1, $2)', [coordinator.host, coordinator.port]);
    for (const w of workers) await c.query('select citus_add_node($1, $2)', [w.host, w.port]);
  });
}

/** The template closed to connections on every node (Citus's maintenance daemon included), so it can be cloned. */
export async function closeTemplate(base: string, workers: Node[], name: string): Promise<void> {
  const maintenance = new URL(base).pathname.slice(1);
  for (const node of [coordinatorOf(base), ...workers])
    await onNode(base, node, maintenance, async (c) => {
      await c.query(`alter database ${name} with allow_connections false`);
      await c.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name]);
    });
}

/**
 * Runs `sql` (create or drop database …) on every node: the workers at once, the coordinator with
 * them when creating and after them when dropping. A database a retried create already made on a
 * node is left as it is.
 */
export async function onEveryNode(base: string, workers: Node[], sql: string): Promise<void> {
  const maintenance = new URL(base).pathname.slice(1);
  const run = (node: Node) =>
    onNode(base, node, maintenance, (c) =>
      c.query(sql).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err;
      }),
    );
  const coordinator = coordinatorOf(base);
  if (/^\s*drop/i.test(sql)) {
    await Promise.all(workers.map(run));
    await run(coordinator);
  } else await Promise.all([coordinator, ...workers].map(run));
}
