// Migrations at start: on PostgreSQL itself (DATABASE_DIRECT_URL) when DATABASE_URL is a pooler in
// transaction mode, over the process's own database handle otherwise (docs/reference/running.md#postgresql-poolers-and-failover). A
// migration may build an index on a large table or wait for another process's lock: no deadlines.
// On a Citus coordinator the customer tables are then distributed (citus.ts).
import { distributeFunctions, placeTables } from './citus.ts';
import { type Database, openPostgres, withoutDeadlines } from './database.ts';
import { migrate } from './migrate.ts';

/**
 * Pending migrations applied, then the tables placed; the applied migrations' names. A Citus
 * database that holds customers but is not distributed yet is served as it is, with a warning.
 */
export async function migrateAndPlace(
  db: Database,
  warn: (line: string) => void = () => undefined,
): Promise<string[]> {
  const applied = await migrate(db);
  if (db.kind !== 'postgres') return applied;
  // In one transaction: a start that stops half-way leaves no table half-placed.
  const placed = await db.transaction((tx) => placeTables(tx));
  if (placed.pending)
    warn(
      'the database has the citus extension but its customer tables are not distributed: every row stays on the coordinator until "redeem-gateway db distribute" (docs/running/citus.md)',
    );
  if (placed.sharded) await distributeFunctions(db);
  return applied;
}

export async function migrateDirect(
  config: { DATABASE_DIRECT_URL?: string | undefined; DATABASE_TIMEOUT_MS: number },
  db: Database,
  warn?: (line: string) => void,
): Promise<string[]> {
  if (!config.DATABASE_DIRECT_URL || db.kind !== 'postgres')
    return migrateAndPlace(withoutDeadlines(db), warn);
  const direct = await openPostgres(config.DATABASE_DIRECT_URL, {
    max: 1,
    connectTimeoutMs: config.DATABASE_TIMEOUT_MS,
    poolMode: 'session',
  });
  try {
    return await migrateAndPlace(withoutDeadlines(direct), warn);
  } finally {
    await direct.close();
  }
}
