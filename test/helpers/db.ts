// A real database for a test file: a copy of the migrated PGlite template, or the file's own
// PostgreSQL database (DATABASE_URL, set per file by file-database.ts). Tests never truncate:
// each makes its own customers.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { type Database, openPglite, openPostgres } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';

export const onPostgres = Boolean(process.env.DATABASE_URL);
/** On a Citus coordinator (global-setup found its workers): the customer tables are sharded. */
export const onCitus = onPostgres && inject('citusWorkers').length > 0;

export interface TestDatabase {
  db: Database;
  /** The PGlite directory (for a server process started on the same data), or undefined. */
  dir: string | undefined;
  close(): Promise<void>;
}

/** `poolMax`: connections of the PostgreSQL pool (default: the pool's own default). */
export async function openTestDatabase(opts: { poolMax?: number } = {}): Promise<TestDatabase> {
  if (process.env.DATABASE_URL) {
    const db = await openPostgres(process.env.DATABASE_URL, opts.poolMax ? { max: opts.poolMax } : {});
    await migrate(db);
    return { db, dir: undefined, close: () => db.close() };
  }
  const template = inject('pgliteTemplate');
  const dir = mkdtempSync(join(tmpdir(), 'rg-test-'));
  if (template) cpSync(template, dir, { recursive: true });
  const db = await openPglite(dir);
  await migrate(db);
  return {
    db,
    dir,
    async close() {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
