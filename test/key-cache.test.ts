// The in-process key cache (src/core/key-cache.ts) never delays a revocation or a disabled
// customer: GET /v1/me of a cached key runs one statement, and that statement reads both again.
// Revoked through this process, by hand in SQL, or through another process: seen at once.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { countersNow } from '../src/db/database.ts';
import { adminCall, bearer, createMerchant, createTestApp, type TestApp } from './helpers/app.ts';
import { onPostgres } from './helpers/db.ts';
import { adminHttp, serverProcesses } from './helpers/process.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
});
afterAll(() => t.close());

const getMe = (key: string) => t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });

/** GET /v1/me and the statements it ran. */
async function meCounted(key: string) {
  const before = countersNow(t.ctx.db);
  const res = await getMe(key);
  return { res, statements: t.ctx.db.counters.statements - before.statements };
}

/** A merchant whose key this process has cached: its second GET /v1/me is one statement. */
async function cachedMerchant() {
  const m = await createMerchant(t, { topup: { test: 2 } });
  expect((await meCounted(m.key)).statements).toBe(2);
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
  },
);
