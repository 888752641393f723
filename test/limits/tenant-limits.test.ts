// Tenant limits (docs/reference/limits.md#read-budget): the read budget per key, the registration and redelivery limits
// per customer and mode, and the unknown-key limit per client address answered before any
// database lookup (in-process, bounded).
import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { createRefusalPace } from '../../src/core/limits/refusal-pace.ts';
import { addressKey, createUnknownKeyLimit } from '../../src/core/limits/unknown-key-limit.ts';
import { buildPublicApp } from '../../src/http/public-app.ts';
import { takeCustomerLimit } from '../../src/http/tenant-limits.ts';
import { registerPublicRoutes } from '../../src/routes/public.ts';
import {
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  issueTestKey,
  type TestApp,
  useTestApp,
} from '../helpers/app.ts';

let t: TestApp;
// The read budget's background settle (one statement a second on PostgreSQL) would land inside
// the statement counts below: it settles when a key's reads call for it instead. So would the
// request log's timed writes of the refusals.
useTestApp(
  {
    env: {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      READ_BUDGET_SETTLE_MS: '3600000',
      REQUEST_LOG_FLUSH_MS: '3600000',
    },
    jobWorker: false,
  },
  (app) => {
    t = app;
  },
);

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const unknownKey = () => `rk_test_${Array.from(randomBytes(32), (b) => BASE62[b % 62]).join('')}`;
const get = (url: string, key: string, remoteAddress = '127.0.0.1', headers: Record<string, string> = {}) =>
  t.api.inject({ method: 'GET', url, headers: { ...bearer(key), ...headers }, remoteAddress });

function expectRateLimited(res: Awaited<ReturnType<typeof get>>, retryAfter: number) {
  expect(res.statusCode, res.body).toBe(429);
  expect(res.headers['retry-after']).toBe(String(retryAfter));
  expect(res.json()).toEqual({
    ok: false,
    error_code: 'rate_limited',
    message: expect.stringContaining(`retry after ${retryAfter} s`),
    request_id: res.headers['x-request-id'],
    retry_after_sec: retryAfter,
  });
}

describe('read budget per key (300 per sliding 10 s)', () => {
  test('GET /v1/me, /v1/stock and /v1/jobs share one budget; the 301st read is refused, not billed', async () => {
    const m = await createMerchant(t);
    const other = await issueTestKey(t, m.customerId);
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) statuses.push((await get('/v1/me', m.key)).statusCode);
    for (let i = 0; i < 100; i++) statuses.push((await get('/v1/stock', m.key)).statusCode);
    for (let i = 0; i < 100; i++)
      statuses.push((await get('/v1/jobs/job_unknownUnknownUnknown0', m.key)).statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(200);
    expect(statuses.filter((s) => s === 404)).toHaveLength(100);

    t.clock.advance(2_000);
    for (const url of ['/v1/me', '/v1/stock', '/v1/jobs/job_unknownUnknownUnknown0']) {
      const res = await get(url, m.key);
      // The first read left the window at 10 s: 8 s from now.
      expectRateLimited(res, 8);
      // An identified key's answer: the quota headers, nothing billed.
      expect(res.headers['svc-quota-used']).toBe('0');
      expect(res.headers['svc-cost']).toBe('0');
    }
    // Known full in this process: no slot statement until the window frees, and within a second
    // of the last refusal its key check and quota headers are reused: a flood costs nothing more.
    const before = t.ctx.db.counters.statements;
    const again = await get('/v1/me', m.key);
    expectRateLimited(again, 8);
    expect(again.headers['svc-quota-used']).toBe('0');
    expect(t.ctx.db.counters.statements - before).toBe(0);
    // Another key of the same customer has its own budget; the redeem burst limit is apart.
    expect((await get('/v1/me', other.key)).statusCode).toBe(200);
    const redeem = await t.api.inject({
      method: 'POST',
      url: '/v1/redeem',
      headers: { ...bearer(m.key), 'idempotency-key': `read-budget-${m.customerId}` },
      payload: { player_id: '5123456789', codes: ['AAAA-BBBB-CCCC-0001'] },
    });
    expect(redeem.statusCode, redeem.body).not.toBe(429);

    t.clock.advance(8_000);
    expect((await get('/v1/me', m.key)).statusCode).toBe(200);
  });

  test('a refused read of a revoked or disabled key answers 401/403 first (contract order)', async () => {
    const m = await createMerchant(t);
    for (let i = 0; i < 300; i++) expect((await get('/v1/me', m.key)).statusCode).toBe(200);
    expect((await get('/v1/me', m.key)).statusCode).toBe(429);
    await adminCall(t, 'POST', `/admin/v1/keys/${m.keyId}/revoke`);
    // A refused key's check is reused for a second (a flood costs no statement): after it, the
    // revocation answers first.
    t.clock.advance(1_000);
    const res = await get('/v1/me', m.key);
    expect(res.statusCode).toBe(401);
    expect(res.json().error_code).toBe('revoked');
    t.clock.advance(10_000);
  });
});

describe('registration and redelivery limits (10 a minute per customer and mode)', () => {
  const register = (key: string, n: number) =>
    t.api.inject({
      method: 'POST',
      url: '/v1/webhook',
      headers: bearer(key),
      payload: { url: `https://127.0.0.1:9/hook-${n}` },
    });

  test('the 11th POST /v1/webhook in a minute is refused; the other mode and a minute later pass', async () => {
    const m = await createMerchant(t);
    const sameCustomerOtherKey = await issueTestKey(t, m.customerId);
    const live = await issueTestKey(t, m.customerId, { mode: 'live' });
    for (let i = 0; i < 5; i++) expect((await register(m.key, i)).statusCode).toBe(200);
    // Counted per customer and mode, whatever the key.
    for (let i = 5; i < 10; i++) expect((await register(sameCustomerOtherKey.key, i)).statusCode).toBe(200);
    t.clock.advance(30_000);
    const refused = await register(m.key, 10);
    expectRateLimited(refused, 30);
    // Nothing changed: the 10th registration is still the one in force.
    const row = await t.ctx.db.query<{ url: string }>(
      `select url from webhooks where customer_id = $1 and mode = 'test'`,
      [m.customerId],
    );
    expect(row.rows).toEqual([{ url: 'https://127.0.0.1:9/hook-9' }]);
    expect((await register(live.key, 11)).statusCode).toBe(200);
    t.clock.advance(30_000);
    expect((await register(m.key, 12)).statusCode).toBe(200);
  });

  test('redeliveries have a budget of their own (takeCustomerLimit)', async () => {
    const m = await createMerchant(t);
    const caller = { customerId: m.customerId, mode: 'test' as const };
    for (let i = 0; i < 10; i++) await takeCustomerLimit(t.ctx, 'redeliver', caller);
    await expect(takeCustomerLimit(t.ctx, 'redeliver', caller)).rejects.toMatchObject({
      code: 'rate_limited',
      extra: { retry_after_sec: 60 },
      headers: { 'Retry-After': '60' },
    });
    // The registration budget is untouched.
    expect((await register(m.key, 1)).statusCode).toBe(200);
    t.clock.advance(60_000);
  });
});

describe('unknown keys per client address (50 per 10 s, no lookup per request beyond)', () => {
  test('the 51st unknown key from an address is 429 without a lookup; valid keys and others pass', async () => {
    const m = await createMerchant(t);
    expect((await get('/v1/me', m.key, '10.1.1.1')).statusCode).toBe(200);
    for (let i = 0; i < 50; i++) {
      const res = await get('/v1/me', unknownKey(), '10.1.1.1');
      expect(res.statusCode).toBe(401);
    }
    t.clock.advance(3_000);
    const before = t.ctx.db.counters.statements;
    const refused = await get('/v1/me', unknownKey(), '10.1.1.1');
    const refusedStock = await get('/v1/stock', unknownKey(), '10.1.1.1');
    // No lookup of the key: each refusal waits for a read of the keys made since the last read
    // (at most one a second per process; here the first read of all), which it is not among.
    expect(t.ctx.db.counters.statements - before).toBeLessThanOrEqual(2);
    expectRateLimited(refused, 7);
    expectRateLimited(refusedStock, 7);
    // No key identified: no quota headers.
    expect(refused.headers['svc-quota-used']).toBeUndefined();
    // A key without the well-formed shape is a 401 (no lookup anyway); a valid key passes;
    // another address is not affected.
    expect((await get('/v1/me', 'rk_test_short', '10.1.1.1')).json().error_code).toBe('unauthorized');
    expect((await get('/v1/me', m.key, '10.1.1.1')).statusCode).toBe(200);
    expect((await get('/v1/stock', m.key, '10.1.1.1')).statusCode).toBe(200);
    expect((await get('/v1/me', unknownKey(), '10.1.1.2')).statusCode).toBe(401);
    // Until the window passes.
    t.clock.advance(7_000);
    expect((await get('/v1/me', unknownKey(), '10.1.1.1')).statusCode).toBe(401);
  });

  test('a valid key this process never saw passes an address over its limit, also after a restart', async () => {
    for (let i = 0; i < 51; i++) await get('/v1/me', unknownKey(), '10.4.4.4');
    expect((await get('/v1/me', unknownKey(), '10.4.4.4')).statusCode).toBe(429);
    // A key issued now, never used: its normal answer, with the quota headers.
    const m = await createMerchant(t);
    const fresh = await get('/v1/me', m.key, '10.4.4.4');
    expect(fresh.statusCode, fresh.body).toBe(200);
    expect(fresh.headers['svc-quota-used']).toBeDefined();
    // A restart: a new process (new caches, new counts) on the same database, where every key is
    // one it never saw.
    const restarted = await buildPublicApp(t.ctx, registerPublicRoutes);
    try {
      const send = (key: string) =>
        restarted.inject({
          method: 'GET',
          url: '/v1/stock',
          headers: bearer(key),
          remoteAddress: '10.4.4.4',
        });
      for (let i = 0; i < 51; i++) await send(unknownKey());
      expect((await send(unknownKey())).statusCode).toBe(429);
      const old = await send(m.key);
      expect(old.statusCode, old.body).toBe(200);
      expect(old.headers['svc-quota-used']).toBeDefined();
      // A flood from the refused address costs this process at most a statement a second
      // (the refresh of its known key digests), whatever the number of requests.
      const before = t.ctx.db.counters.statements;
      const flood = await Promise.all(Array.from({ length: 40 }, () => send(unknownKey())));
      for (const res of flood) expect(res.statusCode).toBe(429);
      expect(t.ctx.db.counters.statements - before).toBeLessThanOrEqual(2);
    } finally {
      await restarted.close();
    }
    t.clock.advance(10_000);
  });

  test('X-Forwarded-For changes nothing without TRUST_PROXY', async () => {
    for (let i = 0; i < 50; i++) {
      const res = await get('/v1/me', unknownKey(), '10.2.2.2', { 'x-forwarded-for': `192.0.2.${i}` });
      expect(res.statusCode).toBe(401);
    }
    const res = await get('/v1/me', unknownKey(), '10.2.2.2', { 'x-forwarded-for': '192.0.2.200' });
    expect(res.statusCode).toBe(429);
    t.clock.advance(10_000);
  });

  test('behind a trusted proxy, each forwarded client has its own count', async () => {
    const p = await createTestApp({ env: { TRUST_PROXY: '10.3.3.3' }, jobWorker: false });
    try {
      const send = (client: string) =>
        p.api.inject({
          method: 'GET',
          url: '/v1/me',
          headers: { ...bearer(unknownKey()), 'x-forwarded-for': client },
          remoteAddress: '10.3.3.3',
        });
      for (let i = 0; i < 50; i++) expect((await send('198.51.100.1')).statusCode).toBe(401);
      expect((await send('198.51.100.1')).statusCode).toBe(429);
      expect((await send('198.51.100.2')).statusCode).toBe(401);
    } finally {
      await p.close();
    }
  });

  test('memory is bounded: at most maxAddresses tracked, IPv6 counted per /64', () => {
    const limit = createUnknownKeyLimit({ limit: 2, windowMs: 10_000, maxAddresses: 3 });
    for (let i = 0; i < 1000; i++) limit.recordUnknown(`192.0.2.${i % 250}`, i);
    expect(limit.size()).toBe(3);
    // Rotating addresses inside one /64 is one subscriber.
    limit.recordUnknown('2001:db8:1:2::1', 0);
    limit.recordUnknown('2001:db8:1:2:ffff::9', 1);
    expect(limit.refusal('2001:db8:1:2:aaaa::3', 2)).toBe(10);
    expect(limit.refusal('2001:db8:1:3::1', 2)).toBeNull();
    expect(addressKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(addressKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    // A full window keeps only the newest `limit` times.
    for (let i = 0; i < 100; i++) limit.recordUnknown('198.51.100.9', 5_000 + i);
    expect(limit.refusal('198.51.100.9', 15_097)).toBe(1);
    expect(limit.refusal('198.51.100.9', 15_098)).toBeNull();
  });
});

describe('a flood of refusals is paced (100 a second per key or address, each held at most 1 s)', () => {
  test('the pace: one subject at a time, its queue capped, subjects apart, memory bounded', () => {
    const pace = createRefusalPace({ perSecond: 100, maxDelayMs: 35, capacity: 2 });
    // 10 ms apart; a refusal past the cap waits the cap and does not lengthen the queue.
    expect([0, 0, 0, 0, 0, 0].map(() => pace.delayFor('read:a', 1_000))).toEqual([0, 10, 20, 30, 35, 35]);
    expect(pace.delayFor('address:b', 1_000)).toBe(0);
    // Time passing frees the turns: a client that waits its Retry-After never waits here.
    expect(pace.delayFor('read:a', 2_000)).toBe(0);
    expect(pace.delayFor('read:a', 2_000)).toBe(10);
    // At most `capacity` subjects remembered: the oldest (address:b) was forgotten.
    pace.delayFor('read:c', 2_000);
    expect(pace.delayFor('address:b', 2_000)).toBe(0);
  });

  test('a key refused again and an address sending unknown keys get every 429, spread in time', async () => {
    const m = await createMerchant(t);
    // The key's read budget used up (kept in memory: core/limits/read-budget.ts).
    for (let i = 0; i < 300; i++) expect((await get('/v1/me', m.key)).statusCode).toBe(200);
    const started = performance.now();
    const reads = await Promise.all(Array.from({ length: 21 }, () => get('/v1/me', m.key)));
    const readsMs = performance.now() - started;
    for (const res of reads) expectRateLimited(res, 10);
    // The first refusal is answered at once; the 20 after it, 10 ms apart at the least.
    expect(readsMs).toBeGreaterThanOrEqual(190);

    for (let i = 0; i < 50; i++)
      expect((await get('/v1/me', unknownKey(), '192.0.2.77')).statusCode).toBe(401);
    const start2 = performance.now();
    const unknown = await Promise.all(
      Array.from({ length: 21 }, () => get('/v1/me', unknownKey(), '192.0.2.77')),
    );
    const unknownMs = performance.now() - start2;
    for (const res of unknown) expect(res.statusCode).toBe(429);
    expect(unknownMs).toBeGreaterThanOrEqual(190);
  });
});
