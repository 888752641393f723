// Every SQL function of the service lives once, in src/db/functions/<wing>.sql, and is applied
// with `create or replace` after the migrations, in the migrations' advisory-locked transaction
// (migrate.ts): two processes starting at once apply a changed file once. A file is applied
// whole, and only when its text changed since it was last applied (schema_functions keeps its
// checksum), so an unchanged start writes nothing.
//
// `create or replace` cannot change a function's argument or result types. A wing whose
// function's signature changes starts its file with the `drop function if exists old(...)` lines
// it needs: the file then says what it replaces, and the runner needs no knowledge of SQL
// signatures (dropping whatever is not in the files would also drop functions an operator added).
// A function removed from every file stays in an existing database until such a drop line says so.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Queryable } from './database.ts';
import { checksum, splitStatements } from './sql-files.ts';

const FUNCTIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'functions');

export interface FunctionFile {
  /** The file name, e.g. `billing.sql`. */
  name: string;
  sql: string;
}

/** The wing files in name order (a PL/pgSQL body is checked at its first call, not here). */
export function listFunctionFiles(dir = FUNCTIONS_DIR): FunctionFile[] {
  return readdirSync(dir)
    .filter((f) => /^[a-z0-9-]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ name: f, sql: readFileSync(join(dir, f), 'utf8') }));
}

/**
 * Applies the function files whose text changed since they were last applied; returns their
 * names. Runs inside migrate()'s transaction, after its advisory lock and the migrations.
 */
export async function applyFunctions(tx: Queryable, files: FunctionFile[]): Promise<string[]> {
  await tx.query(`create table if not exists schema_functions (
    name text primary key,
    checksum text not null,
    applied_at timestamptz not null default now()
  )`);
  const done = await tx.query<{ name: string; checksum: string }>(
    'select name, checksum from schema_functions',
  );
  const applied = new Map(done.rows.map((r) => [r.name, r.checksum]));
  const names: string[] = [];
  for (const f of files) {
    const sum = checksum(f.sql);
    if (applied.get(f.name) === sum) continue;
    for (const statement of splitStatements(f.sql)) await tx.query(statement);
    await tx.query(
      `insert into schema_functions (name, checksum) values ($1, $2)
       on conflict (name) do update set checksum = excluded.checksum, applied_at = now()`,
      [f.name, sum],
    );
    names.push(f.name);
  }
  return names;
}
