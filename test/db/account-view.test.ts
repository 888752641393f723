// The account view is written twice: the SQL function account_row (src/db/functions/accounts.sql),
// which billing and GET /v1/me's plain reads call, and accountRowSql (core/accounts/accounts.ts),
// which the key and job reads join instead, because on Citus a function that reads customer
// tables cannot be called inside a query sent to a worker whole. Both must give the same row for
// every kind of account: no plan, a plan with usage and a wallet, a subscription, a disabled
// customer, another mode, another day, no such customer.
import { expect, test } from 'vitest';
import { accountRowSql, today } from '../../src/core/accounts/accounts.ts';
import { adminCall, createMerchant, createTestApp } from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

test('account_row and accountRowSql give the same row for every kind of account', async () => {
  const t = await createTestApp({ jobWorker: false });
  try {
    const noPlan = await createMerchant(t, { plan: null });
    const used = await createMerchant(t, {
      plan: { daily_limit: 1, per_request_usd: '0.01', overage: true },
      topup: { test: 5, live: 2 },
      subscription: { required: true, expires_at: '2099-01-01T00:00:00Z' },
    });
    // Usage today: one included request, one on the wallet.
    for (let i = 0; i < 2; i++)
      expect(
        (await redeem(t, used.key, { player_id: '5123456789', codes: [uniqueCode('OK')] })).statusCode,
      ).toBe(200);
    const disabled = await createMerchant(t, { plan: { daily_limit: null, per_request_usd: 0 } });
    await adminCall(t, 'POST', `/admin/v1/customers/${disabled.customerId}/disable`, {});
    const day = today(t.ctx.clock);
    const cases: [number, string, string][] = [];
    for (const id of [noPlan.customerId, used.customerId, disabled.customerId, 999_999_999])
      for (const mode of ['test', 'live']) for (const d of [day, '2001-01-01']) cases.push([id, mode, d]);
    let rows = 0;
    for (const [id, mode, d] of cases) {
      const fn = await t.ctx.db.query('select * from account_row($1, $2, $3::date)', [id, mode, d]);
      const view = await t.ctx.db.query(
        `select * from ${accountRowSql('$1::bigint', '$2::text', '$3::date')} a`,
        [id, mode, d],
      );
      expect(view.rows, `${id} ${mode} ${d}`).toEqual(fn.rows);
      rows += fn.rows.length;
    }
    // Not all empty: 3 customers × 2 modes × 2 days have a row, the unknown customer none.
    expect(rows).toBe(12);
    const usedRow = await t.ctx.db.query<{ usedToday: number; overageToday: number }>(
      `select * from ${accountRowSql('$1::bigint', "'test'", '$2::date')} a`,
      [used.customerId, day],
    );
    expect(usedRow.rows[0]).toMatchObject({ usedToday: 2, overageToday: 1 });
  } finally {
    await t.close();
  }
});
