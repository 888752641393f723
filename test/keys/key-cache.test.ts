// The in-process key cache (src/core/keys/key-cache.ts) never delays a revocation or a disabled
// customer: GET /v1/me and POST /v1/redeem of a cached key run their own statement first, and
// that statement reads both again. Revoked through this process, by hand in SQL, or through
// another process: seen at once, answered in the documented order.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { shardedByCustomer } from '../../src/db/citus.ts';
import { countersNow } from '../../src/db/database.ts';
import { adminCall, bearer, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { onPostgres } from '../helpers/db.ts';
import { adminHttp, serverProcesses } from '../helpers/process.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  // The request log's timed writes of refusals would land inside the statement counts below.
  // Statements counted below are the test's own: no request-log flush or read-budget settle
  // (each once a second by default) falls inside a count (a settle once did, in a CI run).
  t = await createTestApp({
    jobWorker: false,
    env: { REQUEST_LOG_FLUSH_MS: '3600000', READ_BUDGET_SETTLE_MS: '3600000' },
  });
});
afterAll(() => t.close());

const getMe = (key: string) => t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });

/** GET /v1/me and the statements it ran. */
async function meCounted(key: string) {
  const before = countersNow(t.ctx.db);
  const res = await getMe(key);
  return { res, statements: t.ctx.db.counters.statements - before.statements };
}

/** The statements that find a key by its digest. */
const keyLookup = async () => ((await shardedByCustomer(t.ctx.db)) ? 2 : 1);

/**
 * A merchant whose key this process has cached: its first GET /v1/me finds the key (one statement,
 * two on Citus: docs/running/citus.md#keys-to-customers), its second is one statement (which
 * also takes the read budget's slot, docs/reference/limits.md#read-budget).
 */
async function cachedMerchant() {
  const m = await createMerchant(t, { topup: { test: 2 } });
  expect((await meCounted(m.key)).statements).toBe((await keyLookup()) + 1);
  const hit = await meCounted(m.key);
  expect(hit.res.statusCode).toBe(200);
  expect(hit.statements).toBe(1);
  return m;
}

function expectError(res: Awaited<ReturnType<typeof getMe>>, status: number, code: string) {
  expect(res.statusCode).toBe(status);
  expect(res.json()).toMatchObject({ ok: false, error_code: code });
}

describe('a cached key', () => {
  test('revoked through the admin API of this process: 401 revoked on the next request', async () => {
    const m = await cachedMerchant();
    await adminCall(t, 'POST', `/admin/v1/keys/${m.keyId}/revoke`);
    const after = await meCounted(m.key);
    expectError(after.res, 401, 'revoked');
    // Still answered from the cache plus the one statement: the statement saw the revocation.
    expect(after.statements).toBe(1);
    // Not identified: no quota headers on a 401.
    expect(after.res.headers['svc-quota-used']).toBeUndefined();
  });

  test('revoked by hand in SQL: 401 revoked on the next request', async () => {
    const m = await cachedMerchant();
    await t.ctx.db.query('update api_keys set revoked_at = now() where id = $1', [m.keyId]);
    expectError((await meCounted(m.key)).res, 401, 'revoked');
  });

  test('customer disabled by hand in SQL: 403 unknown_customer with the quota headers', async () => {
    const m = await cachedMerchant();
    await t.ctx.db.query('update customers set disabled_at = now() where id = $1', [m.customerId]);
    const { res, statements } = await meCounted(m.key);
    expectError(res, 403, 'unknown_customer');
    expect(statements).toBe(1);
    expect(res.headers['svc-quota-used']).toBe('0');
    expect(res.headers['svc-quota-remaining']).toBe('100');
    expect(res.headers['svc-balance-usd']).toBe('2');
  });

  test('revoked and disabled: the contract order answers revoked first', async () => {
    const m = await cachedMerchant();
    await t.ctx.db.query('update customers set disabled_at = now() where id = $1', [m.customerId]);
    await t.ctx.db.query('update api_keys set revoked_at = now() where id = $1', [m.keyId]);
    expectError(await getMe(m.key), 401, 'revoked');
  });

  test('past its expiry while cached: 401 expired', async () => {
    const m = await createMerchant(t, { key: { expires_at: '2026-11-22T10:00:00Z' } });
    t.clock.set('2026-11-22T09:00:00Z');
    expect((await getMe(m.key)).statusCode).toBe(200);
    t.clock.set('2026-11-22T10:00:00Z');
    expectError(await getMe(m.key), 401, 'expired');
    t.clock.set('2026-11-22T09:00:00Z');
  });

  test('an address outside the allowlist while cached: 403 ip_denied, with the quota headers', async () => {
    const m = await createMerchant(t, { key: { allowed_ips: ['127.0.0.1'] } });
    expect((await getMe(m.key)).statusCode).toBe(200);
    const res = await t.api.inject({
      method: 'GET',
      url: '/v1/me',
      headers: bearer(m.key),
      remoteAddress: '10.9.8.7',
    });
    expectError(res, 403, 'ip_denied');
    expect(res.headers['svc-quota-remaining']).toBe('100');
  });
});

describe('a cached key on GET /v1/jobs/{id}', () => {
  const getJob = (key: string, id: string) =>
    t.api.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: bearer(key) });

  async function cachedJob() {
    const m = await createMerchant(t, { topup: { test: 2 } });
    const res = await redeem(t, m.key, {
      player_id: '5123456789',
      codes: [`${uniqueCode('OKAY')}-60`],
      async: true,
    });
    const id = res.json().job_id as string;
    expect((await getJob(m.key, id)).statusCode).toBe(200);
    return { m, id };
  }

  test('revoked by hand in SQL: 401 revoked, no quota headers', async () => {
    const { m, id } = await cachedJob();
    await t.ctx.db.query('update api_keys set revoked_at = now() where id = $1', [m.keyId]);
    const res = await getJob(m.key, id);
    expectError(res, 401, 'revoked');
    expect(res.headers['svc-quota-used']).toBeUndefined();
  });

  test('customer disabled by hand in SQL: 403 unknown_customer with the quota headers', async () => {
    const { m, id } = await cachedJob();
    await t.ctx.db.query('update customers set disabled_at = now() where id = $1', [m.customerId]);
    const res = await getJob(m.key, id);
    expectError(res, 403, 'unknown_customer');
    expect(res.headers['svc-quota-used']).toBe('1');
  });

  test("another customer's job: 404 with the caller's quota headers", async () => {
    const { id } = await cachedJob();
    const other = await createMerchant(t, { topup: { test: 1 } });
    expect((await getMe(other.key)).statusCode).toBe(200);
    const res = await getJob(other.key, id);
    expectError(res, 404, 'not_found');
    expect(res.headers['svc-quota-used']).toBe('0');
  });
});

describe('a cached key on POST /v1/redeem', () => {
  const oneCode = () => ({ player_id: '5123456789', codes: [`${uniqueCode('OKAY')}-60`] });
  const post = (key: string, payload: unknown, idem = `k-${Math.random()}`) =>
    t.api.inject({
      method: 'POST',
      url: '/v1/redeem',
      headers: { ...bearer(key), 'idempotency-key': idem, 'content-type': 'application/json' },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });
  /** The key's burst window as stored (accepted request times). */
  const window = async (keyId: string) =>
    (
      await t.ctx.db.query<{ n: number }>(
        'select coalesce(array_length(hits_ms, 1), 0) as n from key_burst_windows where key_id = $1',
        [keyId],
      )
    ).rows[0]?.n ?? 0;

  async function cachedRedeemer() {
    const m = await createMerchant(t, { topup: { test: 2 } });
    expect((await redeem(t, m.key, oneCode())).statusCode).toBe(200);
    return m;
  }

  test('revoked by hand in SQL: 401 revoked, no burst slot taken, nothing billed', async () => {
    const m = await cachedRedeemer();
    await t.ctx.db.query('update api_keys set revoked_at = now() where id = $1', [m.keyId]);
    const before = countersNow(t.ctx.db);
    const res = await post(m.key, oneCode());
    expectError(res, 401, 'revoked');
    expect(res.headers['ratelimit-limit']).toBeUndefined();
    expect(res.headers['svc-quota-used']).toBeUndefined();
    // Phase 1's statement saw the revocation; the key was then looked up for the answer.
    expect(t.ctx.db.counters.statements - before.statements).toBe(1 + (await keyLookup()));
    expect(await window(m.keyId)).toBe(1);
    const jobs = await t.ctx.db.query('select 1 from jobs where customer_id = $1', [m.customerId]);
    expect(jobs.rows).toHaveLength(1);
  });

  test('customer disabled by hand in SQL: 403 unknown_customer with RateLimit and quota headers', async () => {
    const m = await cachedRedeemer();
    await t.ctx.db.query('update customers set disabled_at = now() where id = $1', [m.customerId]);
    const res = await post(m.key, oneCode());
    expectError(res, 403, 'unknown_customer');
    expect(res.headers['ratelimit-remaining']).toBe('29');
    expect(res.headers['svc-quota-used']).toBe('1');
    expect(await window(m.keyId)).toBe(1);
  });

  test('revoked, with a body over 256 KB: 401 revoked, not 413', async () => {
    const m = await cachedRedeemer();
    await t.ctx.db.query('update api_keys set revoked_at = now() where id = $1', [m.keyId]);
    expectError(await post(m.key, 'x'.repeat(300_000)), 401, 'revoked');
  });

  test('a malformed body or one over 256 KB still counts in the burst window; the 31st is 429 before 400 or 413', async () => {
    const m = await cachedRedeemer();
    const bad = await post(m.key, '{"player_id": ');
    expectError(bad, 400, 'bad_request');
    expect(bad.headers['ratelimit-remaining']).toBe('28');
    expect(bad.headers['svc-quota-used']).toBe('1');
    const big = await post(m.key, 'x'.repeat(300_000));
    expectError(big, 413, 'payload_too_large');
    expect(big.headers['ratelimit-remaining']).toBe('27');
    for (let i = 0; i < 27; i++) expect((await post(m.key, {})).statusCode).toBe(400);
    expect(await window(m.keyId)).toBe(30);
    const limited = await post(m.key, '{"player_id": ');
    expectError(limited, 429, 'rate_limited');
    expect(limited.headers['retry-after']).toBeDefined();
    expectError(await post(m.key, 'x'.repeat(300_000)), 429, 'rate_limited');
    expectError(await post(m.key, oneCode()), 429, 'rate_limited');
    expect(await window(m.keyId)).toBe(30);
  });
});

const processes = serverProcesses();

test.skipIf(!onPostgres)(
  'revoked through another process: 401 revoked at once in the process that cached it',
  { timeout: 120_000 },
  async () => {
    const [a, b] = [await processes.start(processes.dataDir()), await processes.start(processes.dataDir())];
    const { customer_id: customerId } = await adminHttp<{ customer_id: number }>(
      a,
      'POST',
      '/admin/v1/customers',
      { name: 'two processes' },
    );
    const { key, key_id: keyId } = await adminHttp<{ key: string; key_id: string }>(
      a,
      'POST',
      `/admin/v1/customers/${customerId}/keys`,
      { mode: 'test' },
    );
    const meOf = (url: string) => fetch(`${url}/v1/me`, { headers: bearer(key) });
    // Process a has seen the key twice: it is cached there.
    expect((await meOf(a.url)).status).toBe(200);
    expect((await meOf(a.url)).status).toBe(200);
    await adminHttp(b, 'POST', `/admin/v1/keys/${keyId}/revoke`);
    const res = await meOf(a.url);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ ok: false, error_code: 'revoked' });
    // POST /v1/redeem of the same cached key: refused by phase 1's own statement.
    const redeemed = await fetch(`${a.url}/v1/redeem`, {
      method: 'POST',
      headers: { ...bearer(key), 'idempotency-key': 'after-revoke', 'content-type': 'application/json' },
      body: JSON.stringify({ player_id: '5123456789', codes: ['OKAY-AFTER-REVOKE-60'] }),
    });
    expect(redeemed.status).toBe(401);
    expect(await redeemed.json()).toMatchObject({ ok: false, error_code: 'revoked' });
  },
);
