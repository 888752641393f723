import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bearer, createMerchant, createTestApp, type TestApp } from './helpers/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('GET /v1/me', () => {
  test('capped plan with a funded test wallet', async () => {
    const m = await createMerchant(t, { topup: { test: '12.5' } });
    const res = await t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(m.key) });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
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
    expect(res.headers['svc-quota-used']).toBe('0');
    expect(res.headers['svc-quota-remaining']).toBe('100');
    expect(res.headers['svc-balance-usd']).toBe('12.5');
  });
});
