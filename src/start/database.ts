// Opening the service's database at start: PostgreSQL when DATABASE_URL is set, else the embedded
// PGlite in the data directory; then the migrations and SQL functions, without statement deadlines.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { INSTANCE_ID } from '../core/instance.ts';
import { type Database, describeConnectionError, isConnectionError, openDatabase } from '../db/database.ts';
import { processApplicationName } from '../db/listener.ts';
import { migrateDirect } from '../db/migrate-direct.ts';
import { ensurePrivateDir } from './secrets.ts';

export class DatabaseUnreachableError extends Error {
  override name = 'DatabaseUnreachableError';
}

/**
 * PostgreSQL unreachable at start: one clear line and a non-zero exit (the supervisor restarts the
 * process); once running, losing the database never stops it (docs/reference/running.md#database-loss).
 */
export async function openServiceDatabase(
  config: Config,
  dataDir: string,
  logger: Logger,
): Promise<Database> {
  if (!config.DATABASE_URL) ensurePrivateDir(join(dataDir, 'pglite'));
  let lastConnectionLog = 0;
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: join(dataDir, 'pglite'),
    postgres: {
      max: config.DATABASE_POOL_MAX,
      connectTimeoutMs: config.DATABASE_TIMEOUT_MS,
      statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
      idleInTransactionTimeoutMs: config.DATABASE_IDLE_TX_TIMEOUT_MS,
      poolMode: config.DATABASE_POOL_MODE,
      // Names this process's writes in its wake-up notifications (src/db/listener.ts).
      applicationName: processApplicationName(INSTANCE_ID),
      onConnectionError(err) {
        // Every pooled connection dies at once in a failover: one line a second is enough.
        if (Date.now() - lastConnectionLog < 1000) return;
        lastConnectionLog = Date.now();
        logger.warn({ err }, 'database connection lost');
      },
    },
  }).catch((err: unknown) => {
    if (config.DATABASE_URL && isConnectionError(err))
      throw new DatabaseUnreachableError(
        `database unreachable at start (${describeConnectionError(err)}); check DATABASE_URL and that PostgreSQL is up`,
        { cause: err },
      );
    throw err;
  });
  try {
    // On PostgreSQL itself when DATABASE_URL is a transaction pooler (DATABASE_DIRECT_URL).
    const applied = await migrateDirect(config, db, (line) => logger.warn(line));
    if (applied.length) logger.info({ applied }, 'migrations applied');
    return db;
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}
