// Burst limit (docs/reference/limits.md#redeem-burst-limit): the sliding window on the database, the hook on a test-only
// burst-limited route, concurrency within one pool and across two pools (two processes).
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  BURST_LIMIT,
  BURST_WINDOW_MS,
  burstSlotFrom,
  takeBurstSlot,
  takeWindowSlot,
  type WindowRule,
} from '../../src/core/limits/window-limit.ts';
import { type Database, openPostgres } from '../../src/db/database.ts';
import { bearer, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
let db: Database;
beforeAll(async () => {
  t = await createTestApp();
  db = t.ctx.db;
  // A test-only route with the same config POST /v1/redeem uses, added before the app is ready.
  t.api.post('/v1/__burst', { config: { auth: 'redeem', burstLimit: true } }, async () => ({ ok: true }));
});
afterAll(() => t.close());

const T0 = Date.parse('2026-11-22T09:00:00.250Z');
const at = (ms: number) => new Date(T0 + ms);
// A key as the burst limit knows it: its id and its customer (its window is the customer's row).
const newKeyId = () => ({ id: `key_burst_${randomUUID()}`, customerId: 1 });

async function takeMany(keyId: { id: string; customerId: number }, n: number, ms: number) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await takeBurstSlot(db, keyId, at(ms)));
  return out;
}

describe('takeBurstSlot', () => {
  test('30 accepted in a window, the 31st refused, then accepted once the oldest leaves', async () => {
    const key = newKeyId();
    const first = await takeMany(key, 30, 0);
    expect(first.map((s) => s.allowed)).toEqual(Array(30).fill(true));
    expect(first.map((s) => s.remaining)).toEqual(Array.from({ length: 30 }, (_, i) => 29 - i));
    for (const s of first) expect(s).toMatchObject({ limit: 30, resetSec: 10 });
    expect(first[0]!.retryAfterSec).toBeUndefined();

    const refused = await takeBurstSlot(db, key, at(0));
    expect(refused).toEqual({ allowed: false, limit: 30, remaining: 0, resetSec: 10, retryAfterSec: 10 });

    // Still refused a millisecond before the wait ends: (now - 10 s, now] includes t = 0.
    expect((await takeBurstSlot(db, key, at(9_999))).allowed).toBe(false);
    const after = await takeBurstSlot(db, key, at(10_000));
    expect(after).toEqual({ allowed: true, limit: 30, remaining: 29, resetSec: 10 });
  });

  test('the window slides: requests spread over time leave one by one', async () => {
    const key = newKeyId();
    for (let i = 0; i < 30; i++) expect((await takeBurstSlot(db, key, at(i * 100))).allowed).toBe(true);
    const refused = await takeBurstSlot(db, key, at(3_000));
    // The oldest (t = 0) leaves at 10 s: 7 s from now.
    expect(refused).toEqual({ allowed: false, limit: 30, remaining: 0, resetSec: 7, retryAfterSec: 7 });
    const retried = await takeBurstSlot(db, key, at(3_000 + refused.retryAfterSec! * 1000));
    expect(retried.allowed).toBe(true);
    expect(retried.remaining).toBe(0);
    // Now t = 0.1 s is the oldest counted: it leaves 0.1 s from now, rounded up to 1 s.
    expect(retried.resetSec).toBe(1);
    const next = await takeBurstSlot(db, key, at(10_000));
    expect(next).toEqual({ allowed: false, limit: 30, remaining: 0, resetSec: 1, retryAfterSec: 1 });
    expect((await takeBurstSlot(db, key, at(10_100))).allowed).toBe(true);
  });

  test('not a fixed window: 29 at t=0 and 2 at t=9.9 s do not all pass', async () => {
    const key = newKeyId();
    expect((await takeMany(key, 29, 0)).every((s) => s.allowed)).toBe(true);
    const a = await takeBurstSlot(db, key, at(9_900));
    const b = await takeBurstSlot(db, key, at(9_900));
    expect(a).toEqual({ allowed: true, limit: 30, remaining: 0, resetSec: 1 });
    expect(b).toEqual({ allowed: false, limit: 30, remaining: 0, resetSec: 1, retryAfterSec: 1 });
    // At 10 s the 29 of t = 0 are gone; the one of 9.9 s still counts.
    const c = await takeBurstSlot(db, key, at(10_000));
    expect(c).toEqual({ allowed: true, limit: 30, remaining: 28, resetSec: 10 });
  });

  test('refused requests do not count in the window', async () => {
    const key = newKeyId();
    await takeMany(key, 30, 0);
    for (let ms = 100; ms < 10_000; ms += 100) {
      expect((await takeBurstSlot(db, key, at(ms))).allowed).toBe(false);
    }
    // Had any refusal been recorded, the window (0 s, 10 s] would be full now.
    expect(await takeBurstSlot(db, key, at(10_000))).toEqual({
      allowed: true,
      limit: 30,
      remaining: 29,
      resetSec: 10,
    });
  });

  test('keys are independent', async () => {
    const a = newKeyId();
    const b = newKeyId();
    await takeMany(a, 30, 0);
    expect((await takeBurstSlot(db, a, at(1))).allowed).toBe(false);
    expect(await takeBurstSlot(db, b, at(1))).toEqual({
      allowed: true,
      limit: 30,
      remaining: 29,
      resetSec: 10,
    });
    expect((await takeBurstSlot(db, a, at(2))).allowed).toBe(false);
  });

  test('remaining and reset are exact to the millisecond and rounded up', async () => {
    const key = newKeyId();
    await takeBurstSlot(db, key, at(0));
    expect(await takeBurstSlot(db, key, at(2_500))).toEqual({
      allowed: true,
      limit: 30,
      remaining: 28,
      resetSec: 8,
    });
    expect(await takeBurstSlot(db, key, at(9_999))).toEqual({
      allowed: true,
      limit: 30,
      remaining: 27,
      resetSec: 1,
    });
    // t = 0 has left; the oldest counted is now t = 2.5 s, leaving at 12.5 s.
    expect(await takeBurstSlot(db, key, at(10_000))).toEqual({
      allowed: true,
      limit: 30,
      remaining: 27,
      resetSec: 3,
    });
    expect(burstSlotFrom(true, [], T0)).toEqual({ allowed: true, limit: 30, remaining: 30, resetSec: 0 });
  });

  test('the row of a key never holds more than the window (old times are dropped)', async () => {
    const key = newKeyId();
    for (let ms = 0; ms < 60_000; ms += 250) await takeBurstSlot(db, key, at(ms));
    const r = await db.query<{ n: number }>(
      'select cardinality(hits_ms) as n from key_burst_windows where customer_id = $1 and key_id = $2',
      [key.customerId, key.id],
    );
    expect(r.rows[0]!.n).toBeLessThanOrEqual(BURST_LIMIT);
    expect(r.rows[0]!.n).toBe(30);
  });

  test('matches a model of the sliding window for random arrival times', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Dense enough that most runs fill the window and see refusals.
        fc.array(fc.integer({ min: 0, max: 15_000 }), { minLength: 25, maxLength: 90 }),
        async (times) => {
          times.sort((x, y) => x - y);
          const key = newKeyId();
          const accepted: number[] = [];
          for (const ms of times) {
            const inWindow = accepted.filter((a) => a > ms - BURST_WINDOW_MS);
            const expectAllowed = inWindow.length < BURST_LIMIT;
            const slot = await takeBurstSlot(db, key, at(ms));
            expect(slot.allowed).toBe(expectAllowed);
            if (expectAllowed) accepted.push(ms);
            const counted = accepted.filter((a) => a > ms - BURST_WINDOW_MS);
            expect(slot.remaining).toBe(BURST_LIMIT - counted.length);
            expect(slot.resetSec).toBe(Math.ceil((Math.min(...counted) + BURST_WINDOW_MS - ms) / 1000));
            if (!slot.allowed) {
              // A request after the wait would be accepted (no other request in between).
              const later = ms + slot.retryAfterSec! * 1000;
              expect(accepted.filter((a) => a > later - BURST_WINDOW_MS).length).toBeLessThan(BURST_LIMIT);
              expect(slot.retryAfterSec).toBeGreaterThanOrEqual(1);
            }
          }
          // No 10-second window holds more than 30 accepted requests.
          for (const end of accepted) {
            expect(accepted.filter((a) => a > end - BURST_WINDOW_MS && a <= end).length).toBeLessThanOrEqual(
              BURST_LIMIT,
            );
          }
        },
      ),
      // No shrinking: each step costs database round trips; the failing case is printed as found.
      { numRuns: 25, endOnFailure: true },
    );
  });

  test('40 concurrent takes for one key accept exactly 30', async () => {
    const key = newKeyId();
    const slots = await Promise.all(Array.from({ length: 40 }, () => takeBurstSlot(db, key, at(0))));
    expect(slots.filter((s) => s.allowed)).toHaveLength(30);
    expect(
      slots
        .filter((s) => s.allowed)
        .map((s) => s.remaining)
        .sort((x, y) => x - y),
    ).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(slots.filter((s) => !s.allowed).every((s) => s.retryAfterSec === 10)).toBe(true);
  });

  test.skipIf(!process.env.DATABASE_URL)(
    'two processes (two pools) on one PostgreSQL share the window of a key',
    async () => {
      const url = process.env.DATABASE_URL!;
      const [p1, p2] = await Promise.all([openPostgres(url), openPostgres(url)]);
      try {
        const key = newKeyId();
        // Both pools send their takes at once, interleaved, with slightly different clocks.
        const calls = Array.from({ length: 40 }, (_, i) =>
          takeBurstSlot(i % 2 === 0 ? p1 : p2, key, at(i % 2 === 0 ? 0 : 3)),
        );
        const slots = await Promise.all(calls);
        expect(slots.filter((s) => s.allowed)).toHaveLength(30);
        const fromEach = [0, 1].map((p) => slots.filter((s, i) => i % 2 === p && s.allowed).length);
        expect(fromEach[0]! + fromEach[1]!).toBe(30);
        // The limit holds for a later wave too, still within the window.
        const more = await Promise.all([p1, p2].map((p) => takeBurstSlot(p, key, at(5_000))));
        expect(more.every((s) => !s.allowed)).toBe(true);
      } finally {
        await Promise.all([p1.close(), p2.close()]);
      }
    },
  );

  test('timing of one take (printed, not asserted)', async () => {
    const n = 300;
    const keys = Array.from({ length: 10 }, newKeyId);
    const started = performance.now();
    for (let i = 0; i < n; i++) await takeBurstSlot(db, keys[i % keys.length]!, at(i * 30));
    const perCall = (performance.now() - started) / n;
    console.log(`[burst-limit] ${db.kind}: ${perCall.toFixed(3)} ms per takeBurstSlot (${n} sequential)`);
    expect(perCall).toBeGreaterThan(0);
  });
});

describe('takeWindowSlot (the tenant limits, read from the slot statement as two numbers)', () => {
  const rule: WindowRule = { bucket: 'test', what: 'tests', limit: 5, windowMs: 3_000 };

  test('matches a model of the sliding window when processes stamp times out of order', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Arrivals in order, each stamped by a process whose clock is up to 1.5 s off.
        fc.array(fc.tuple(fc.integer({ min: 0, max: 8_000 }), fc.integer({ min: -1_500, max: 1_500 })), {
          minLength: 10,
          maxLength: 40,
        }),
        async (arrivals) => {
          const subject = newKeyId().id;
          // The subject's log as every take leaves it: the times inside that take's window.
          let counted: number[] = [];
          const stamps = arrivals.sort(([x], [y]) => x - y).map(([t, skew]) => Math.max(0, t + skew));
          for (const ms of stamps) {
            counted = counted.filter((a) => a > ms - rule.windowMs);
            const allowed = counted.length < rule.limit;
            if (allowed) counted.push(ms);
            const untilOldestLeaves =
              counted.length === 0 ? 0 : Math.ceil((Math.min(...counted) + rule.windowMs - ms) / 1000);
            const slot = await takeWindowSlot(db, rule, subject, at(ms));
            expect(slot).toEqual({
              allowed,
              limit: rule.limit,
              remaining: rule.limit - counted.length,
              resetSec: Math.max(0, untilOldestLeaves),
              ...(allowed
                ? {}
                : {
                    retryAfterSec: Math.max(1, untilOldestLeaves),
                    fullUntilMs: T0 + Math.min(...counted) + rule.windowMs,
                  }),
            });
          }
        },
      ),
      { numRuns: 25, endOnFailure: true },
    );
  });
});

describe('burst limit over HTTP', () => {
  test('30 accepted with RateLimit headers, the 31st is 429 rate_limited with Retry-After', async () => {
    const m = await createMerchant(t);
    for (let i = 0; i < 30; i++) {
      const res = await t.api.inject({ method: 'POST', url: '/v1/__burst', headers: bearer(m.key) });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ ok: true });
      expect(res.headers['ratelimit-limit']).toBe('30');
      expect(res.headers['ratelimit-remaining']).toBe(String(29 - i));
      expect(res.headers['ratelimit-reset']).toBe('10');
    }
    t.clock.advance(1_500);
    const res = await t.api.inject({ method: 'POST', url: '/v1/__burst', headers: bearer(m.key) });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({
      ok: false,
      error_code: 'rate_limited',
      message: expect.any(String),
      request_id: res.headers['x-request-id'],
      retry_after_sec: 9,
    });
    expect(res.headers['retry-after']).toBe('9');
    expect(res.headers['ratelimit-limit']).toBe('30');
    expect(res.headers['ratelimit-remaining']).toBe('0');
    expect(res.headers['ratelimit-reset']).toBe('9');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    // The key was identified: the quota headers are there, and nothing was billed.
    expect(res.headers['svc-quota-used']).toBe('0');
    expect(res.headers['svc-cost']).toBe('0');

    t.clock.advance(9_000);
    const again = await t.api.inject({ method: 'POST', url: '/v1/__burst', headers: bearer(m.key) });
    expect(again.statusCode).toBe(200);
    expect(again.headers['ratelimit-remaining']).toBe('29');
  });

  test('the burst limit answers before the body is validated', async () => {
    const m = await createMerchant(t);
    for (let i = 0; i < 30; i++) {
      await t.api.inject({ method: 'POST', url: '/v1/__burst', headers: bearer(m.key) });
    }
    const res = await t.api.inject({
      method: 'POST',
      url: '/v1/__burst',
      headers: { ...bearer(m.key), 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(res.statusCode).toBe(429);
    expect(res.json().error_code).toBe('rate_limited');
  });

  test('authentication comes first: a bad key gets no RateLimit headers; an unscoped key gets its window, not counted', async () => {
    const res = await t.api.inject({ method: 'POST', url: '/v1/__burst' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['ratelimit-limit']).toBeUndefined();

    // Identified but refused (403): the window as it stands, this request not counted.
    const reader = await createMerchant(t, { key: { scopes: ['read'] } });
    const denied = await t.api.inject({ method: 'POST', url: '/v1/__burst', headers: bearer(reader.key) });
    expect(denied.statusCode).toBe(403);
    expect(denied.json().error_code).toBe('scope_denied');
    expect(denied.headers).toMatchObject({
      'ratelimit-limit': '30',
      'ratelimit-remaining': '30',
      'ratelimit-reset': '0',
    });
    const rows = await db.query('select 1 from key_burst_windows where key_id = $1', [reader.keyId]);
    expect(rows.rowCount).toBe(0);
  });

  test('other endpoints are not burst-limited', async () => {
    const m = await createMerchant(t);
    for (let i = 0; i < 30; i++) {
      await t.api.inject({ method: 'POST', url: '/v1/__burst', headers: bearer(m.key) });
    }
    expect(
      (await t.api.inject({ method: 'POST', url: '/v1/__burst', headers: bearer(m.key) })).statusCode,
    ).toBe(429);
    for (let i = 0; i < 35; i++) {
      const res = await t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(m.key) });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
    const health = await t.api.inject({ method: 'GET', url: '/v1/health' });
    expect(health.statusCode).toBe(200);
    expect(health.headers['ratelimit-limit']).toBeUndefined();
  });
});
