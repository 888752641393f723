// Idempotency of POST /v1/redeem (docs/reference/idempotency.md#answers) and concurrency (docs/reference/redeem.md#concurrency).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { maskCode } from '../../src/core/crypto/code-crypto.ts';
import { purgeExpiredKeys } from '../../src/core/redeem/idempotency-keys.ts';
import { createMerchant, createTestApp, issueTestKey, type TestApp } from '../helpers/app.ts';
import { addStock, me, redeem, uniqueCode, walletInvariants } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ sandboxSlowMs: 300 });
});
afterAll(() => t.close());

const PLAYER = '5123456789';

describe('replay and conflict', () => {
  test('the same key and body replays the answer, whatever the key order and spacing', async () => {
    const m = await createMerchant(t);
    const code = uniqueCode();
    const first = await redeem(
      t,
      m.key,
      `{"player_id":"${PLAYER}","codes":["${code}"],"reference":"r1"}`,
      'replay-1',
    );
    expect(first.statusCode).toBe(200);
    expect(first.headers['svc-idempotent-replay']).toBe('false');
    const again = await redeem(
      t,
      m.key,
      `{ "reference" : "r1", "codes" : [ "${code}" ], "player_id" : "${PLAYER}" }`,
      'replay-1',
    );
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(first.body);
    expect(again.headers['svc-idempotent-replay']).toBe('true');
    expect(again.headers['x-request-id']).toBe(first.headers['x-request-id']);
    expect(again.headers['svc-cost']).toBe('0');
    expect(again.headers['svc-quota-used']).toBe('1');
    expect((await me(t, m.key)).quota.used_today).toBe(1);
  });

  test('the same key with another body is 422 idempotency_conflict, also for a refused first try', async () => {
    const m = await createMerchant(t);
    const code = uniqueCode();
    await redeem(t, m.key, { player_id: PLAYER, codes: [code] }, 'conflict-1');
    const other = await redeem(t, m.key, { player_id: PLAYER, codes: [code], reference: 'x' }, 'conflict-1');
    expect(other.statusCode).toBe(422);
    expect(other.json()).toEqual({
      ok: false,
      error_code: 'idempotency_conflict',
      message: expect.any(String),
      request_id: other.headers['x-request-id'],
    });
    expect(other.headers['svc-idempotent-replay']).toBe('false');
  });

  test('keys are per customer and mode', async () => {
    const m = await createMerchant(t, { topup: { live: 1 } });
    const live = await issueTestKey(t, m.customerId, { mode: 'live' });
    const other = await createMerchant(t);
    const body = { player_id: PLAYER, codes: [uniqueCode()] };
    expect((await redeem(t, m.key, body, 'shared')).statusCode).toBe(200);
    const liveRes = await redeem(t, live.key, body, 'shared');
    expect(liveRes.statusCode).toBe(200); // the live sandbox has its own memory of codes
    expect(liveRes.headers['svc-idempotent-replay']).toBe('false');
    expect(liveRes.json().mode).toBe('live');
    const otherRes = await redeem(t, other.key, body, 'shared');
    expect(otherRes.headers['svc-idempotent-replay']).toBe('false');
    expect(otherRes.json().codes[0].status).toBe('code_used'); // same test sandbox, code already used
  });

  test('a key is kept 24 hours, then it is new again', async () => {
    t.clock.set('2026-11-22T09:00:00Z');
    const m = await createMerchant(t);
    const body = { player_id: PLAYER, codes: [uniqueCode()] };
    await redeem(t, m.key, body, 'day-key');
    t.clock.set('2026-11-23T08:59:59Z');
    expect((await redeem(t, m.key, body, 'day-key')).headers['svc-idempotent-replay']).toBe('true');
    t.clock.set('2026-11-23T09:00:01Z');
    // The sweep's purge removes the expired key row; a key still in its 24 hours stays.
    await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode()] }, 'young-key');
    expect(await purgeExpiredKeys(t.ctx.db, t.clock.now())).toBeGreaterThanOrEqual(1);
    const keys = await t.ctx.db.query<{ key: string }>(
      'select key from idempotency_keys where customer_id = $1 order by key',
      [m.customerId],
    );
    expect(keys.rows.map((r) => r.key)).toEqual(['young-key']);
    const fresh = await redeem(t, m.key, body, 'day-key');
    expect(fresh.headers['svc-idempotent-replay']).toBe('false');
    expect(fresh.json().codes[0].status).toBe('code_used');
    t.clock.set('2026-11-22T09:00:00Z');
  });
});

describe('concurrency', () => {
  test('20 identical requests at once execute once and bill once', async () => {
    const m = await createMerchant(t, {
      plan: { daily_limit: null, per_request_usd: '0.25' },
      topup: { test: 10 },
    });
    const body = { player_id: PLAYER, codes: [uniqueCode('SLOW')] };
    const answers = await Promise.all(Array.from({ length: 20 }, () => redeem(t, m.key, body, 'twenty')));
    const executed = answers.filter(
      (a) => a.statusCode === 200 && a.headers['svc-idempotent-replay'] === 'false',
    );
    expect(executed).toHaveLength(1);
    for (const a of answers) {
      if (a === executed[0]) continue;
      if (a.statusCode === 409) {
        expect(a.json().error_code).toBe('idempotency_in_progress');
        expect(a.headers['retry-after']).toBe('1');
      } else {
        expect(a.statusCode).toBe(200);
        expect(a.headers['svc-idempotent-replay']).toBe('true');
      }
    }
    expect((await me(t, m.key)).balance_usd).toBe(9.75);
    expect(await walletInvariants(t, m.customerId, 'test')).toEqual({
      balance: 9_750_000,
      held: 0,
      ledger: 9_750_000,
      open: 0,
    });
  });

  test('10 concurrent stock redeems over 10 codes hand out every code exactly once', async () => {
    const m = await createMerchant(t);
    const codes = Array.from({ length: 10 }, () => uniqueCode());
    await addStock(t, m.customerId, 'test', '660', codes);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => redeem(t, m.key, { player_id: PLAYER, packs: { '660': 1 } })),
    );
    const handed = answers.map((a) => {
      expect(a.statusCode).toBe(200);
      return a.json().codes[0].code as string;
    });
    // Answered masked (docs/reference/redeem.md#stock-codes-are-masked): the last 4 characters tell the codes apart here.
    expect(new Set(handed).size).toBe(10);
    expect([...handed].sort()).toEqual(codes.map((c) => maskCode(c.slice(-4), c.length)).sort());
    // Each code went to exactly one job.
    const used = await t.ctx.db.query<{ n: number; jobs: number }>(
      `select count(*)::int as n, count(distinct reserved_by)::int as jobs from stock_codes
        where customer_id = $1 and state = 'consumed'`,
      [m.customerId],
    );
    expect(used.rows[0]).toEqual({ n: 10, jobs: 10 });
    const extra = await redeem(t, m.key, { player_id: PLAYER, packs: { '660': 1 } });
    expect(extra.json().error_code).toBe('no_stock');
  });

  test('a caller code in flight is never sent twice at once', async () => {
    const m = await createMerchant(t);
    const code = uniqueCode('SLOW');
    const [a, b] = await Promise.all([
      redeem(t, m.key, { player_id: PLAYER, codes: [code] }),
      redeem(t, m.key, { player_id: PLAYER, codes: [code] }),
    ]);
    const statuses = [a, b]
      .map((r) => r.json().codes[0])
      .map((c) => `${c.status}/${c.disposition}/${c.billed}`)
      .sort();
    // One activates; the other either saw it in flight (failed, kept, refunded) or came after (code_used).
    expect(statuses[0]).toBe('activated/consumed/true');
    expect(['failed/kept/false', 'code_used/deleted/true']).toContain(statuses[1]);
  });
});
