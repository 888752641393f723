// The migration runner (docs/architecture.md#house-rules): forward-only numbered files, each recorded in the
// transaction that applies it, under an advisory lock so concurrent migrators apply it once.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Database, openPglite, openPostgres } from '../../src/db/database.ts';
import { listMigrations, migrate } from '../../src/db/migrate.ts';
import { splitStatements } from '../../src/db/sql-files.ts';

const BIN = resolve(import.meta.dirname, '../../bin/redeem-gateway.js');
// Migrations go to PostgreSQL itself, also when the suite runs through PgBouncer (docs/reference/running.md#postgresql-poolers-and-failover).
const DATABASE_URL = process.env.DATABASE_DIRECT_URL ?? process.env.DATABASE_URL;
const onPostgres = Boolean(DATABASE_URL);

async function recorded(db: Database) {
  const r = await db.query<{ id: number; name: string; n: number }>(
    'select id, min(name) as name, count(*)::int as n from schema_migrations group by id order by id',
  );
  return r.rows;
}

const expected = () => listMigrations().map((m) => ({ id: m.id, name: m.name, n: 1 }));

const tableExists = async (db: Database, name: string) =>
  (await db.query('select 1 from information_schema.tables where table_name = $1', [name])).rows.length > 0;

/** Checks shared by both databases, run on a database that has never been migrated. */
async function checkFreshDatabase(db: Database) {
  const all = listMigrations().map((m) => m.name);
  expect(await migrate(db)).toEqual(all);
  expect(await recorded(db)).toEqual(expected());
  expect(await tableExists(db, 'customers')).toBe(true);
  // The second run is a no-op: nothing applied, nothing recorded twice.
  expect(await migrate(db)).toEqual([]);
  expect(await migrate(db)).toEqual([]);
  expect(await recorded(db)).toEqual(expected());

  // A migration that fails leaves nothing behind: not its earlier statements, not the others
  // of the same run, and no record; the connection stays usable.
  const bad = [
    { id: 9001, name: '9001_good', sql: 'create table mig_good (x int);\n' },
    { id: 9002, name: '9002_bad', sql: 'create table mig_half (x int);\ncreate table mig_bad (;\n' },
  ];
  await expect(migrate(db, [...listMigrations(), ...bad])).rejects.toThrow();
  expect(await tableExists(db, 'mig_good')).toBe(false);
  expect(await tableExists(db, 'mig_half')).toBe(false);
  expect(await recorded(db)).toEqual(expected());
  expect((await db.query<{ one: number }>('select 1 as one')).rows).toEqual([{ one: 1 }]);

  // A later good migration is applied once, on top.
  expect(await migrate(db, [...listMigrations(), bad[0]!])).toEqual(['9001_good']);
  expect(await migrate(db, [...listMigrations(), bad[0]!])).toEqual([]);
  expect(await tableExists(db, 'mig_good')).toBe(true);
}

describe('migration files', () => {
  test('numbered uniquely and in order, each with statements', () => {
    const ms = listMigrations();
    expect(ms.length).toBeGreaterThan(0);
    expect(ms[0]!.id).toBe(1);
    expect(new Set(ms.map((m) => m.id)).size).toBe(ms.length);
    for (let i = 1; i < ms.length; i++) expect(ms[i]!.id).toBeGreaterThan(ms[i - 1]!.id);
    for (const m of ms) {
      expect(m.name).toMatch(/^\d{4}_[a-z0-9_]+$/);
      expect(splitStatements(m.sql).length).toBeGreaterThan(0);
    }
  });

  test('splitStatements splits on ; at line ends and drops comment lines', () => {
    expect(splitStatements('-- c\ncreate table a (x int);\n\ninsert into a values (1);  \n-- end\n')).toEqual(
      ['create table a (x int)', 'insert into a values (1)'],
    );
  });

  test('splitStatements keeps a $$ function body whole, its comments and semicolons too', () => {
    const body =
      'create function f() returns int\nlanguage plpgsql as $$\nbegin\n  -- why\n  perform 1;\n  return 1;\nend $$';
    expect(splitStatements(`-- c\n${body};\nselect f();\n`)).toEqual([body, 'select f()']);
  });
});

// A new PGlite database takes seconds to create, longer when other files run beside it.
test.skipIf(onPostgres)(
  'PGlite: a fresh database migrates once; a second run is a no-op',
  { timeout: 120_000 },
  async () => {
    const db = await openPglite(undefined);
    try {
      await checkFreshDatabase(db);
    } finally {
      await db.close();
    }
  },
);

describe.skipIf(!onPostgres)('PostgreSQL', () => {
  const created: string[] = [];
  let admin: pg.Client;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
  });
  afterAll(async () => {
    for (const name of created) await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  });

  /** A new empty database on the same server; dropped after the file. */
  async function throwawayDatabase(): Promise<string> {
    const name = `rg_mig_${randomBytes(6).toString('hex')}`;
    await admin.query(`create database ${name}`);
    created.push(name);
    const url = new URL(DATABASE_URL!);
    url.pathname = `/${name}`;
    return url.toString();
  }

  function runMigrateProcess(url: string) {
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
      const child = spawn(process.execPath, [BIN, 'migrate'], {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          DATABASE_URL: url,
          CODE_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      child.on('exit', (code) => done({ code, stdout, stderr }));
    });
  }

  test('a fresh database migrates once; a second run is a no-op', async () => {
    const db = await openPostgres(await throwawayDatabase());
    try {
      await checkFreshDatabase(db);
    } finally {
      await db.close();
    }
  });

  test('two `migrate` processes at once: both exit 0, each migration applied exactly once', async () => {
    const url = await throwawayDatabase();
    const [a, b] = await Promise.all([runMigrateProcess(url), runMigrateProcess(url)]);
    expect({ code: a.code, stderr: a.stderr }).toEqual({ code: 0, stderr: '' });
    expect({ code: b.code, stderr: b.stderr }).toEqual({ code: 0, stderr: '' });
    // One process applied everything, the other found the database up to date.
    const outputs = [a.stdout.trim(), b.stdout.trim()].sort();
    expect(outputs).toEqual([
      `applied: ${listMigrations()
        .map((m) => m.name)
        .join(', ')}`,
      'database is up to date',
    ]);

    const db = await openPostgres(url);
    try {
      expect(await recorded(db)).toEqual(expected());
      expect(await tableExists(db, 'customers')).toBe(true);
    } finally {
      await db.close();
    }
    // And once more: a no-op.
    const again = await runMigrateProcess(url);
    expect({ code: again.code, stdout: again.stdout, stderr: again.stderr }).toEqual({
      code: 0,
      stdout: 'database is up to date\n',
      stderr: '',
    });
  });

  test('several migrate() calls at once in one process, on separate pools', async () => {
    const url = await throwawayDatabase();
    const dbs = await Promise.all([1, 2, 3, 4].map(() => openPostgres(url, { max: 2 })));
    try {
      const results = await Promise.all(dbs.map((db) => migrate(db)));
      expect(results.flat().sort()).toEqual(
        listMigrations()
          .map((m) => m.name)
          .sort(),
      );
      expect(await recorded(dbs[0]!)).toEqual(expected());
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  });
});
