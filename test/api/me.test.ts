// GET /v1/me for every account shape (docs/reference/billing-and-quota.md#the-account-record, docs/reference/billing-and-quota.md#the-account-record) and GET /v1/health.
import { rmSync } from 'node:fs';
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, test } from 'vitest';
import {
  adminCall,
  createMerchant,
  createTestApp,
  issueTestKey,
  merchantGet,
  type TestApp,
  useTestApp,
} from '../helpers/app.ts';

const NOW = '2026-11-22T09:00:00Z';
const DAY = 86_400_000;

let t: TestApp;
useTestApp({}, (app) => {
  t = app;
});

const me = (key: string) => merchantGet(t, '/v1/me', key);

/** The quota and balance headers agree with the body. */
function expectHeadersMatchBody(res: LightMyRequestResponse) {
  const body = res.json();
  expect(res.headers['svc-quota-used']).toBe(String(body.quota.used_today));
  expect(res.headers['svc-quota-remaining']).toBe(String(body.quota.remaining_today));
  expect(Number(res.headers['svc-balance-usd'])).toBe(body.balance_usd);
  expect(res.headers['x-request-id']).toBe(body.request_id);
  expect(res.headers['svc-version']).toBe('1.0.0');
  expect(res.headers['svc-cost']).toBe('0');
  expect(res.headers['svc-idempotent-replay']).toBe('false');
}

/** Usage rows as billing will leave them (no redeem endpoint yet): requests held or billed today. */
async function setUsage(
  customerId: number,
  mode: 'live' | 'test',
  day: string,
  used: number,
  overage: number,
) {
  await t.ctx.db.query(
    `insert into daily_usage (customer_id, mode, day, used, overage) values ($1, $2, $3, $4, $5)
     on conflict (customer_id, mode, day) do update set used = excluded.used, overage = excluded.overage`,
    [customerId, mode, day, used, overage],
  );
}

describe('GET /v1/me', () => {
  test('capped plan with a funded test wallet', async () => {
    t.clock.set(NOW);
    const m = await createMerchant(t, { topup: { test: '12.5' } });
    const res = await me(m.key);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      customer_id: m.customerId,
      key_prefix: m.key.slice(0, 12),
      scopes: ['redeem', 'read'],
      mode: 'test',
      plan: 'standard',
      plan_active: true,
      quota: { daily_limit: 100, used_today: 0, remaining_today: 100, overage_today: 0 },
      per_request_usd: 0.01,
      balance_usd: 12.5,
      subscription: { required: false, active: true, expires_at: null, days_left: null },
    });
    expect(res.json().request_id).toMatch(/^req_[0-9A-Za-z]{20,}$/);
    expect(m.keyPrefix).toBe(m.key.slice(0, 12));
    expect(res.headers['svc-quota-used']).toBe('0');
    expect(res.headers['svc-quota-remaining']).toBe('100');
    expect(res.headers['svc-balance-usd']).toBe('12.5');
  });

  test('uncapped plan: daily_limit null and remaining_today 0 (everything billed from the wallet)', async () => {
    t.clock.set(NOW);
    const m = await createMerchant(t, {
      plan: { label: 'pay as you go', daily_limit: null, per_request_usd: '0.0035' },
      topup: { test: '1' },
    });
    await setUsage(m.customerId, 'test', '2026-11-22', 7, 7);
    const res = await me(m.key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      plan: 'pay as you go',
      plan_active: true,
      quota: { daily_limit: null, used_today: 7, remaining_today: 0, overage_today: 7 },
      per_request_usd: 0.0035,
      balance_usd: 1,
    });
    expect(res.headers['svc-quota-remaining']).toBe('0');
    expect(res.headers['svc-quota-used']).toBe('7');
    expectHeadersMatchBody(res);
  });

  test('no plan: plan null, plan_active false, zero rate and quota', async () => {
    t.clock.set(NOW);
    const m = await createMerchant(t, { plan: null, topup: { test: '2.5' } });
    const res = await me(m.key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      customer_id: m.customerId,
      key_prefix: m.key.slice(0, 12),
      scopes: ['redeem', 'read'],
      mode: 'test',
      plan: null,
      plan_active: false,
      quota: { daily_limit: null, used_today: 0, remaining_today: 0, overage_today: 0 },
      per_request_usd: 0,
      balance_usd: 2.5,
      subscription: { required: false, active: true, expires_at: null, days_left: null },
    });
    expectHeadersMatchBody(res);
    expect(res.headers['svc-quota-used']).toBe('0');
    expect(res.headers['svc-quota-remaining']).toBe('0');
  });

  test('a deleted plan gives the no-plan shape, even with usage rows left behind', async () => {
    t.clock.set(NOW);
    const m = await createMerchant(t);
    await setUsage(m.customerId, 'test', '2026-11-22', 3, 0);
    await adminCall(t, 'DELETE', `/admin/v1/customers/${m.customerId}/plan`);
    const res = await me(m.key);
    expect(res.json()).toMatchObject({
      plan: null,
      plan_active: false,
      quota: { daily_limit: null, used_today: 0, remaining_today: 0, overage_today: 0 },
      per_request_usd: 0,
    });
    expectHeadersMatchBody(res);
  });

  test('inactive plan: the plan is shown with plan_active false', async () => {
    t.clock.set(NOW);
    const m = await createMerchant(t, {
      plan: { label: 'paused', daily_limit: 50, per_request_usd: 0.02, active: false },
    });
    const res = await me(m.key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      plan: 'paused',
      plan_active: false,
      quota: { daily_limit: 50, used_today: 0, remaining_today: 50, overage_today: 0 },
      per_request_usd: 0.02,
      balance_usd: 0,
    });
    expectHeadersMatchBody(res);
  });

  test('a zero daily include: remaining 0', async () => {
    t.clock.set(NOW);
    const m = await createMerchant(t, { plan: { daily_limit: 0, per_request_usd: '0.5' } });
    expect((await me(m.key)).json().quota).toEqual({
      daily_limit: 0,
      used_today: 0,
      remaining_today: 0,
      overage_today: 0,
    });
  });

  test("today's usage: remaining = max(0, limit - (used - overage)), per mode, per UTC day", async () => {
    t.clock.set(NOW);
    const m = await createMerchant(t);
    const live = await issueTestKey(t, m.customerId, { mode: 'live' });
    await setUsage(m.customerId, 'test', '2026-11-22', 30, 5);
    await setUsage(m.customerId, 'live', '2026-11-22', 2, 0);
    await setUsage(m.customerId, 'test', '2026-11-21', 99, 0);

    let res = await me(m.key);
    expect(res.json().quota).toEqual({
      daily_limit: 100,
      used_today: 30,
      remaining_today: 75,
      overage_today: 5,
    });
    expectHeadersMatchBody(res);
    res = await me(live.key);
    expect(res.json().quota).toEqual({
      daily_limit: 100,
      used_today: 2,
      remaining_today: 98,
      overage_today: 0,
    });
    expectHeadersMatchBody(res);

    await setUsage(m.customerId, 'test', '2026-11-22', 130, 30);
    res = await me(m.key);
    expect(res.json().quota).toEqual({
      daily_limit: 100,
      used_today: 130,
      remaining_today: 0,
      overage_today: 30,
    });
    expect(res.headers['svc-quota-remaining']).toBe('0');

    // Counters reset at 00:00 UTC.
    t.clock.set('2026-11-22T23:59:59.999Z');
    expect((await me(m.key)).json().quota.used_today).toBe(130);
    t.clock.set('2026-11-23T00:00:00Z');
    res = await me(m.key);
    expect(res.json().quota).toEqual({
      daily_limit: 100,
      used_today: 0,
      remaining_today: 100,
      overage_today: 0,
    });
    expectHeadersMatchBody(res);
    t.clock.set(NOW);
  });

  describe('subscription', () => {
    const withSub = (required: boolean, expires_at: string | null) =>
      createMerchant(t, { subscription: { required, expires_at } });

    test('not required: active, no expiry, days_left null (even with a past expiry stored)', async () => {
      t.clock.set(NOW);
      for (const expires of [null, '2020-01-01T00:00:00Z', '2030-01-01T00:00:00Z']) {
        const m = await withSub(false, expires);
        expect((await me(m.key)).json().subscription).toEqual({
          required: false,
          active: true,
          expires_at: null,
          days_left: null,
        });
      }
    });

    test('required, future expiry: days_left is whole days rounded down', async () => {
      t.clock.set(NOW);
      // 2.9 days ahead.
      const expires = new Date(Date.parse(NOW) + 2.9 * DAY).toISOString();
      const m = await withSub(true, expires);
      expect((await me(m.key)).json().subscription).toEqual({
        required: true,
        active: true,
        expires_at: '2026-11-25T06:36:00Z',
        days_left: 2,
      });
      t.clock.set('2026-11-22T06:36:00Z'); // exactly 3 days before
      expect((await me(m.key)).json().subscription.days_left).toBe(3);
      t.clock.set('2026-11-25T06:35:59Z'); // one second before: still active, 0 days
      expect((await me(m.key)).json().subscription).toEqual({
        required: true,
        active: true,
        expires_at: '2026-11-25T06:36:00Z',
        days_left: 0,
      });
      t.clock.set(NOW);
    });

    test('required and expired: active false, days_left 0, from the instant of expiry', async () => {
      t.clock.set(NOW);
      const m = await withSub(true, '2026-11-20T12:00:00.000Z');
      const res = await me(m.key);
      expect(res.statusCode).toBe(200);
      expect(res.json().subscription).toEqual({
        required: true,
        active: false,
        expires_at: '2026-11-20T12:00:00Z',
        days_left: 0,
      });
      const edge = await withSub(true, NOW);
      expect((await me(edge.key)).json().subscription).toEqual({
        required: true,
        active: false,
        expires_at: '2026-11-22T09:00:00Z',
        days_left: 0,
      });
    });

    test('required with no expiry: active, expires_at and days_left null', async () => {
      t.clock.set(NOW);
      const m = await withSub(true, null);
      expect((await me(m.key)).json().subscription).toEqual({
        required: true,
        active: true,
        expires_at: null,
        days_left: null,
      });
    });

    test('an expiry given with an offset is shown in UTC with a Z', async () => {
      t.clock.set(NOW);
      const m = await withSub(true, '2026-12-01T12:00:00+02:00');
      expect((await me(m.key)).json().subscription).toEqual({
        required: true,
        active: true,
        expires_at: '2026-12-01T10:00:00Z',
        days_left: 9,
      });
    });
  });

  describe('wallet and modes', () => {
    test('test and live wallets are separate: each key sees only its own mode', async () => {
      t.clock.set(NOW);
      const m = await createMerchant(t, { topup: { live: '5', test: '12.5' } });
      const live = await issueTestKey(t, m.customerId, { mode: 'live', scopes: ['read'] });

      const testRes = await me(m.key);
      expect(testRes.json()).toMatchObject({ mode: 'test', balance_usd: 12.5 });
      expect(testRes.headers['svc-balance-usd']).toBe('12.5');

      const liveRes = await me(live.key);
      expect(liveRes.json()).toEqual({
        ok: true,
        request_id: liveRes.headers['x-request-id'],
        customer_id: m.customerId,
        key_prefix: live.key.slice(0, 12),
        scopes: ['read'],
        mode: 'live',
        plan: 'standard',
        plan_active: true,
        quota: { daily_limit: 100, used_today: 0, remaining_today: 100, overage_today: 0 },
        per_request_usd: 0.01,
        balance_usd: 5,
        subscription: { required: false, active: true, expires_at: null, days_left: null },
      });
      expect(live.key.slice(0, 12)).toMatch(/^rk_live_[0-9A-Za-z]{4}$/);
      expect(liveRes.headers['svc-balance-usd']).toBe('5');

      // A top-up of one mode moves only that mode.
      await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, {
        mode: 'live',
        usd: 1.25,
      });
      expect((await me(live.key)).json().balance_usd).toBe(6.25);
      expect((await me(m.key)).json().balance_usd).toBe(12.5);
    });

    test('top-ups add up exactly (no floating-point drift)', async () => {
      const m = await createMerchant(t, { topup: { test: '0.1' } });
      await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, {
        mode: 'test',
        usd: 0.2,
      });
      const res = await me(m.key);
      expect(res.json().balance_usd).toBe(0.3);
      expect(res.headers['svc-balance-usd']).toBe('0.3');
      for (let i = 0; i < 9; i++) {
        await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, {
          mode: 'test',
          usd: '0.000001',
        });
      }
      const after = await me(m.key);
      expect(after.json().balance_usd).toBe(0.300009);
      expect(after.headers['svc-balance-usd']).toBe('0.300009');
    });

    test('balance_usd is spendable: open holds are subtracted', async () => {
      const m = await createMerchant(t, { topup: { test: '10' } });
      await t.ctx.db.query(
        "update accounts set held_micros = 2500000 where customer_id = $1 and mode = 'test'",
        [m.customerId],
      );
      const res = await me(m.key);
      expect(res.json().balance_usd).toBe(7.5);
      expect(res.headers['svc-balance-usd']).toBe('7.5');
    });

    test('the ledger rows behind the balance: one entry per top-up, in the right mode', async () => {
      const m = await createMerchant(t, { topup: { live: '5', test: '12.5' } });
      const rows = await t.ctx.db.query<{ mode: string; amount: number; balanceAfter: number; kind: string }>(
        `select mode, amount_micros as amount, balance_after_micros as "balanceAfter", kind
           from wallet_ledger where customer_id = $1 order by id`,
        [m.customerId],
      );
      expect(rows.rows).toEqual([
        { mode: 'live', amount: 5_000_000, balanceAfter: 5_000_000, kind: 'topup' },
        { mode: 'test', amount: 12_500_000, balanceAfter: 12_500_000, kind: 'topup' },
      ]);
      // GET /v1/me writes nothing.
      await me(m.key);
      const after = await t.ctx.db.query(
        'select count(*)::int as n from wallet_ledger where customer_id = $1',
        [m.customerId],
      );
      expect(after.rows[0]).toEqual({ n: 2 });
    });
  });
});

describe('GET /v1/health', () => {
  test('200 without a key: the whole body', async () => {
    t.clock.set('2026-11-22T09:00:00.250Z');
    const res = await t.api.inject({ method: 'GET', url: '/v1/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      status: 'ok',
      version: '1.0.0',
      time: '2026-11-22T09:00:00Z',
      checks: { database: 'ok' },
    });
    expect(res.headers['svc-version']).toBe('1.0.0');
    expect(res.headers['svc-cost']).toBe('0');
    expect(res.headers['svc-quota-used']).toBeUndefined();
    t.clock.set(NOW);
  });

  test('503 unavailable with Retry-After when the database does not answer', async () => {
    const broken = await createTestApp();
    try {
      await broken.testDb.db.close();
      const res = await broken.api.inject({ method: 'GET', url: '/v1/health' });
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 503,
        body: {
          ok: false,
          error_code: 'unavailable',
          message: expect.any(String),
          request_id: res.headers['x-request-id'],
        },
      });
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.headers['svc-version']).toBe('1.0.0');
      expect(res.headers['svc-cost']).toBe('0');
      expect(res.headers['svc-idempotent-replay']).toBe('false');
      expect(res.headers['svc-quota-used']).toBeUndefined();
      expect(res.json().message).not.toMatch(/closed|pglite|pool|Error/i);
    } finally {
      await broken.api.close();
      await broken.admin.close();
      if (broken.testDb.dir) rmSync(broken.testDb.dir, { recursive: true, force: true });
    }
  });
});
