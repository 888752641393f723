// Enum-like columns of the tables a redeem writes are domains (migration 0070): a
// database migrated before it keeps its rows, loses those tables' enum-like CHECKs, refuses the
// same bad values with the same SQLSTATE, and still wakes workers when an async job is queued
// (the trigger that named jobs.status is made again by wake.sql in the upgrade's transaction).
// Both databases: PGlite, or a throwaway database on the suite's PostgreSQL server.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { type Database, openPglite, openPostgres } from '../../src/db/database.ts';
import { listMigrations, migrate } from '../../src/db/migrate.ts';

const DATABASE_URL = process.env.DATABASE_DIRECT_URL ?? process.env.DATABASE_URL;
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A database that has never been migrated, with its URL on PostgreSQL. */
async function emptyDatabase(): Promise<{ db: Database; url: string | null }> {
  if (!DATABASE_URL) {
    const db = await openPglite(undefined);
    cleanups.push(() => db.close());
    return { db, url: null };
  }
  const name = `rg_dom_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(DATABASE_URL);
  url.pathname = `/${name}`;
  const db = await openPostgres(url.toString());
  cleanups.push(async () => {
    await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  return { db, url: url.toString() };
}

/** The error a statement fails with, as code and constraint. */
function refusal(db: Database, sql: string, params: unknown[]) {
  return db.query(sql, params).then(
    () => null,
    (e: { code?: string; constraint?: string }) => ({ code: e.code, constraint: e.constraint }),
  );
}

test('a database migrated before 0070 keeps its rows, refuses bad values, and still wakes on queued jobs', {
  timeout: 120_000,
}, async () => {
  const { db, url } = await emptyDatabase();
  const before = listMigrations().filter((m) => m.id < 70);
  await migrate(db, before);
  // Rows in the columns that change type, written before the upgrade.
  const c = await db.query<{ id: string }>(
    `insert into customers (name, created_at) values ('before 0070', now()) returning id`,
  );
  const customer = Number(c.rows[0]!.id);
  await db.query(`insert into accounts (customer_id, mode) values ($1, 'live')`, [customer]);
  await db.query(
    `insert into jobs (id, customer_id, mode, idempotency_key, is_async, status, source, player_id, total,
                       hold_day, rate_micros, hold_included, hold_wallet, created_at)
     values ('job_before', $1, 'live', 'k1', true, 'queued', 'stock', 'p1', 1, current_date, 0, 1, 0, now())`,
    [customer],
  );
  await db.query(
    `insert into job_codes (job_id, position, code_hash, code_encrypted, last4, state)
     values ('job_before', 0, 'h1', 'e1', '1234', 'pending')`,
  );

  // The tables are not rewritten (a column changed to a domain that already has its check would
  // be, with every index, under the table's exclusive lock).
  const filenodes = `select relname as name, pg_relation_filenode(oid)::text as node from pg_class
     where relname in ('jobs', 'job_codes', 'jobs_pkey', 'job_codes_pkey', 'idempotency_keys', 'accounts', 'stock_codes')
     order by relname`;
  const nodesBefore = (await db.query(filenodes)).rows;
  expect(nodesBefore).toHaveLength(7);
  // Up to the migration that puts the customer first in the keys (0110 rebuilds them, on purpose).
  const upTo = listMigrations().filter((m) => m.id < 110);
  expect(await migrate(db, upTo)).toEqual(upTo.filter((m) => m.id >= 70).map((m) => m.name));
  const rows = await db.query(
    `select j.mode, j.status, j.source, c.state from jobs j join job_codes c on c.job_id = j.id where j.id = 'job_before'`,
  );
  expect(rows.rows).toEqual([{ mode: 'live', status: 'queued', source: 'stock', state: 'pending' }]);
  expect((await db.query(filenodes)).rows).toEqual(nodesBefore);

  // No enum-like table CHECK is left on the tables a redeem writes (the money and count checks
  // stay on their tables).
  const checks = await db.query<{ table: string; name: string }>(
    `select conrelid::regclass::text as table, conname as name from pg_constraint
      where contype = 'c' and pg_get_constraintdef(oid) like '%ANY (ARRAY[%'
        and conrelid in ('jobs'::regclass, 'job_codes'::regclass, 'idempotency_keys'::regclass,
                         'accounts'::regclass, 'stock_codes'::regclass)`,
  );
  expect(checks.rows).toEqual([]);
  const kept = await db.query<{ name: string }>(
    `select conname as name from pg_constraint where conrelid = 'jobs'::regclass and contype = 'c' order by 1`,
  );
  expect(kept.rows.map((r) => r.name)).toEqual(['jobs_check', 'jobs_check1']);

  // The same bad values are refused, now by the domains.
  expect(await refusal(db, `update jobs set status = $1 where id = 'job_before'`, ['paused'])).toEqual({
    code: '23514',
    constraint: 'job_status_check',
  });
  expect(await refusal(db, `update job_codes set state = $1 where job_id = 'job_before'`, ['lost'])).toEqual({
    code: '23514',
    constraint: 'job_code_state_check',
  });
  expect(
    await refusal(db, `update accounts set mode = $1 where customer_id = $2`, ['prod', customer]),
  ).toEqual({
    code: '23514',
    constraint: 'api_mode_check',
  });
  // A money check is still the table's own.
  expect(await refusal(db, `update jobs set captured_included = 2 where id = 'job_before'`, [])).toEqual({
    code: '23514',
    constraint: 'jobs_check',
  });

  // The wake-up trigger was made again, naming is_async instead of the status.
  const trigger = await db.query<{ def: string }>(
    `select pg_get_triggerdef(oid) as def from pg_trigger where tgname = 'jobs_notify_queued'`,
  );
  expect(trigger.rows).toHaveLength(1);
  expect(trigger.rows[0]!.def).toContain('WHEN (new.is_async)');
  // Then the rest: the code written before 0110 carries its job's customer.
  await migrate(db);
  const code = await db.query<{ customer: string }>(
    `select customer_id::text as customer from job_codes where job_id = 'job_before'`,
  );
  expect(code.rows).toEqual([{ customer: String(customer) }]);
  // On PostgreSQL, heard: an async job's insert notifies, a sync job's does not.
  if (url === null) return;
  const listener = new pg.Client({ connectionString: url });
  await listener.connect();
  const heard: string[] = [];
  listener.on('notification', (n) => heard.push(n.channel));
  try {
    await listener.query('listen redeem_job_queued');
    for (const [id, async] of [
      ['job_sync', false],
      ['job_async', true],
    ] as const)
      await db.query(
        `insert into jobs (id, customer_id, mode, idempotency_key, is_async, status, source, player_id, total,
                           hold_day, rate_micros, hold_included, hold_wallet, created_at)
         values ($1, $2, 'live', $1, $3, $4, 'codes', 'p1', 1, current_date, 0, 1, 0, now())`,
        [id, customer, async, async ? 'queued' : 'running'],
      );
    await expect.poll(() => heard.length, { timeout: 5_000 }).toBe(1);
    await new Promise((r) => setTimeout(r, 200));
    expect(heard).toEqual(['redeem_job_queued']);
  } finally {
    await listener.end();
  }
});
