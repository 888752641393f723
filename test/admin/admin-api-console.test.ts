// The admin endpoints behind the console: customer list, ledger paging, job list, usage
// aggregates (rollup and live part agree), the overview; and the console's session cookie as a
// second way to be the operator (expiry, sign-out, CSRF rules), its pages and their headers.
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, test } from 'vitest';
import { usageFromRows } from '../../src/core/accounts/usage.ts';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import {
  ADMIN_TOKEN,
  adminCall,
  bearer,
  createCustomer,
  createMerchant,
  expectErrorAnswer as expectError,
  issueTestKey,
  merchantGet,
  type TestApp,
  useTestApp,
} from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
useTestApp({ jobWorker: false }, (app) => {
  t = app;
});

const get = (url: string, headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` }) =>
  t.admin.inject({ method: 'GET', url, headers });

function ok(res: LightMyRequestResponse) {
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json();
  expect(body.request_id).toBe(res.headers['x-request-id']);
  return body;
}

const newCustomer = (name: string) => createCustomer(t, name);

describe('GET /admin/v1/customers', () => {
  test('finds customers by part of the name (any case) or by id, newest first, a page at a time', async () => {
    // Names without digits, so a search by id cannot match a name.
    const tag = `zq${Date.now().toString(36).replace(/\d/g, 'x')}`;
    const letters = 'abcde';
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await newCustomer(`Shop ${tag.toUpperCase()} ${letters[i]}`));
    const other = await newCustomer('Unrelated');
    const first = ok(await get(`/admin/v1/customers?q=${tag}&limit=2`));
    expect(first.customers).toEqual([
      {
        customer_id: ids[4],
        name: `Shop ${tag.toUpperCase()} e`,
        created_at: '2026-11-22T09:00:00Z',
        disabled: false,
        plan: null,
        health: {
          live: { webhook: null, refused_today: 0, refused_by_error_code: [] },
          test: { webhook: null, refused_today: 0, refused_by_error_code: [] },
        },
      },
      {
        customer_id: ids[3],
        name: `Shop ${tag.toUpperCase()} d`,
        created_at: '2026-11-22T09:00:00Z',
        disabled: false,
        plan: null,
        health: {
          live: { webhook: null, refused_today: 0, refused_by_error_code: [] },
          test: { webhook: null, refused_today: 0, refused_by_error_code: [] },
        },
      },
    ]);
    const second = ok(await get(`/admin/v1/customers?q=${tag}&limit=2&cursor=${first.next_cursor}`));
    expect(second.customers.map((c: { customer_id: number }) => c.customer_id)).toEqual([ids[2], ids[1]]);
    const third = ok(await get(`/admin/v1/customers?q=${tag}&limit=2&cursor=${second.next_cursor}`));
    expect(third.customers.map((c: { customer_id: number }) => c.customer_id)).toEqual([ids[0]]);
    expect(third.next_cursor).toBeNull();

    expect(ok(await get(`/admin/v1/customers?q=${other}`)).customers).toEqual([
      expect.objectContaining({ customer_id: other, name: 'Unrelated' }),
    ]);
    // LIKE wildcards in the search are literal characters.
    expect(ok(await get('/admin/v1/customers?q=%25')).customers).toEqual([]);
    expect(ok(await get('/admin/v1/customers?q=_')).customers).toEqual([]);
  });

  test("each customer's health per mode: its receiver's failures and its refusals today", async () => {
    const m = await createMerchant(t);
    for (let i = 0; i < 3; i++)
      await t.api.inject({
        method: 'GET',
        url: `/v1/jobs/job_no${i}`,
        headers: { authorization: `Bearer ${m.key}` },
      });
    await t.api.requestLog.flush();
    const body = ok(await get(`/admin/v1/customers?q=${m.customerId}`));
    // A search by id also finds names holding those digits: this customer's row.
    const mine = body.customers.find((c: { customer_id: number }) => c.customer_id === m.customerId);
    expect(mine.health).toEqual({
      live: { webhook: null, refused_today: 0, refused_by_error_code: [] },
      test: {
        webhook: null,
        refused_today: 3,
        refused_by_error_code: [{ error_code: 'not_found', count: 3 }],
      },
    });
  });

  test('shows the plan label and a disabled customer', async () => {
    const m = await createMerchant(t);
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/disable`);
    // q=<id> also finds customers whose random names hold those digits: this one is picked by id.
    const body = ok(await get(`/admin/v1/customers?q=${m.customerId}`));
    expect(body.customers.filter((c: { customer_id: number }) => c.customer_id === m.customerId)).toEqual([
      expect.objectContaining({ disabled: true, plan: { label: 'standard', active: true } }),
    ]);
  });

  test.each([
    ['limit 0', '?limit=0', 'limit: must be an integer from 1 to 200'],
    ['limit 201', '?limit=201', 'limit: must be an integer from 1 to 200'],
    ['limit abc', '?limit=abc', 'limit: must be an integer from 1 to 200'],
    ['a forged cursor', '?cursor=bm90LWpzb24', 'cursor: must be a next_cursor from an earlier page'],
    [
      'a cursor of another shape',
      `?cursor=${Buffer.from('["x"]').toString('base64url')}`,
      'cursor: must be a next_cursor from an earlier page',
    ],
    ['an unknown parameter', '?name=x', 'name: unknown query parameter'],
    ['a repeated q', '?q=a&q=b', undefined],
  ])('%s is 400 bad_request', async (_name, query, message) => {
    expectError(await get(`/admin/v1/customers${query}`), 400, 'bad_request', message);
  });
});

describe('ledger paging', () => {
  test('pages chain newest first with next_cursor and cover every entry once', async () => {
    const id = await newCustomer('Ledger');
    for (let i = 1; i <= 5; i++)
      await adminCall(t, 'POST', `/admin/v1/customers/${id}/wallet/topup`, {
        mode: 'live',
        usd: i,
        note: `n${i}`,
      });
    const notes: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const body = ok(
        await get(`/admin/v1/customers/${id}/ledger?mode=live&limit=2${cursor ? `&cursor=${cursor}` : ''}`),
      );
      expect(body).toMatchObject({ customer_id: id, mode: 'live' });
      notes.push(...body.entries.map((e: { note: string }) => e.note));
      cursor = body.next_cursor;
      pages++;
    } while (cursor);
    expect({ notes, pages }).toEqual({ notes: ['n5', 'n4', 'n3', 'n2', 'n1'], pages: 3 });
    // Without limit: every entry (up to 500), as before paging existed.
    const all = ok(await get(`/admin/v1/customers/${id}/ledger?mode=live`));
    expect({ n: all.entries.length, next: all.next_cursor, first: all.entries[0].balance_after_usd }).toEqual(
      {
        n: 5,
        next: null,
        first: 15,
      },
    );
    // Exactly one page's worth: no next page is promised.
    expect(ok(await get(`/admin/v1/customers/${id}/ledger?mode=live&limit=5`)).next_cursor).toBeNull();
  });

  test.each([
    ['limit 501', '&limit=501'],
    ['a bad cursor', '&cursor=!!'],
    ['a cursor of a negative id', `&cursor=${Buffer.from('[-1]').toString('base64url')}`],
  ])('%s is 400 bad_request', async (_name, query) => {
    const id = await newCustomer('Ledger bad');
    expectError(await get(`/admin/v1/customers/${id}/ledger?mode=live${query}`), 400, 'bad_request');
  });
});

describe('jobs, usage and the overview after real redeems', () => {
  let a: { customerId: number; key: string };
  let b: { customerId: number; key: string };
  const start = '2026-11-22T09:00:00Z';

  beforeAll(async () => {
    t.clock.set(start);
    a = await createMerchant(t);
    b = await createMerchant(t);
    // Customer a, sync: 2 activated, 1 code_used, 1 invalid_code, 1 failed in one request; then
    // a bad player an hour later. Customer b: 1 activated.
    const r1 = await redeem(t, a.key, {
      player_id: '5123456789',
      codes: [uniqueCode(), uniqueCode(), uniqueCode('USED'), uniqueCode('INVALID'), uniqueCode('FAIL')],
    });
    expect(r1.statusCode, r1.body).toBe(200);
    t.clock.advance(3_600_000);
    expect((await redeem(t, a.key, { player_id: '0001234567', codes: [uniqueCode()] })).statusCode).toBe(422);
    expect((await redeem(t, b.key, { player_id: '5123456789', codes: [uniqueCode()] })).statusCode).toBe(200);
  });

  const hourly = (extra = '') =>
    get(`/admin/v1/usage?granularity=hour&from=2026-11-22T08:30:00Z&to=2026-11-22T11:00:00Z${extra}`);

  test('usage per hour counts each outcome in the hour it finished, billed and refunded', async () => {
    const body = ok(await hourly(`&customer_id=${a.customerId}`));
    const z = {
      activated: 0,
      code_used: 0,
      invalid_code: 0,
      bad_player: 0,
      failed: 0,
      billed: 0,
      refunded: 0,
    };
    expect(body).toEqual({
      ok: true,
      request_id: body.request_id,
      customer_id: a.customerId,
      mode: null,
      granularity: 'hour',
      from: '2026-11-22T08:00:00Z',
      to: '2026-11-22T11:00:00Z',
      buckets: [
        { start: '2026-11-22T08:00:00Z', ...z },
        {
          start: '2026-11-22T09:00:00Z',
          ...z,
          activated: 2,
          code_used: 1,
          invalid_code: 1,
          failed: 1,
          billed: 4,
          refunded: 1,
        },
        { start: '2026-11-22T10:00:00Z', ...z, bad_player: 1, refunded: 1 },
      ],
      totals: {
        ...z,
        activated: 2,
        code_used: 1,
        invalid_code: 1,
        bad_player: 1,
        failed: 1,
        billed: 4,
        refunded: 2,
      },
    });
    const day = ok(await get(`/admin/v1/usage?granularity=day&customer_id=${a.customerId}`));
    expect(day.buckets).toHaveLength(30);
    expect(day.to).toBe('2026-11-23T00:00:00Z');
    expect(day.buckets.at(-1)).toEqual({ start: '2026-11-22T00:00:00Z', ...day.totals });
    expect(day.totals).toEqual(body.totals);
    // Filters: the other customer, and a mode with nothing in it.
    expect(ok(await hourly(`&customer_id=${b.customerId}`)).totals).toMatchObject({
      activated: 1,
      billed: 1,
    });
    expect(ok(await hourly(`&customer_id=${a.customerId}&mode=live`)).totals).toEqual(z);
  });

  test('the rollup, once it has caught up, gives the same answer, and newer redeems still count', async () => {
    const before = ok(await hourly()).buckets;
    t.clock.advance(3_600_000);
    const rolled = ok(await hourly()).buckets;
    expect(rolled).toEqual(before);
    // And the same as counting every job row again, without the rollup.
    const fromRows = await usageFromRows(t.ctx.db, {
      granularity: 'hour',
      from: new Date('2026-11-22T08:00:00Z'),
      to: new Date('2026-11-22T11:00:00Z'),
    });
    expect(rolled).toEqual(fromRows.buckets);
    const days = ok(
      await get('/admin/v1/usage?granularity=day&from=2026-11-01T00:00:00Z&to=2026-11-23T00:00:00Z'),
    );
    const daysFromRows = await usageFromRows(t.ctx.db, {
      granularity: 'day',
      from: new Date('2026-11-01T00:00:00Z'),
      to: new Date('2026-11-23T00:00:00Z'),
    });
    expect(days.buckets).toEqual(daysFromRows.buckets);
    expect(days.totals.activated).toBeGreaterThan(0);
    const rows = await t.ctx.db.query<{ n: number; until: Date }>(
      `select (select count(*)::int from usage_hourly) + (select count(*)::int from usage_daily) as n,
              (select rolled_until from usage_rollup) as until`,
    );
    expect(rows.rows[0]!.n).toBeGreaterThan(0);
    expect(rows.rows[0]!.until.getTime()).toBeGreaterThan(new Date('2026-11-22T10:00:00Z').getTime());
    // A redeem after the watermark is counted from its rows, beside the rolled-up hours.
    expect((await redeem(t, a.key, { player_id: '5123456789', codes: [uniqueCode()] })).statusCode).toBe(200);
    const after = ok(
      await get('/admin/v1/usage?granularity=hour&from=2026-11-22T08:00:00Z&to=2026-11-22T12:00:00Z'),
    );
    const total = (bs: { activated: number }[]) => bs.reduce((s, x) => s + x.activated, 0);
    expect(total(after.buckets)).toBe(total(rolled) + 1);
    expect(after.buckets.at(-1)).toMatchObject({ start: '2026-11-22T11:00:00Z', activated: 1, billed: 1 });
  });

  test('jobs list: filters, newest first, paging', async () => {
    const all = ok(await get(`/admin/v1/jobs?customer_id=${a.customerId}`));
    expect(all.jobs).toHaveLength(3);
    expect(all.jobs[2]).toEqual({
      job_id: expect.stringMatching(/^job_/),
      customer_id: a.customerId,
      customer_name: expect.stringMatching(/^merchant /),
      mode: 'test',
      async: false,
      status: 'completed',
      source: 'codes',
      player_id: '5123456789',
      reference: null,
      codes: 5,
      done: 5,
      billed_requests: 4,
      refunded_requests: 1,
      outcomes: { activated: 2, billed_failures: 2, refunded: 1, quarantined: 0 },
      attention: null,
      created_at: '2026-11-22T09:00:00Z',
      finished_at: '2026-11-22T09:00:00Z',
    });
    const p1 = ok(await get(`/admin/v1/jobs?customer_id=${a.customerId}&limit=2`));
    const p2 = ok(await get(`/admin/v1/jobs?customer_id=${a.customerId}&limit=2&cursor=${p1.next_cursor}`));
    expect([...p1.jobs, ...p2.jobs].map((j: { job_id: string }) => j.job_id)).toEqual(
      all.jobs.map((j: { job_id: string }) => j.job_id),
    );
    expect(p2.next_cursor).toBeNull();
    const window = ok(
      await get(
        `/admin/v1/jobs?customer_id=${a.customerId}&from=2026-11-22T09:30:00Z&to=2026-11-22T10:30:00Z`,
      ),
    );
    expect(window.jobs.map((j: { player_id: string }) => j.player_id)).toEqual(['0001234567']);
    // Completed, yet nothing activated: the list says so.
    expect(window.jobs[0]).toMatchObject({
      status: 'completed',
      outcomes: { activated: 0, billed_failures: 0, refunded: 1, quarantined: 0 },
      attention: 'nothing_activated',
    });
    expect(ok(await get(`/admin/v1/jobs?customer_id=${a.customerId}&mode=live`)).jobs).toEqual([]);
    expect(ok(await get(`/admin/v1/jobs?customer_id=${a.customerId}&status=queued`)).jobs).toEqual([]);
  });

  test('the overview counts queued jobs and quarantined codes, of one mode when asked', async () => {
    const before = ok(await get('/admin/v1/overview'));
    const liveBefore = ok(await get('/admin/v1/overview?mode=live'));
    const testBefore = ok(await get('/admin/v1/overview?mode=test'));
    const res = await redeem(t, a.key, { player_id: '5123456789', codes: [uniqueCode()], async: true });
    expect(res.statusCode).toBe(202);
    expect(
      (await redeem(t, b.key, { player_id: '5123456789', codes: [uniqueCode('TIMEOUT')] })).statusCode,
    ).toBe(422);
    const after = ok(await get('/admin/v1/overview'));
    expect(after).toEqual({
      ok: true,
      request_id: after.request_id,
      queue: { queued: before.queue.queued + 1, running: 0, oldest_queued_at: expect.any(String) },
      quarantined_codes: before.quarantined_codes + 1,
      webhooks: { pending: 0, failing: 0, dropped_24h: 0, failed_24h: 0 },
      customers: before.customers,
      refusals_today: expect.objectContaining({ day: '2026-11-22' }),
    });
    // Both merchants redeem with test keys: the live overview does not count their work.
    const live = ok(await get('/admin/v1/overview?mode=live'));
    expect(live).toMatchObject({
      mode: 'live',
      queue: { queued: liveBefore.queue.queued },
      quarantined_codes: liveBefore.quarantined_codes,
    });
    const testMode = ok(await get('/admin/v1/overview?mode=test'));
    expect(testMode).toMatchObject({
      mode: 'test',
      queue: { queued: testBefore.queue.queued + 1 },
      quarantined_codes: testBefore.quarantined_codes + 1,
    });
    expect((await get('/admin/v1/overview?mode=prod')).statusCode).toBe(400);
    const queued = ok(await get(`/admin/v1/jobs?status=queued&customer_id=${a.customerId}`));
    expect(queued.jobs).toEqual([
      expect.objectContaining({ job_id: res.json().job_id, async: true, done: 0, attention: null }),
    ]);
    // The quarantined code's job: completed, and flagged until the code is settled.
    const [held] = ok(await get(`/admin/v1/jobs?customer_id=${b.customerId}&limit=1`)).jobs;
    expect(held).toMatchObject({
      status: 'completed',
      outcomes: { activated: 0, billed_failures: 0, refunded: 0, quarantined: 1 },
      attention: 'quarantined',
    });
  });

  test("the overview counts today's refusals by error code, of one mode when asked", async () => {
    const m = await createMerchant(t);
    const live = await issueTestKey(t, m.customerId, { mode: 'live' });
    const refusals = async (mode: string) => {
      await t.api.requestLog.flush();
      const o = ok(await get(`/admin/v1/overview${mode ? `?mode=${mode}` : ''}`));
      const byCode = Object.fromEntries(
        o.refusals_today.by_error_code.map((c: { error_code: string | null; count: number }) => [
          c.error_code,
          c.count,
        ]),
      );
      return { day: o.refusals_today.day, total: o.refusals_today.total, byCode };
    };
    const before = { all: await refusals(''), live: await refusals('live'), test: await refusals('test') };
    // Test: two unknown jobs and a redeem without an Idempotency-Key; live: a malformed player.
    for (const id of ['job_no1', 'job_no2']) await merchantGet(t, `/v1/jobs/${id}`, m.key);
    await t.api.inject({
      method: 'POST',
      url: '/v1/redeem',
      headers: { ...bearer(m.key), 'content-type': 'application/json' },
      payload: { player_id: '5123456789', codes: [uniqueCode()] },
    });
    await t.api.inject({
      method: 'POST',
      url: '/v1/redeem',
      headers: { ...bearer(live.key), 'content-type': 'application/json', 'idempotency-key': 'k1' },
      payload: { player_id: 'x', codes: [uniqueCode()] },
    });
    const after = { all: await refusals(''), live: await refusals('live'), test: await refusals('test') };
    const grew = (b: typeof after.all, a: typeof after.all) =>
      Object.fromEntries(
        Object.entries(a.byCode)
          .filter(([code, n]) => n !== (b.byCode[code] ?? 0))
          .map(([code, n]) => [code, (n as number) - (b.byCode[code] ?? 0)]),
      );
    expect(after.test.day).toBe(t.clock.now().toISOString().slice(0, 10));
    expect(grew(before.test, after.test)).toEqual({ not_found: 2, idempotency_required: 1 });
    expect(after.test.total - before.test.total).toBe(3);
    expect(grew(before.live, after.live)).toEqual({ bad_player: 1 });
    expect(grew(before.all, after.all)).toEqual({ not_found: 2, idempotency_required: 1, bad_player: 1 });
    // The request log filters by mode too: where each of the overview's counts leads.
    const liveRows = ok(await get(`/admin/v1/requests?customer_id=${m.customerId}&mode=live&day=today`));
    expect(liveRows.counts).toEqual({
      total: 1,
      by_error_code: [{ error_code: 'bad_player', count: 1 }],
      complete: true,
    });
    expect(liveRows.requests.map((r: { mode: string }) => r.mode)).toEqual(['live']);
    expect((await get('/admin/v1/requests?mode=prod')).statusCode).toBe(400);
  });

  test.each([
    ['/admin/v1/usage?granularity=week', 'granularity'],
    ['/admin/v1/usage?from=2026-11-22T10:00:00Z&to=2026-11-22T09:00:00Z', 'from: must be before to'],
    [
      '/admin/v1/usage?from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z',
      'from: at most 1500 hours in one answer',
    ],
    ['/admin/v1/usage?from=yesterday', 'from'],
    ['/admin/v1/usage?customer_id=0', 'customer_id: must be a customer id'],
    ['/admin/v1/usage?mode=prod', 'mode'],
    ['/admin/v1/usage?foo=1', 'foo: unknown query parameter'],
    ['/admin/v1/jobs?status=done', 'status'],
    ['/admin/v1/jobs?limit=500', 'limit: must be an integer from 1 to 200'],
    ['/admin/v1/jobs?cursor=abc', 'cursor: must be a next_cursor from an earlier page'],
    ['/admin/v1/overview?x=1', 'x: unknown query parameter'],
  ])('%s is 400 bad_request', async (url, message) => {
    const res = await get(url);
    expectError(res, 400, 'bad_request');
    expect(res.json().message).toContain(message);
  });

  test.each(['/admin/v1/usage', '/admin/v1/jobs', '/admin/v1/overview', '/admin/v1/customers'])(
    '%s needs the admin token',
    async (url) => {
      expectError(await get(url, {}), 401, 'unauthorized', 'missing or wrong admin token');
      expectError(await get(url, { authorization: 'Bearer wrong-token-wrong-token' }), 401, 'unauthorized');
    },
  );
});

describe('the console session', () => {
  const HOST = 'localhost:80';
  const signIn = (token: string, headers: Record<string, string> = { 'x-console': '1' }) =>
    t.admin.inject({ method: 'POST', url: '/console/session', headers, payload: { token } });
  const cookieOf = (res: LightMyRequestResponse) => {
    const set = String(res.headers['set-cookie']);
    return set.slice(0, set.indexOf(';'));
  };

  test('signing in sets an HttpOnly SameSite=Strict cookie that is not the token', async () => {
    const res = await signIn(ADMIN_TOKEN);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      signed_in: true,
      expires_at: new Date(t.clock.now().getTime() + 8 * 3_600_000).toISOString().replace('.000', ''),
      operator: { name: 'root', role: 'admin' },
    });
    const set = String(res.headers['set-cookie']);
    expect(set).toMatch(/^rg_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=28800$/);
    expect(set).not.toContain(ADMIN_TOKEN);
    const cookie = cookieOf(res);
    const body = ok(await get('/admin/v1/overview', { cookie }));
    expect(body.queue).toBeDefined();
    expect(ok(await get('/console/session', { cookie }))).toMatchObject({ signed_in: true });
  });

  test('a wrong token is 401 and sets no cookie', async () => {
    const res = await signIn(`${ADMIN_TOKEN}x`);
    expectError(res, 401, 'unauthorized', 'wrong admin token');
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  test('signing in without the console header (a form from another site) is refused', async () => {
    expectError(await signIn(ADMIN_TOKEN, {}), 400, 'bad_request');
    expectError(
      await signIn(ADMIN_TOKEN, { 'x-console': '1', origin: 'https://evil.example' }),
      400,
      'bad_request',
    );
  });

  test('with the cookie, a change needs the console header and the same origin', async () => {
    const cookie = cookieOf(await signIn(ADMIN_TOKEN));
    const create = (headers: Record<string, string>) =>
      t.admin.inject({
        method: 'POST',
        url: '/admin/v1/customers',
        headers: { cookie, ...headers },
        payload: { name: 'csrf' },
      });
    expectError(await create({}), 401, 'unauthorized');
    expectError(await create({ 'x-console': '1', origin: 'http://evil.example' }), 401, 'unauthorized');
    expectError(await create({ 'x-console': 'yes' }), 401, 'unauthorized');
    const rows = await t.ctx.db.query("select 1 from customers where name = 'csrf'");
    expect(rows.rows).toEqual([]);
    expect((await create({ 'x-console': '1', origin: `http://${HOST}` })).statusCode).toBe(201);
    expect((await create({ 'x-console': '1' })).statusCode).toBe(201);
  });

  test('a forged cookie, a signed-out session and an expired one are refused', async () => {
    expectError(
      await get('/admin/v1/overview', { cookie: `rg_console=${ADMIN_TOKEN}` }),
      401,
      'unauthorized',
    );
    const cookie = cookieOf(await signIn(ADMIN_TOKEN));
    const out = await t.admin.inject({
      method: 'DELETE',
      url: '/console/session',
      headers: { cookie, 'x-console': '1' },
    });
    expect(out.statusCode).toBe(200);
    expect(String(out.headers['set-cookie'])).toBe(
      'rg_console=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0',
    );
    expectError(await get('/admin/v1/overview', { cookie }), 401, 'unauthorized');
    expect(ok(await get('/console/session', { cookie }))).toMatchObject({
      signed_in: false,
      expires_at: null,
    });

    const cookie2 = cookieOf(await signIn(ADMIN_TOKEN));
    t.clock.advance(8 * 3_600_000 - 1000);
    expect((await get('/admin/v1/overview', { cookie: cookie2 })).statusCode).toBe(200);
    t.clock.advance(1000);
    expectError(await get('/admin/v1/overview', { cookie: cookie2 }), 401, 'unauthorized');
  });

  test('a wrong bearer token is refused even beside a good cookie', async () => {
    const cookie = cookieOf(await signIn(ADMIN_TOKEN));
    expectError(
      await get('/admin/v1/overview', { cookie, authorization: 'Bearer nope-nope-nope-nope' }),
      401,
      'unauthorized',
    );
  });
});

describe('console pages', () => {
  test('the page and its assets are served with a strict CSP; nothing else on disk is', async () => {
    const page = await get('/console', {});
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain(
      "default-src 'self'; script-src 'self'; style-src 'self'",
    );
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.body).not.toMatch(/<script>|<style|style=|https?:\/\//);
    const uplot = await get('/console/vendor/uplot.js', {});
    expect({ status: uplot.statusCode, type: uplot.headers['content-type'] }).toEqual({
      status: 200,
      type: 'text/javascript; charset=utf-8',
    });
    expect(uplot.body).toContain('export { uPlot as default }');
    expect((await get('/console/assets/app.js', {})).statusCode).toBe(200);
    for (const url of [
      '/console/assets/../../config.ts',
      '/console/assets/%2e%2e%2fsession.ts',
      '/console/assets/nope.js',
    ]) {
      expect((await get(url, {})).statusCode, url).not.toBe(200);
    }
  });
});

describe('the CLI for the new lists', () => {
  let url: string;
  beforeAll(async () => {
    url = await listenAdmin(t.admin);
  });
  const cli = (args: string[]) => runAdminCli(url, args);

  test('customers list, jobs list, usage show and a paged ledger', async () => {
    const id = await newCustomer('Cli Lister');
    for (const usd of [1, 2, 3])
      await adminCall(t, 'POST', `/admin/v1/customers/${id}/wallet/topup`, { mode: 'test', usd });
    const listed = await cli(['customers', 'list', '--search', 'cli lister', '--json']);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(listed.stdout).customers).toEqual([
      expect.objectContaining({ customer_id: id, name: 'Cli Lister' }),
    ]);

    const page = await cli(['wallet', 'ledger', String(id), '--mode', 'test', '--limit', '2']);
    expect(page.code).toBe(0);
    const more = /more: add --cursor (\S+)/.exec(page.stdout);
    expect(more).not.toBeNull();
    const rest = await cli([
      'wallet',
      'ledger',
      String(id),
      '--mode',
      'test',
      '--cursor',
      more![1]!,
      '--json',
    ]);
    expect(JSON.parse(rest.stdout)).toMatchObject({
      entries: [expect.objectContaining({ amount_usd: 1 })],
      next_cursor: null,
    });

    const jobs = await cli(['jobs', 'list', '--status', 'queued', '--json']);
    expect(JSON.parse(jobs.stdout).jobs.length).toBeGreaterThan(0);
    const usage = await cli(['usage', 'show', '--granularity', 'day']);
    expect(usage.code).toBe(0);
    expect(usage.stdout).toMatch(/^usage per day from \S+ to \S+:\n {2}start {2}activated/);
    const bad = await cli(['usage', 'show', '--granularity', 'week']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('granularity');
  });
});
