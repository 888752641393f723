// Forward-only numbered migrations (src/db/migrations/NNNN_name.sql: tables, indexes, data). All
// pending ones are applied in one transaction that first takes an advisory lock, and each is
// recorded with its checksum in that same transaction: two processes migrating one database at
// once apply each migration exactly once. An applied migration whose text changed (or whose file
// is gone) stops the start: the database would silently differ from what the files say. The SQL
// functions (src/db/functions/, function-files.ts) are applied after the migrations in the same
// transaction.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasCitus } from './citus.ts';
import type { Database, Queryable } from './database.ts';
import { applyFunctions, type FunctionFile, listFunctionFiles } from './function-files.ts';
import { checksum, splitStatements } from './sql-files.ts';

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

/** The start is refused: an applied migration's text is not what the files say now. */
export class MigrationChangedError extends Error {
  override name = 'MigrationChangedError';
}

/**
 * Applies pending migrations, then the function files whose text changed; returns the names of
 * the migrations applied by this call. Throws MigrationChangedError, having changed nothing, when
 * an applied migration was edited or removed.
 */
export async function migrate(
  db: Database,
  migrations = listMigrations(),
  functions: FunctionFile[] = listFunctionFiles(),
): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
    const applied = await appliedChecksums(tx);
    checkUnchanged(applied, migrations);
    const names: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.id)) continue;
      // Statements are run one by one: the extended protocol takes one statement per call.
      for (const statement of splitStatements(m.sql)) await tx.query(statement);
      await tx.query('insert into schema_migrations (id, name, checksum) values ($1, $2, $3)', [
        m.id,
        m.name,
        checksum(m.sql),
      ]);
      names.push(m.name);
    }
    // On Citus the function files re-create triggers on distributed tables, which Citus allows
    // only with this setting (db distribute sets it for the database too; a copy of the database
    // made from a template does not carry it).
    if (await hasCitus(tx)) await tx.query("select set_config('citus.enable_unsafe_triggers', 'on', true)");
    await applyFunctions(tx, functions);
    return names;
  });
}

/** The applied migrations' names and checksums by id (the table made when missing). */
async function appliedChecksums(tx: Queryable): Promise<Map<number, { name: string; checksum: string }>> {
  await tx.query(`create table if not exists schema_migrations (
    id integer primary key,
    name text not null,
    checksum text not null,
    applied_at timestamptz not null default now()
  )`);
  // A database migrated before checksums were recorded cannot be checked: its migrations 0011 to
  // 0014 defined functions that now live in src/db/functions/ (README: recreate it).
  const column = await tx.query(
    `select 1 from information_schema.columns
      where table_schema = current_schema() and table_name = 'schema_migrations' and column_name = 'checksum'`,
  );
  if (column.rows.length === 0)
    throw new MigrationChangedError(
      'the database was migrated before migrations were checksummed (schema_migrations has no checksum); recreate the database',
    );
  const done = await tx.query<{ id: number; name: string; checksum: string }>(
    'select id, name, checksum from schema_migrations',
  );
  return new Map(done.rows.map((r) => [r.id, { name: r.name, checksum: r.checksum }]));
}

/**
 * Migrations whose comments were reworded after they were applied (a comment names a function,
 * never a file path, which the import graph reads as an import; a comment cites
 * docs/reference/, never a document outside the repository). Their statements are the same,
 * statement for statement (splitStatements drops comment lines): each text they were applied
 * with, by its checksum, oldest first, is still accepted. test/db/migration-checksum.test.ts checks
 * each one.
 */
export const REWORDED_MIGRATIONS: ReadonlyMap<number, readonly string[]> = new Map([
  [3, ['2f05a884f1935d7ee332346cf3809e60f83157ad5c8264546d78176141af55c7']],
  [4, ['bb7abb3c3a062d093046f1324cc2e933c1571bb28bc6a7367c9d04616bd294f4']],
  [7, ['0d212e9b5aa5ce74402228564b4b9b02678913b98746345a82a0abd754dc2938']],
  [
    8,
    [
      '638b84162408700d467bfaf2212f41e8a7e95990e1a124224deca53e460f0a56',
      '0a22bd8005b46c6226faf2935468a2c722c52e256b601def62725fc632a4e41f',
    ],
  ],
  [9, ['b811597715f725fb3b06aabe0b85f22e5ade73e961cfcd2c600b48bf52fe58f9']],
  [10, ['2067186ca8562cabd50209349bf5b384d5d1c00930c549a9f326865de5dcab19']],
  [15, ['8c38d562f6a5dff78cfb9c76e3c98c09252d65b85dca8448590cb72221e4e9af']],
  [
    30,
    [
      '359480a3ebf5abb53055f69380bb73074a294f1cda58d8297a07ddc353774ff8',
      '6a5e19108f5ac6c8bd0e2cd0f1b724c517050f860ef777f884f78f3ee374c6d8',
    ],
  ],
  [40, ['7b27790089b222a83ca96c07b3441b4a9189122e62d0aa10b1ea859816dc0c3d']],
  [50, ['4c16bbb0abcefd831caa19d92ce16a7887e63230911d899e036826a2da1e569b']],
  [
    60,
    [
      'cf1df459179510f4c458447c3da6241a2783190ff4f44630f36f5d179d64c338',
      'c0bc0b454a9402ab14d39c77e949eb9126ba06c10f2ed622a940f68a913fb562',
    ],
  ],
  [65, ['463f147ff7838ceb21f6725aec628d11e9d2e9564196e01d4201610f544c0b57']],
  [70, ['d59681a1ce841914a91045e48f0dcd68ec4fc57a4c524984ec484f356748d6cf']],
  [
    75,
    [
      '8b13b4ae938ab1ae5ea1467fafbd2263f043d398eed8a92e95341481e7efefbe',
      '8af8a6dc966ffbe25c0977351d1e3b576a6b2070d7889332c2b8f61f41e47f7f',
    ],
  ],
  [
    80,
    [
      '5e0cac8e654774530e448166d20658be7ef93ed8f36ccc324a254a777b845b2d',
      '9a36ddd16f21cfb53df9303b55542319b95b5b2114dd15f2c4bed91b8230bde2',
    ],
  ],
  [
    81,
    [
      '82954921f7442df2e192f348bd5adb5940c62a12ed8feca4af4ad1f0ab79f454',
      'b9563e4a4a46ed7372d0d00db881138d62a213627ead99beb0e37206cf3a3436',
    ],
  ],
  [85, ['8a7499b714888d898bd1bcb9e4b73175bfaaa36bd3cf6d7442eecd2ab8496aae']],
  [90, ['0ec1049f657d23a5fb6b01736d942e2c07b616ee9ff1faf391d794699f4476e7']],
  [
    95,
    [
      '3ca45cde11b6ea9916ff24ded5ede315be8b5c05438391b356a83f5f776b9f92',
      'c21ed2d9bd3902034b79b52ac1a1461a810faeeafdf9635b77c5211bd7e04ee4',
    ],
  ],
  [96, ['4f1311a792b827278b686c5b3c2fdf9e032d679c6c56e8efb807a2fa2eeb6933']],
]);

/** Refuses, naming the first file, when an applied migration's text changed or its file is gone. */
function checkUnchanged(applied: Map<number, { name: string; checksum: string }>, migrations: Migration[]) {
  const byId = new Map(migrations.map((m) => [m.id, m]));
  for (const [id, done] of [...applied].sort((a, b) => a[0] - b[0])) {
    const m = byId.get(id);
    if (!m)
      throw new MigrationChangedError(
        `migration ${done.name}.sql was applied but its file is gone; restore it or recreate the database`,
      );
    const now = checksum(m.sql);
    if (now !== done.checksum && !REWORDED_MIGRATIONS.get(id)?.includes(done.checksum))
      throw new MigrationChangedError(
        `migration ${m.name}.sql was changed after it was applied (checksum ${done.checksum.slice(0, 12)}, now ${now.slice(0, 12)}); restore it or recreate the database`,
      );
  }
}
