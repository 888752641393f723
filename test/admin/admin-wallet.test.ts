// Safe wallet operations (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments): top-up and adjust under an Idempotency-Key scoped to
// the customer, byte-identical replays, conflicts, bounds, no adjustment below zero, and a ledger
// that says who made each entry and by which request.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { addOperator, auditCount } from '../helpers/operators.ts';

let t: TestApp;
let carol: string;
beforeAll(async () => {
  t = await createTestApp();
  carol = (await addOperator(t.admin, 'carol', 'admin')).token;
});
afterAll(() => t.close());

function post(url: string, payload: unknown, key: string | undefined, token = carol) {
  return t.admin.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${token}`, ...(key === undefined ? {} : { 'idempotency-key': key }) },
    payload: payload as object,
  });
}

const ledgerCount = async (customerId: number) =>
  (
    await t.ctx.db.query<{ n: number }>(
      'select count(*)::int as n from wallet_ledger where customer_id = $1',
      [customerId],
    )
  ).rows[0]!.n;

describe('Idempotency-Key on top-up and adjust', () => {
  test.each(['topup', 'adjust'])(
    '%s: missing is 400 idempotency_required; malformed is 400 bad_request',
    async (op) => {
      const m = await createMerchant(t);
      const url = `/admin/v1/customers/${m.customerId}/wallet/${op}`;
      const body = { mode: 'test', usd: 1, ...(op === 'adjust' ? { reason: 'r' } : {}) };
      const missing = await post(url, body, undefined);
      expect([missing.statusCode, missing.json().error_code]).toEqual([400, 'idempotency_required']);
      for (const key of ['k'.repeat(256), 'tab\there', 'é']) {
        const res = await post(url, body, key);
        expect([res.statusCode, res.json().error_code], key).toEqual([400, 'bad_request']);
      }
      const longest = await post(url, body, 'k'.repeat(255));
      expect(longest.statusCode).toBe(200);
      expect(await ledgerCount(m.customerId)).toBe(1);
    },
  );

  test('the same key and body replays the first answer byte for byte and writes nothing', async () => {
    const m = await createMerchant(t);
    const url = `/admin/v1/customers/${m.customerId}/wallet/topup`;
    const first = await post(url, { mode: 'live', usd: '12.5', note: 'invoice 7' }, 'inv-7');
    expect(first.statusCode).toBe(200);
    expect(first.headers['svc-idempotent-replay']).toBe('false');
    expect(first.json()).toEqual({
      ok: true,
      request_id: first.headers['x-request-id'],
      customer_id: m.customerId,
      mode: 'live',
      entry_id: expect.any(Number),
      balance_usd: 12.5,
    });
    const audits = await auditCount(t, 'carol');
    // Key order and spacing are not a different body.
    const again = await post(url, { note: 'invoice 7', usd: '12.5', mode: 'live' }, 'inv-7');
    expect([again.statusCode, again.body, again.headers['svc-idempotent-replay']]).toEqual([
      200,
      first.body,
      'true',
    ]);
    // docs/reference/keys-and-modes.md#conventions: a replay carries the original X-Request-Id too, equal to its body's.
    expect(again.headers['x-request-id']).toBe(first.headers['x-request-id']);
    expect(await ledgerCount(m.customerId)).toBe(1);
    expect(await auditCount(t, 'carol')).toBe(audits);
    // An adjustment's replay too.
    const adjustUrl = `/admin/v1/customers/${m.customerId}/wallet/adjust`;
    const adjusted = await post(adjustUrl, { mode: 'live', usd: '-2', reason: 'refund 7' }, 'adj-7');
    const adjustedAgain = await post(adjustUrl, { mode: 'live', usd: '-2', reason: 'refund 7' }, 'adj-7');
    expect([adjustedAgain.body, adjustedAgain.headers['x-request-id']]).toEqual([
      adjusted.body,
      adjusted.headers['x-request-id'],
    ]);
  });

  test('the same key with another body (another mode too) is 422 idempotency_conflict', async () => {
    const m = await createMerchant(t);
    const url = `/admin/v1/customers/${m.customerId}/wallet/topup`;
    expect((await post(url, { mode: 'live', usd: 1 }, 'k1')).statusCode).toBe(200);
    for (const body of [
      { mode: 'live', usd: 2 },
      { mode: 'test', usd: 1 },
    ]) {
      const res = await post(url, body, 'k1');
      expect([res.statusCode, res.json().error_code]).toEqual([422, 'idempotency_conflict']);
    }
    // The adjust endpoint shares the customer's keys: another path is another body.
    const adj = await post(
      `/admin/v1/customers/${m.customerId}/wallet/adjust`,
      { mode: 'live', usd: 1, reason: 'x' },
      'k1',
    );
    expect([adj.statusCode, adj.json().error_code]).toEqual([422, 'idempotency_conflict']);
    // Another customer's key space is its own.
    const other = await createMerchant(t);
    expect(
      (await post(`/admin/v1/customers/${other.customerId}/wallet/topup`, { mode: 'live', usd: 1 }, 'k1'))
        .statusCode,
    ).toBe(200);
    expect(await ledgerCount(m.customerId)).toBe(1);
  });

  test('20 identical top-ups at once write one ledger entry; every answer is the first one', async () => {
    const m = await createMerchant(t);
    const before = await ledgerCount(m.customerId);
    const url = `/admin/v1/customers/${m.customerId}/wallet/topup`;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => post(url, { mode: 'live', usd: '3.25' }, 'double-click', ADMIN_TOKEN)),
    );
    expect(await ledgerCount(m.customerId)).toBe(before + 1);
    expect(new Set(answers.map((a) => a.statusCode))).toEqual(new Set([200]));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers.filter((a) => a.headers['svc-idempotent-replay'] === 'false')).toHaveLength(1);
    expect(answers[0]!.json().balance_usd).toBe(3.25);
  });
});

describe('bounds and the correcting adjustment', () => {
  test.each([
    ['topup', { mode: 'test', usd: '1000000.000001' }],
    ['topup', { mode: 'test', usd: -1 }],
    ['topup', { mode: 'test', usd: '-1' }],
    ['adjust', { mode: 'test', usd: 0, reason: 'r' }],
    ['adjust', { mode: 'test', usd: '-1000000.000001', reason: 'r' }],
    ['adjust', { mode: 'test', usd: '1.0000001', reason: 'r' }],
    ['adjust', { mode: 'test', usd: '--1', reason: 'r' }],
    ['adjust', { mode: 'test', usd: -1 }],
    ['adjust', { mode: 'test', usd: -1, reason: '' }],
    ['adjust', { mode: 'test', usd: -1, reason: 'r'.repeat(501) }],
    ['adjust', { mode: 'test', usd: -1, reason: 'r', note: 'n' }],
  ])('%s %j is 400 bad_request and writes nothing', async (op, body) => {
    const m = await createMerchant(t);
    const res = await post(`/admin/v1/customers/${m.customerId}/wallet/${op}`, body, 'b');
    expect([res.statusCode, res.json().error_code], res.body).toEqual([400, 'bad_request']);
    expect(await ledgerCount(m.customerId)).toBe(0);
  });

  test('an adjustment of either sign; one below zero is 402 and leaves nothing, its key free', async () => {
    const m = await createMerchant(t, { topup: { test: 5 } });
    const url = `/admin/v1/customers/${m.customerId}/wallet/adjust`;
    const down = await post(url, { mode: 'test', usd: '-1.5', reason: 'credited twice' }, 'a1');
    expect(down.json()).toMatchObject({ ok: true, balance_usd: 3.5 });
    const up = await post(url, { mode: 'test', usd: 0.25, reason: 'goodwill' }, 'a2');
    expect(up.json()).toMatchObject({ ok: true, balance_usd: 3.75 });
    const audits = await auditCount(t, 'carol');
    const tooMuch = await post(url, { mode: 'test', usd: '-3.750001', reason: 'oops' }, 'a3');
    expect(tooMuch.statusCode, tooMuch.body).toBe(402);
    expect(tooMuch.json()).toMatchObject({ ok: false, error_code: 'insufficient_funds' });
    expect(await ledgerCount(m.customerId)).toBe(3);
    expect(await auditCount(t, 'carol')).toBe(audits);
    const exact = await post(url, { mode: 'test', usd: '-3.75', reason: 'close the account' }, 'a3');
    expect(exact.json()).toMatchObject({ ok: true, balance_usd: 0 });

    const ledger = await t.admin.inject({
      method: 'GET',
      url: `/admin/v1/customers/${m.customerId}/ledger?mode=test&limit=2`,
      headers: { authorization: `Bearer ${carol}` },
    });
    expect(ledger.json().entries).toEqual([
      expect.objectContaining({
        entry_id: exact.json().entry_id,
        kind: 'adjustment',
        amount_usd: -3.75,
        actor: 'carol',
        request_id: exact.headers['x-request-id'],
        note: 'close the account',
        at: '2026-11-22T09:00:00Z',
      }),
      expect.objectContaining({ kind: 'adjustment', amount_usd: 0.25, actor: 'carol', note: 'goodwill' }),
    ]);
    expect(ledger.json().next_cursor).toEqual(expect.any(String));
  });
});
