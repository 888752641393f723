// The database's commands. `redeem-gateway migrate`: pending migrations applied (and, on a new
// Citus database, its tables distributed). `redeem-gateway db distribute`: a database migrated on
// one PostgreSQL server, now a Citus coordinator with workers, gets its customer tables
// distributed in place while the service serves (Citus's create_distributed_table_concurrently,
// one table at a time). docs/running/citus.md has the whole move.
import { join, resolve } from 'node:path';
import type { Config } from '../config.ts';
import { distributeFunctions, distributeTables, hasCitus, shardWorkerCount } from '../db/citus.ts';
import { lockDataDir } from '../db/data-dir-lock.ts';
import { openDatabase, openPostgres, withoutDeadlines } from '../db/database.ts';
import { migrate } from '../db/migrate.ts';
import { migrateAndPlace } from '../db/migrate-direct.ts';

export async function runMigrate(config: Config, out: (line: string) => void): Promise<void> {
  const lock = config.DATABASE_URL ? undefined : lockDataDir(resolve(config.DATA_DIR));
  const db = await openDatabase({
    // Behind a transaction pooler, migrations go to PostgreSQL itself.
    databaseUrl: config.DATABASE_DIRECT_URL ?? config.DATABASE_URL,
    dataDir: join(resolve(config.DATA_DIR), 'pglite'),
  });
  try {
    const applied = await migrateAndPlace(withoutDeadlines(db), (line) => process.stderr.write(`${line}\n`));
    out(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  } finally {
    await db.close();
    lock?.release();
  }
}

export const DB_HELP = `redeem-gateway db distribute

  On a Citus coordinator (DATABASE_DIRECT_URL or DATABASE_URL, with the citus extension and at
  least one worker): applies pending migrations, then distributes every customer table by its
  customer id, online. Prints each table as it is distributed. Idempotent.
`;

export async function runDb(
  args: string[],
  env: { DATABASE_URL?: string | undefined; DATABASE_DIRECT_URL?: string | undefined },
  fail: (message: string) => Error,
  out: (line: string) => void,
): Promise<void> {
  if (args[0] !== 'distribute' || args.length > 1) {
    if (args[0] === 'help' || args[0] === '--help') return out(DB_HELP.trimEnd());
    throw fail(`usage: redeem-gateway db distribute (try: redeem-gateway db help)`);
  }
  const url = env.DATABASE_DIRECT_URL ?? env.DATABASE_URL;
  if (!url) throw fail('db distribute needs DATABASE_URL: the embedded database is one server by design');
  // No deadlines: a large table takes its time to copy.
  const db = withoutDeadlines(
    await openPostgres(url, {
      max: 1,
      poolMode: 'session',
      statementTimeoutMs: 0,
      idleInTransactionTimeoutMs: 0,
    }),
  );
  try {
    if (!(await hasCitus(db)))
      throw fail(
        'the database has no citus extension: install Citus, "create extension citus", and add the workers first (docs/running/citus.md)',
      );
    if ((await shardWorkerCount(db)) === 0)
      throw fail('the Citus coordinator has no worker to hold shards: citus_add_node first');
    await migrate(db);
    const done = await distributeTables(db, { concurrently: true });
    await distributeFunctions(db);
    out(done.length ? `distributed: ${done.join(', ')}` : 'every customer table is already distributed');
  } finally {
    await db.close();
  }
}
