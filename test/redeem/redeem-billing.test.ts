// Billing of sync redeems (docs/reference/billing-and-quota.md#capture-and-release): include first, then the wallet; refunds give back
// wallet requests first; refusals hold nothing; counters reset at 00:00 UTC.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { maskCode } from '../../src/core/crypto/code-crypto.ts';
import { createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { addStock, me, redeem, uniqueCode, walletInvariants } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ sandboxSlowMs: 20 });
});
afterAll(() => t.close());

const PLAYER = '5123456789';
const codesOf = (r: { json(): unknown }) =>
  (r.json() as { codes: { status: string; disposition: string; billed: boolean }[] }).codes.map((c) => [
    c.status,
    c.disposition,
    c.billed,
  ]);

describe('include, then wallet', () => {
  test('a capped plan with overage bills the include first, refunds wallet requests first', async () => {
    t.clock.set('2026-11-22T09:00:00Z');
    const m = await createMerchant(t, {
      plan: { daily_limit: 3, per_request_usd: '0.5' },
      topup: { test: 2 },
    });

    const a = await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode(), uniqueCode()] });
    expect(a.statusCode).toBe(200);
    expect(a.headers['svc-cost']).toBe('2');
    expect(a.headers['svc-quota-used']).toBe('2');
    expect(a.headers['svc-quota-remaining']).toBe('1');
    expect(a.headers['svc-balance-usd']).toBe('2');

    // 1 included + 2 from the wallet held; outcomes: billed, refunded, billed.
    const b = await redeem(t, m.key, {
      player_id: PLAYER,
      codes: [uniqueCode(), uniqueCode('FAIL'), uniqueCode()],
    });
    expect(b.statusCode).toBe(200);
    expect(codesOf(b)).toEqual([
      ['activated', 'consumed', true],
      ['failed', 'kept', false],
      ['activated', 'consumed', true],
    ]);
    expect(b.headers['svc-cost']).toBe('2');
    expect(b.headers['svc-balance-usd']).toBe('1.5');
    expect((await me(t, m.key)).quota).toEqual({
      daily_limit: 3,
      used_today: 4,
      remaining_today: 0,
      overage_today: 1,
    });

    const inv = await walletInvariants(t, m.customerId, 'test');
    expect(inv).toEqual({ balance: 1_500_000, held: 0, ledger: 1_500_000, open: 0 });
  });

  test('an uncapped plan bills every request from the wallet', async () => {
    const m = await createMerchant(t, {
      plan: { daily_limit: null, per_request_usd: '0.0035' },
      topup: { test: 1 },
    });
    const r = await redeem(t, m.key, {
      player_id: PLAYER,
      codes: [uniqueCode(), uniqueCode('USED'), uniqueCode('FAIL')],
    });
    expect(r.statusCode).toBe(200);
    expect(r.headers['svc-cost']).toBe('2');
    expect(r.headers['svc-balance-usd']).toBe('0.993');
    const body = await me(t, m.key);
    expect(body.quota).toEqual({ daily_limit: null, used_today: 2, remaining_today: 0, overage_today: 2 });
    expect(body.balance_usd).toBe(0.993);
  });

  test('bad_player outcomes are refunded: quota and balance restored', async () => {
    const m = await createMerchant(t, {
      plan: { daily_limit: null, per_request_usd: '1' },
      topup: { test: 2 },
    });
    const r = await redeem(t, m.key, { player_id: '000123456', codes: [uniqueCode(), uniqueCode()] });
    expect(r.statusCode).toBe(422);
    expect(r.json()).toMatchObject({ ok: false, billed_requests: 0, refunded_requests: 2, uc_delivered: 0 });
    expect(codesOf(r)).toEqual([
      ['bad_player', 'kept', false],
      ['bad_player', 'kept', false],
    ]);
    expect(r.headers['svc-cost']).toBe('0');
    expect((await me(t, m.key)).quota.used_today).toBe(0);
    expect((await me(t, m.key)).balance_usd).toBe(2);
    expect(await walletInvariants(t, m.customerId, 'test')).toEqual({
      balance: 2_000_000,
      held: 0,
      ledger: 2_000_000,
      open: 0,
    });
  });

  test('counters reset at 00:00 UTC', async () => {
    t.clock.set('2026-11-22T23:59:58Z');
    const m = await createMerchant(t, { plan: { daily_limit: 2, per_request_usd: '1', overage: false } });
    expect(
      (await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode(), uniqueCode()] })).statusCode,
    ).toBe(200);
    const refused = await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode()] });
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ ok: false, error_code: 'quota_exceeded', retry_after_sec: 2 });
    expect(refused.headers['retry-after']).toBe('2');
    t.clock.set('2026-11-23T00:00:01Z');
    expect((await me(t, m.key)).quota).toEqual({
      daily_limit: 2,
      used_today: 0,
      remaining_today: 2,
      overage_today: 0,
    });
    expect((await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode()] })).statusCode).toBe(200);
    t.clock.set('2026-11-22T09:00:00Z');
  });
});

describe('refusals hold and bill nothing', () => {
  test('no plan, inactive plan → 402 no_plan', async () => {
    const none = await createMerchant(t, { plan: null, topup: { test: 5 } });
    const r = await redeem(t, none.key, { player_id: PLAYER, codes: [uniqueCode()] });
    expect(r.statusCode).toBe(402);
    expect(r.json()).toEqual({
      ok: false,
      error_code: 'no_plan',
      message: expect.any(String),
      request_id: r.headers['x-request-id'],
    });
    const inactive = await createMerchant(t, {
      plan: { daily_limit: 10, per_request_usd: '0.01', active: false },
    });
    expect(
      (await redeem(t, inactive.key, { player_id: PLAYER, codes: [uniqueCode()] })).json().error_code,
    ).toBe('no_plan');
  });

  test('subscription required and expired → 402 subscription_expired with the date', async () => {
    const m = await createMerchant(t, {
      subscription: { required: true, expires_at: '2026-11-01T00:00:00Z' },
    });
    const r = await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode()] });
    expect(r.statusCode).toBe(402);
    expect(r.json()).toEqual({
      ok: false,
      error_code: 'subscription_expired',
      message: expect.any(String),
      request_id: r.headers['x-request-id'],
      subscription_expired_at: '2026-11-01T00:00:00Z',
    });
    // Not required: a past date does not matter.
    const free = await createMerchant(t, {
      subscription: { required: false, expires_at: '2026-11-01T00:00:00Z' },
    });
    expect((await redeem(t, free.key, { player_id: PLAYER, codes: [uniqueCode()] })).statusCode).toBe(200);
  });

  test('wallet too low → 402 insufficient_funds; the key stays unused', async () => {
    const m = await createMerchant(t, {
      plan: { daily_limit: 1, per_request_usd: '0.5' },
      topup: { test: '0.4' },
    });
    const body = { player_id: PLAYER, codes: [uniqueCode(), uniqueCode()] };
    const r = await redeem(t, m.key, body, 'funds-key');
    expect(r.statusCode).toBe(402);
    expect(r.json().error_code).toBe('insufficient_funds');
    expect(r.headers['svc-cost']).toBe('0');
    expect((await me(t, m.key)).quota.used_today).toBe(0);
    await t.ctx.db.transaction(async (tx) => {
      await tx.query(
        `insert into wallet_ledger (customer_id, mode, amount_micros, balance_after_micros, kind, created_at)
         values ($1, 'test', 100000, 500000, 'topup', now())`,
        [m.customerId],
      );
      await tx.query(`update accounts set balance_micros = 500000 where customer_id = $1 and mode = 'test'`, [
        m.customerId,
      ]);
    });
    const retry = await redeem(t, m.key, body, 'funds-key');
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['svc-idempotent-replay']).toBe('false');
    expect(retry.headers['svc-balance-usd']).toBe('0');
  });
});

describe('stock source', () => {
  test('every disposition for stock codes, and the stock left behind', async () => {
    const m = await createMerchant(t, { topup: { test: 1 } });
    const codes = [
      uniqueCode('OK'),
      uniqueCode('USED'),
      uniqueCode('INVALID'),
      uniqueCode('FAIL'),
      uniqueCode('TIMEOUT'),
    ];
    expect(await addStock(t, m.customerId, 'test', '60', codes)).toMatchObject({ added: 5 });
    const r = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 5 } });
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(body.source).toBe('stock');
    // Stock codes are answered masked (docs/reference/redeem.md#stock-codes-are-masked).
    expect(body.codes.map((c: { code: string }) => c.code)).toEqual(
      codes.map((c) => maskCode(c.slice(-4), c.length)),
    );
    expect(codesOf(r)).toEqual([
      ['activated', 'consumed', true],
      ['code_used', 'deleted', true],
      ['invalid_code', 'deleted', true],
      ['failed', 'returned', false],
      ['failed', 'quarantined', false],
    ]);
    expect(body.codes[0]).toMatchObject({ category: '60', uc: 60, error_code: '' });
    expect(body.uc_delivered).toBe(60);
    const stock = await t.api.inject({
      method: 'GET',
      url: '/v1/stock',
      headers: { authorization: `Bearer ${m.key}` },
    });
    expect(stock.json().categories[0]).toEqual({
      category: '60',
      uc: 60,
      available: 1,
      reserved: 0,
      quarantined: 1,
    });
  });

  test('bad_player returns stock codes; uc picks the fewest codes; no_stock holds nothing', async () => {
    const m = await createMerchant(t, { topup: { test: 1 } });
    await addStock(t, m.customerId, 'test', '60', [uniqueCode(), uniqueCode(), uniqueCode()]);
    await addStock(t, m.customerId, 'test', '325', [uniqueCode()]);
    const bad = await redeem(t, m.key, { player_id: '000999999', packs: { '60': 1 } });
    expect(bad.statusCode).toBe(422);
    expect(codesOf(bad)).toEqual([['bad_player', 'returned', false]]);

    const uc = await redeem(t, m.key, { player_id: PLAYER, uc: 385 });
    expect(uc.statusCode).toBe(200);
    expect(
      uc
        .json()
        .codes.map((c: { uc: number }) => c.uc)
        .sort(),
    ).toEqual([325, 60]);
    expect(uc.json().uc_delivered).toBe(385);

    const before = await me(t, m.key);
    const none = await redeem(t, m.key, { player_id: PLAYER, uc: 325 });
    expect(none.statusCode).toBe(409);
    expect(none.json().error_code).toBe('no_stock');
    expect({ ...(await me(t, m.key)), request_id: null }).toEqual({ ...before, request_id: null });
    const tooMany = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 3 } });
    expect(tooMany.json().error_code).toBe('no_stock');
  });
});
