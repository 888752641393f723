// Money across customers per UTC day: GET /admin/v1/money sums the wallet ledger of
// every customer by day and kind (top-ups, charges, refunds, adjustments), of one mode or both,
// every day of the range present, as JSON or CSV. Real redeems billed from the wallet.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { adminCall, adminGet, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  // Two customers, every request from the wallet: charges are ledger entries.
  const plan = { daily_limit: 0, per_request_usd: '0.25', overage: true };
  const a = await createMerchant(t, { plan, topup: { test: 10 } });
  const b = await createMerchant(t, { plan, topup: { test: 2, live: 7 } });
  for (const m of [a, a, b])
    expect((await redeem(t, m.key, { player_id: '5123456789', codes: [uniqueCode()] })).statusCode).toBe(200);
  t.clock.advance(86_400_000);
  await adminCall(t, 'POST', `/admin/v1/customers/${a.customerId}/wallet/adjust`, {
    mode: 'test',
    usd: '-0.05',
    reason: 'fee',
  });
});
afterAll(() => t.close());

const get = (url: string, headers: Record<string, string> = {}) => adminGet(t, url, headers);

describe('GET /admin/v1/money', () => {
  test('per day across customers, of one mode: top-ups, charges, adjustments; every day present', async () => {
    const res = await get('/admin/v1/money?mode=test&from=2026-11-21&to=2026-11-23');
    expect(res.statusCode, res.body).toBe(200);
    const zero = { topups_usd: 0, charges_usd: 0, refunds_usd: 0, adjustments_usd: 0 };
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      mode: 'test',
      currency: 'USD',
      from: '2026-11-21',
      to: '2026-11-23',
      days: [
        { date: '2026-11-21', ...zero },
        { date: '2026-11-22', ...zero, topups_usd: 12, charges_usd: 0.75 },
        { date: '2026-11-23', ...zero, adjustments_usd: -0.05 },
      ],
      totals: { topups_usd: 12, charges_usd: 0.75, refunds_usd: 0, adjustments_usd: -0.05 },
    });
    const live = (await get('/admin/v1/money?mode=live&from=2026-11-22&to=2026-11-22')).json();
    expect(live.days).toEqual([
      { date: '2026-11-22', topups_usd: 7, charges_usd: 0, refunds_usd: 0, adjustments_usd: 0 },
    ]);
    const both = (await get('/admin/v1/money?from=2026-11-22&to=2026-11-22')).json();
    expect(both).toMatchObject({ mode: null, totals: { topups_usd: 19, charges_usd: 0.75 } });
    // By default the 30 days ending today.
    const recent = (await get('/admin/v1/money')).json();
    expect(recent).toMatchObject({ from: '2026-10-25', to: '2026-11-23' });
    expect(recent.days).toHaveLength(30);
  });

  test('CSV: a header row, one row per day; bad ranges are 400 bad_request', async () => {
    const res = await get('/admin/v1/money?mode=test&from=2026-11-22&to=2026-11-23', { accept: 'text/csv' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(
      'attachment; filename="money-test-2026-11-22-2026-11-23.csv"',
    );
    expect(res.body).toBe(
      'date,topups_usd,charges_usd,refunds_usd,adjustments_usd\r\n2026-11-22,12,0.75,0,0\r\n2026-11-23,0,0,0,-0.05\r\n',
    );
    for (const q of [
      'from=2026-11-24&to=2026-11-23',
      'from=2026-02-30',
      'mode=prod',
      'from=2024-01-01&to=2026-01-01',
      'x=1',
    ])
      expect((await get(`/admin/v1/money?${q}`)).statusCode, q).toBe(400);
  });
});
