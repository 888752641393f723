// Migrations at start: on PostgreSQL itself (DATABASE_DIRECT_URL) when DATABASE_URL is a pooler in
// transaction mode, over the process's own database handle otherwise (contract 13.10). A
// migration may build an index on a large table or wait for another process's lock: no deadlines.
import { type Database, openPostgres, withoutDeadlines } from './database.ts';
import { migrate } from './migrate.ts';

export async function migrateDirect(
  config: { DATABASE_DIRECT_URL?: string | undefined; DATABASE_TIMEOUT_MS: number },
  db: Database,
): Promise<string[]> {
  if (!config.DATABASE_DIRECT_URL || db.kind !== 'postgres') return migrate(withoutDeadlines(db));
  const direct = await openPostgres(config.DATABASE_DIRECT_URL, {
    max: 1,
    connectTimeoutMs: config.DATABASE_TIMEOUT_MS,
    poolMode: 'session',
  });
  try {
    return await migrate(withoutDeadlines(direct));
  } finally {
    await direct.close();
  }
}
