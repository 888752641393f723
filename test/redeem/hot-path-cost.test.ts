// The database cost of the hot path, counted exactly: statements, round trips and commits of one
// GET /v1/me and one sync one-code redeem, through the database seam (Database.counters) and, on
// PostgreSQL, by the server itself (pg_stat_database.xact_commit of this file's own database).
// The numbers are today's; a change that adds a round trip fails here. Cut them, then tighten them.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { countersNow, type DatabaseCounters } from '../../src/db/database.ts';
import { bearer, createMerchant, createTestApp, issueTestKey, type TestApp } from '../helpers/app.ts';
import { onCitus, onPostgres } from '../helpers/db.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  // One connection: every commit of the app happens on one backend, whose statistics are flushed
  // on demand before each reading (pg_stat_force_next_flush), so the server's count is exact. A
  // second backend's statistics arrive whenever it flushes them, which no test can wait for.
  // The read budget's settle (PostgreSQL, once a second) would land in some test's count: here
  // it waits an hour (read-budget-two-process.test.ts counts it).
  t = await createTestApp({
    jobWorker: false,
    poolMax: 1,
    env: { READ_BUDGET_SETTLE_MS: '3600000', REQUEST_LOG_FLUSH_MS: '3600000' },
  });
});
afterAll(() => t.close());

interface Cost extends DatabaseCounters {
  /** Transactions PostgreSQL committed for the request (pg_stat_database), or null on PGlite. */
  serverCommits: number | null;
}

/** xact_commit of this database once our one backend has flushed its statistics. */
async function serverCommits(): Promise<number> {
  await t.ctx.db.query('select pg_stat_force_next_flush()');
  const r = await t.ctx.db.query<{ n: number }>(
    'select xact_commit::int8 as n from pg_stat_database where datname = current_database()',
  );
  return r.rows[0]!.n;
}

/** The cost of `fn`, counted on the app's handle and by the server. */
async function costOf(fn: () => Promise<unknown>): Promise<Cost> {
  const serverBefore = onPostgres ? await serverCommits() : 0;
  const before = countersNow(t.ctx.db);
  await fn();
  const after = countersNow(t.ctx.db);
  // The reading itself: the select of the first reading and the flush of the second one are
  // counted between the two.
  const serverAfter = onPostgres ? await serverCommits() : 0;
  return {
    statements: after.statements - before.statements,
    roundTrips: after.roundTrips - before.roundTrips,
    commits: after.commits - before.commits,
    serverCommits: onPostgres ? serverAfter - serverBefore - 2 : null,
  };
}

const getMe = (key: string) => t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });

const oneCode = () => ({ player_id: '5123456789', codes: [`${uniqueCode('OKAY')}-60`] });

// One server's counts. On Citus the coordinator's own statistics count Citus's work too, and a
// key's first lookup is two statements (docs/running/citus.md#keys-to-customers).
describe.skipIf(onCitus)('cost of the hot path', () => {
  test('GET /v1/me', async () => {
    const m = await createMerchant(t, { topup: { test: 1 } });
    const first = await costOf(async () => expect((await getMe(m.key)).statusCode).toBe(200));
    const again = await costOf(async () => expect((await getMe(m.key)).statusCode).toBe(200));
    // Once 3 statements (key, account for the body, account again for the headers).
    // One statement: the account with the key's revocation and the customer's state, which also
    // gives the quota headers. The first request of a key in this process looks the key up first.
    // The read budget (docs/reference/limits.md#read-budget) costs no statement (it was taken by that same
    // statement, and by one of its own before that).
    const one = { statements: 1, roundTrips: 1, commits: 1, serverCommits: onPostgres ? 1 : null };
    const miss = { statements: 2, roundTrips: 2, commits: 2, serverCommits: onPostgres ? 2 : null };
    expect(first).toEqual(miss);
    expect(again).toEqual(one);
  });

  test('sync one-code redeem, first request of a key and a later one, in both modes', async () => {
    const m = await createMerchant(t, { topup: { test: 1, live: 1 } });
    const send = (key: string) => async () => {
      const res = await redeem(t, key, oneCode());
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().summary.activated).toBe(1);
    };
    // Two statements, two commits: phase 1 (key re-check, burst slot, account lock, idempotency
    // key, hold, job, the code marked sending) and the outcome (capture, job and key finished,
    // the account for the quota headers). The first request of a key in this process looks the
    // key up first. (Once 22 statements in 28 round trips and 11 commits, then 20 in 24 and 11.)
    // The same in test mode: the sandbox (both
    // modes' activator here) writes its memory of the code with the outcome, not on its own.
    const cost = (n: number) => ({
      statements: n,
      roundTrips: n,
      commits: n,
      serverCommits: onPostgres ? n : null,
    });
    for (const mode of ['test', 'live'] as const) {
      const other = await issueTestKey(t, m.customerId, { mode, scopes: ['redeem', 'read'] });
      expect(await costOf(send(other.key)), mode).toEqual(cost(3));
      expect(await costOf(send(other.key)), mode).toEqual(cost(2));
    }
  });

  test('GET /v1/stock: its own statements; the read budget costs none', async () => {
    const m = await createMerchant(t, { topup: { test: 1 } });
    const stock = async () =>
      expect(
        (await t.api.inject({ method: 'GET', url: '/v1/stock', headers: bearer(m.key) })).statusCode,
      ).toBe(200);
    await stock();
    // Once 4 (the read budget's window statement, then the route's three).
    const three = { statements: 3, roundTrips: 3, commits: 3, serverCommits: onPostgres ? 3 : null };
    expect(await costOf(stock)).toEqual(three);
    // Nothing of the budget is written by a read (on PostgreSQL, by the settle a second later).
    const rows = await t.ctx.db.query('select 1 from burst_windows where key_id = $1', [`read:${m.keyId}`]);
    expect(rows.rows).toEqual([]);
  });

  test('GET /v1/jobs/{id}: one statement (the job, its codes, the key re-checked, the account)', async () => {
    const m = await createMerchant(t, { topup: { test: 1 } });
    const res = await redeem(t, m.key, { ...oneCode(), async: true });
    expect(res.statusCode).toBe(202);
    const id = res.json().job_id as string;
    const get = (path: string) => async () => {
      const job = await t.api.inject({ method: 'GET', url: path, headers: bearer(m.key) });
      expect([200, 404]).toContain(job.statusCode);
      expect(job.headers['svc-quota-used']).toBe('1');
    };
    // Before: the key, the job, its codes, and the account for the quota headers (4). The read
    // budget (docs/reference/limits.md#read-budget) costs none.
    const one = { statements: 1, roundTrips: 1, commits: 1, serverCommits: onPostgres ? 1 : null };
    expect(await costOf(get(`/v1/jobs/${id}`))).toEqual(one);
    expect(await costOf(get('/v1/jobs/job_unknownUnknownUnknown0'))).toEqual(one);
  });

  test('a free plan (every request from the wallet at $0) writes no money rows', async () => {
    const m = await createMerchant(t, { plan: { daily_limit: null, per_request_usd: '0' } });
    const send = async () => {
      const res = await redeem(t, m.key, oneCode());
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['svc-cost']).toBe('1');
    };
    // The first redeem looks the key up and makes the account row (the customer never had a
    // top-up) inside phase 1's statement; then as cheap as an included request.
    expect((await costOf(send)).statements).toBe(3);
    expect((await costOf(send)).statements).toBe(2);
    const ledger = await t.ctx.db.query('select 1 from wallet_ledger where customer_id = $1', [m.customerId]);
    expect(ledger.rows).toEqual([]);
    const account = await t.ctx.db.query<{ held: number; balance: number }>(
      'select held_micros as held, balance_micros as balance from accounts where customer_id = $1',
      [m.customerId],
    );
    expect(account.rows).toEqual([{ held: 0, balance: 0 }]);
  });
});
