// What the hot-path work must not change: a sync answer and its replay are the same bytes, and
// concurrent redeems whose caller codes overlap, across customers, finish without a deadlock.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { redeem, uniqueCode, walletInvariants } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
});
afterAll(() => t.close());

describe('sync redeem', () => {
  test('the answer and its replay are byte-identical', async () => {
    const m = await createMerchant(t, { topup: { test: 1 } });
    const body = {
      player_id: '5123456789',
      codes: [`${uniqueCode('OKAY')}-60`, uniqueCode('USED'), uniqueCode('FAIL')],
      reference: 'order-7',
    };
    const first = await redeem(t, m.key, body, 'same-bytes');
    expect(first.statusCode).toBe(200);
    const replay = await redeem(t, m.key, body, 'same-bytes');
    expect(replay.statusCode).toBe(200);
    expect(replay.body).toBe(first.body);
    expect(replay.headers['x-request-id']).toBe(first.headers['x-request-id']);
    expect(first.headers['svc-idempotent-replay']).toBe('false');
    expect(replay.headers['svc-idempotent-replay']).toBe('true');
    expect(first.headers['svc-cost']).toBe('2');
    expect(replay.headers['svc-cost']).toBe('0');
  });

  test('overlapping caller codes across customers, all at once: every request answered, no deadlock', async () => {
    const merchants = [
      await createMerchant(t, { topup: { test: 5 } }),
      await createMerchant(t, { topup: { test: 5 } }),
    ];
    const shared = Array.from({ length: 4 }, () => `${uniqueCode('OKAY')}-60`);
    // Every request asks for the shared codes in its own order, so row and code locks are taken
    // in every order at once.
    const orders = [
      [0, 1, 2],
      [2, 1, 0],
      [1, 3, 0],
      [3, 2, 1],
      [0, 3],
      [2, 0, 3, 1],
    ];
    const answers = await Promise.all(
      merchants.flatMap((m) =>
        orders.map((order) =>
          redeem(t, m.key, { player_id: '5123456789', codes: order.map((i) => shared[i]!) }),
        ),
      ),
    );
    for (const res of answers) expect([200, 422], res.body).toContain(res.statusCode);
    // Each shared code is activated exactly once in all: the first request to mark it sends it,
    // one marking it at the same time fails it unsent, and a later one hears code_used.
    const activated = answers.flatMap((res) =>
      (res.json().codes as { status: string; code: string }[]).filter((c) => c.status === 'activated'),
    );
    expect(activated.length).toBe(shared.length);
    // PostgreSQL may still find a lock cycle between them (codes marked in other orders; a phase 1
    // waiting on an outcome that waits for the account) and roll one commit back whole: that
    // commit runs again (core/retry.ts retryOnDeadlock), so no request fails of it.
    expect(t.logs.join('')).not.toMatch(/unhandled error|deadlock detected/i);
    for (const m of merchants) {
      const w = await walletInvariants(t, m.customerId, 'test');
      expect(w.balance).toBe(w.ledger);
      expect(w.held).toBe(0);
      expect(w.open).toBe(0);
    }
  });
});
