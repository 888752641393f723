// Migrations are checksummed and functions are not migrations (docs/architecture.md#house-rules): an applied
// migration edited afterwards refuses the start with one line naming the file; a function file is
// re-applied only when its text changed. Edits are made to copies, never to src/.
import { spawn } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { listFunctionFiles } from '../../src/db/function-files.ts';
import { listMigrations, migrate, REWORDED_MIGRATIONS } from '../../src/db/migrate.ts';
import { checksum } from '../../src/db/sql-files.ts';
import { openTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { databaseEnv, freePort, TEST_ADMIN_TOKEN, TEST_CODE_KEY } from '../helpers/process.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const dirs: string[] = [];
let t: TestDatabase;

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rg-mig-copy-'));
  dirs.push(dir);
  return dir;
}

/** A copy of src/db/migrations (or functions) to edit. */
function copyOf(sub: 'migrations' | 'functions'): string {
  const dir = tempDir();
  cpSync(join(ROOT, 'src', 'db', sub), dir, { recursive: true });
  return dir;
}

beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(async () => {
  await t.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const CHANGED =
  /^migration 0002_stock\.sql was changed after it was applied \(checksum [0-9a-f]{12}, now [0-9a-f]{12}\); restore it or recreate the database$/;

test('an applied migration edited afterwards is refused, naming the file, and nothing is applied', async () => {
  const dir = copyOf('migrations');
  expect(await migrate(t.db, listMigrations(dir))).toEqual([]);
  // Even a comment: the database applied the text it had then, and nothing says what it was.
  appendFileSync(join(dir, '0002_stock.sql'), '\n-- an edit after the fact\n');
  const extra = { id: 9101, name: '9101_after', sql: 'create table mig_after_edit (x int);\n' };
  await expect(migrate(t.db, [...listMigrations(dir), extra])).rejects.toThrow(CHANGED);
  const table = await t.db.query(
    "select 1 from information_schema.tables where table_name = 'mig_after_edit'",
  );
  expect(table.rows).toEqual([]);
});

test('a migration whose comments were reworded after it was applied still passes with the text it was applied with', async () => {
  expect(await migrate(t.db)).toEqual([]);
  const recorded = async (id: number) =>
    (await t.db.query<{ checksum: string }>('select checksum from schema_migrations where id = $1', [id]))
      .rows[0]!.checksum;
  for (const [id, formers] of REWORDED_MIGRATIONS) {
    const now = await recorded(id);
    const file = listMigrations().find((m) => m.id === id)!;
    // Applied from this checkout: its recorded checksum is today's text; each former one differs.
    expect(now).toBe(checksum(file.sql));
    expect(formers.length).toBeGreaterThan(0);
    expect(formers).not.toContain(now);
    try {
      // A database migrated before a rewording recorded a former text: accepted, whichever.
      for (const former of formers) {
        await t.db.query('update schema_migrations set checksum = $2 where id = $1', [id, former]);
        expect(await migrate(t.db)).toEqual([]);
      }
      // Any other text is still a change.
      await t.db.query('update schema_migrations set checksum = $2 where id = $1', [id, 'f'.repeat(64)]);
      await expect(migrate(t.db)).rejects.toThrow(
        new RegExp(`^migration ${file.name}\\.sql was changed after it was applied`),
      );
    } finally {
      await t.db.query('update schema_migrations set checksum = $2 where id = $1', [id, now]);
    }
  }
});

test('an applied migration whose file is gone is refused, naming it', async () => {
  const dir = copyOf('migrations');
  rmSync(join(dir, '0003_burst_limit.sql'));
  await expect(migrate(t.db, listMigrations(dir))).rejects.toThrow(
    /^migration 0003_burst_limit\.sql was applied but its file is gone; restore it or recreate the database$/,
  );
  // The real files still pass.
  expect(await migrate(t.db)).toEqual([]);
});

test('a function file is applied again only when its text changed', async () => {
  const stamps = async () =>
    (
      await t.db.query<{ name: string; checksum: string; at: string }>(
        'select name, checksum, applied_at::text as at from schema_functions order by name',
      )
    ).rows;
  const before = await stamps();
  expect(before.map((r) => r.name)).toEqual(listFunctionFiles().map((f) => f.name));
  expect(await migrate(t.db)).toEqual([]);
  expect(await stamps()).toEqual(before);

  const dir = copyOf('functions');
  appendFileSync(
    join(dir, 'stock.sql'),
    '\n-- A function added in a copy.\ncreate or replace function mig_probe() returns integer\nlanguage sql as $$ select 7 $$;\n',
  );
  await migrate(t.db, listMigrations(), listFunctionFiles(dir));
  const after = await stamps();
  const changed = after.filter((r, i) => r.checksum !== before[i]!.checksum || r.at !== before[i]!.at);
  expect(changed.map((r) => r.name)).toEqual(['stock.sql']);
  expect((await t.db.query<{ n: number }>('select mig_probe() as n')).rows).toEqual([{ n: 7 }]);
  // Unchanged since: not applied again.
  await migrate(t.db, listMigrations(), listFunctionFiles(dir));
  expect(await stamps()).toEqual(after);
  // Back to the real text: applied once more.
  await migrate(t.db);
  expect((await stamps()).find((r) => r.name === 'stock.sql')!.checksum).toBe(
    before.find((r) => r.name === 'stock.sql')!.checksum,
  );
});

/** A copy of the program's sources whose files can be edited, on the repository's node_modules. */
function programCopy(): string {
  const root = tempDir();
  cpSync(join(ROOT, 'src'), join(root, 'src'), { recursive: true });
  cpSync(join(ROOT, 'tsconfig.json'), join(root, 'tsconfig.json'));
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'copy', private: true, type: 'module' }));
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  return root;
}

test('the server refuses to start on an edited applied migration: exit 1, one line naming the file', {
  timeout: 60_000,
}, async () => {
  const root = programCopy();
  const dataDir = tempDir();
  // A database migrated by the unedited files: the PGlite template, or this file's PostgreSQL one.
  const template = process.env.DATABASE_URL ? '' : inject('pgliteTemplate');
  if (template) cpSync(template, join(dataDir, 'pglite'), { recursive: true });
  appendFileSync(join(root, 'src', 'db', 'migrations', '0002_stock.sql'), '\n-- an edit after the fact\n');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    ADMIN_PORT: String(await freePort()),
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    CODE_ENCRYPTION_KEY: TEST_CODE_KEY,
    ...databaseEnv(),
  };
  const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    // From the copy's sources (tsx), not its build: a build would print its own line first.
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'cli.ts'), 'serve'], {
      cwd: root,
      env,
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
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  expect(result.stderr.split('\n')).toEqual([expect.stringMatching(CHANGED_LINE), '']);
  // Nothing was changed: the real files still find the database up to date.
  expect(await migrate(t.db)).toEqual([]);
});

const CHANGED_LINE = new RegExp(`^error: ${CHANGED.source.slice(1)}`);
