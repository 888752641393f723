// The database a single-database bench fills: a THROWAWAY PostgreSQL database when given its URL,
// else embedded PGlite in a temporary directory, removed afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Database, openPglite, openPostgres } from '../src/db/database.ts';

/**
 * Throws unless the PostgreSQL database at `url` holds no table of its own: a bench fills its
 * database with customers and keys under a code key of its own, so a database an earlier run (or
 * anything else) used would fail half-way ("CODE_ENCRYPTION_KEY lacks key id …"), or worse, be
 * written into. Checked before the run starts.
 */
export async function refuseUsedDatabase(url: string): Promise<void> {
  const db = await openPostgres(url, { max: 1 });
  try {
    const r = await db.query<{ name: string; tables: string }>(
      `select current_database() as name, count(*)::text as tables
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where c.relkind in ('r', 'p') and n.nspname <> 'information_schema' and n.nspname not like 'pg\\_%'`,
    );
    const { name, tables } = r.rows[0]!;
    if (Number(tables) > 0)
      throw new Error(
        `database "${name}" already has ${tables} table(s): the bench needs a new, empty database ` +
          `that it may fill (createdb NAME; dropdb NAME after)`,
      );
  } finally {
    await db.close();
  }
}

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
