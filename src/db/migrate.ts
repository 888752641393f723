// Forward-only numbered migrations (src/db/migrations/NNNN_name.sql). All pending ones are applied
// in one transaction that first takes an advisory lock, and each is recorded in that same
// transaction: two processes migrating one database at once apply each migration exactly once.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from './database.ts';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');
// Arbitrary constant shared by every process of this service: "redeem-gateway migrations".
const MIGRATION_LOCK_ID = 7_203_118_450;

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({
      id: Number(f.slice(0, 4)),
      name: f.replace(/\.sql$/, ''),
      sql: readFileSync(join(dir, f), 'utf8'),
    }));
}

/** Applies pending migrations; returns the names applied by this call. */
export async function migrate(db: Database, migrations = listMigrations()): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
    await tx.query(`create table if not exists schema_migrations (
      id integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`);
    const done = await tx.query<{ id: number }>('select id from schema_migrations');
    const applied = new Set(done.rows.map((r) => r.id));
    const names: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.id)) continue;
      // Statements are run one by one: the extended protocol takes one statement per call.
      for (const statement of splitStatements(m.sql)) await tx.query(statement);
      await tx.query('insert into schema_migrations (id, name) values ($1, $2)', [m.id, m.name]);
      names.push(m.name);
    }
    return names;
  });
}

/**
 * Splits a migration file on `;` at line ends, outside `$$`-quoted function bodies (migration
 * 0011 defines PL/pgSQL functions); comment lines outside bodies are dropped.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  let inBody = false;
  for (const line of sql.split('\n')) {
    if (!inBody && line.trim().startsWith('--')) continue;
    current.push(line);
    // Each `$$` opens or closes a body.
    if ((line.match(/\$\$/g)?.length ?? 0) % 2 === 1) inBody = !inBody;
    if (!inBody && /;\s*$/.test(line)) {
      statements.push(current.join('\n').replace(/;\s*$/, '').trim());
      current = [];
    }
  }
  statements.push(current.join('\n').trim());
  return statements.filter(Boolean);
}
