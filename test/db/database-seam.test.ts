// The database seam (src/db/database.ts) behaves the same on both databases: a parameter reads
// back as the same value, a named statement is parsed once and survives a failed call, a
// statement outside a transaction never runs inside one, and a transaction's handle is dead
// once the transaction ended. On PGlite each statement is one exchange with the WASM backend
// (src/db/pglite/statements.ts), on a thread of its own (src/db/pglite/worker.ts), so these are
// the promises that path must keep; and that thread neither blocks the caller's nor keeps an
// idle process alive.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openPglite } from '../../src/db/database.ts';
import { poolModeFromEnv } from '../../src/db/pool-mode.ts';
import { onPostgres, openTestDatabase, type TestDatabase } from '../helpers/db.ts';

let t: TestDatabase;
const table = `seam_${randomBytes(4).toString('hex')}`;
beforeAll(async () => {
  t = await openTestDatabase();
  await t.db.query(`create table ${table} (n integer not null)`);
});
afterAll(async () => {
  await t?.db.query(`drop table if exists ${table}`);
  await t?.close();
});

test('a parameter reads back as the value it was, named or not', async () => {
  const when = new Date('2026-11-24T23:08:41.980Z');
  const values = [
    when,
    { codes: ['A1', 2], nested: { ok: true } },
    [3, 1, 2],
    true,
    null,
    9_007_199_254_740_991,
    'héllo',
  ];
  const sql = `select $1::timestamptz as at, $2::jsonb as doc, $3::integer[] as list, $4::boolean as flag,
                      $5::text as nothing, $6::bigint as big, $7::text as word`;
  const expected = {
    at: when,
    doc: { codes: ['A1', 2], nested: { ok: true } },
    list: [3, 1, 2],
    flag: true,
    nothing: null,
    big: 9_007_199_254_740_991,
    word: 'héllo',
  };
  expect((await t.db.query(sql, values)).rows).toEqual([expected]);
  expect((await t.db.query(sql, values, 'seam_values')).rows).toEqual([expected]);
  expect((await t.db.query(sql, values, 'seam_values')).rows).toEqual([expected]);
});

test('a named statement keeps working after a call whose value did not fit', async () => {
  const sql = 'select $1::integer + 1 as n';
  expect((await t.db.query(sql, ['1'], 'seam_plus_one')).rows).toEqual([{ n: 2 }]);
  await expect(t.db.query(sql, ['one'], 'seam_plus_one')).rejects.toMatchObject({ code: '22P02' });
  expect((await t.db.query(sql, ['41'], 'seam_plus_one')).rows).toEqual([{ n: 42 }]);
  // Inside a transaction too, and the transaction's failure rolls back only its own work.
  await expect(
    t.db.transaction(async (tx) => {
      await tx.query(`insert into ${table} values (7)`);
      await tx.query(sql, ['seven'], 'seam_plus_one');
    }),
  ).rejects.toMatchObject({ code: '22P02' });
  expect((await t.db.query(`select count(*)::integer as n from ${table} where n = 7`)).rows).toEqual([
    { n: 0 },
  ]);
});

test('a named statement that does not parse fails with its own error every time', async () => {
  for (let i = 0; i < 2; i++)
    await expect(t.db.query('selec 1', [], 'seam_broken')).rejects.toMatchObject({ code: '42601' });
});

test('a rows count is the rows a write touched', async () => {
  const r = await t.db.query(
    `insert into ${table} select g from generate_series(100, 102) g`,
    [],
    'seam_insert',
  );
  expect(r.rowCount).toBe(3);
  const d = await t.db.query(`delete from ${table} where n >= $1`, [100]);
  expect(d.rowCount).toBe(3);
});

test('a statement outside a transaction never runs inside it', async () => {
  let outside: Promise<unknown> | undefined;
  await expect(
    t.db.transaction(async (tx) => {
      await tx.query(`insert into ${table} values (1)`);
      // Sent while the transaction is open: on PGlite's one connection it must wait for the
      // transaction's end, not join it (the rollback below would undo it).
      outside = t.db.query(`insert into ${table} values (2)`, [], 'seam_outside');
      await tx.query(`insert into ${table} values (3)`);
      throw new Error('roll back');
    }),
  ).rejects.toThrow('roll back');
  await outside;
  const rows = await t.db.query<{ n: number }>(`select n from ${table} where n in (1, 2, 3) order by n`);
  expect(rows.rows).toEqual([{ n: 2 }]);
});

test("a transaction's handle runs nothing once the transaction ended", async () => {
  let handle: Parameters<Parameters<typeof t.db.transaction>[0]>[0] | undefined;
  await t.db.transaction(async (tx) => {
    handle = tx;
    await tx.query('select 1');
  });
  await expect(handle!.query(`insert into ${table} values (4)`)).rejects.toThrow('the transaction has ended');
  expect((await t.db.query(`select count(*)::integer as n from ${table} where n = 4`)).rows).toEqual([
    { n: 0 },
  ]);
});

// Through a pooler in transaction mode (DATABASE_POOL_MODE=transaction) names are not sent at
// all: every statement is parsed each time, and no name has a text to keep.
test.skipIf(poolModeFromEnv() === 'transaction')('one statement name is one text', async () => {
  await t.db.query('select 1 as n', [], 'seam_one_text');
  await expect(t.db.query('select 2 as n', [], 'seam_one_text')).rejects.toThrow(/different statement/);
});

test.skipIf(onPostgres)("PGlite's statements do not stop this thread", async () => {
  const db = await openPglite(undefined);
  try {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const started = performance.now();
    // Hundreds of milliseconds of PostgreSQL's own work (on PGlite's former place, this thread,
    // no timer fired until it ended).
    await db.query('select count(*) from generate_series(1, 2000000)');
    const took = performance.now() - started;
    clearInterval(timer);
    expect(took).toBeGreaterThan(100);
    expect(ticks).toBeGreaterThan(took / 10 / 4);
  } finally {
    await db.close();
  }
});

test.skipIf(onPostgres)('an idle embedded database, never closed, lets its process end', async () => {
  // The built service, as the server runs it (the global setup built dist/).
  const database = join(import.meta.dirname, '..', '..', 'dist', 'db', 'database.js');
  const script = `import { openPglite } from ${JSON.stringify(database)};
    const db = await openPglite(undefined);
    const r = await db.query('select 41 + $1::integer as n', [1]);
    process.stdout.write(String(r.rows[0].n));`;
  const file = join(mkdtempSync(join(tmpdir(), 'rg-seam-')), 'idle.mjs');
  writeFileSync(file, script);
  const { stdout } = await promisify(execFile)(process.execPath, [file], { timeout: 30_000 });
  rmSync(dirname(file), { recursive: true, force: true });
  expect(stdout).toBe('42');
});
