// The database a single-database bench fills: a THROWAWAY PostgreSQL database when given its URL,
// else embedded PGlite in a temporary directory, removed afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Database, openPglite, openPostgres } from '../src/db/database.ts';

export async function withBenchDatabase(
  postgresUrl: string | undefined,
  tmpPrefix: string,
  fn: (name: 'postgres' | 'pglite', db: Database) => Promise<void>,
): Promise<void> {
  const dir = postgresUrl ? null : mkdtempSync(join(tmpdir(), tmpPrefix));
  const db = dir ? await openPglite(dir) : await openPostgres(postgresUrl!);
  try {
    await fn(dir ? 'pglite' : 'postgres', db);
  } finally {
    await db.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}
