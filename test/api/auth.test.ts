// Authentication and authorization of the public API (docs/reference/keys-and-modes.md#authentication-order): every 401 and 403,
// in the documented order, and the client address used by the IP allowlist (TRUST_PROXY).
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, test } from 'vitest';
import { adminCall, bearer, createMerchant, issueTestKey, type TestApp, useTestApp } from '../helpers/app.ts';

const REQUEST_ID = /^req_[0-9A-Za-z]{20,}$/;
const QUOTA_HEADERS = ['svc-quota-used', 'svc-quota-remaining', 'svc-balance-usd'];

/** The whole error answer: status, body (nothing else in it), and the headers of every response. */
function expectError(
  res: LightMyRequestResponse,
  status: number,
  code: string,
  opts: { identified: boolean },
) {
  expect({ status: res.statusCode, body: res.json() }).toEqual({
    status,
    body: {
      ok: false,
      error_code: code,
      message: expect.any(String),
      request_id: res.headers['x-request-id'],
    },
  });
  expect(res.headers['x-request-id']).toMatch(REQUEST_ID);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.headers['svc-version']).toBe('1.0.0');
  expect(res.headers['svc-cost']).toBe('0');
  expect(res.headers['svc-idempotent-replay']).toBe('false');
  for (const h of QUOTA_HEADERS) {
    if (opts.identified) expect(res.headers[h], h).toEqual(expect.any(String));
    else expect(res.headers[h], h).toBeUndefined();
  }
}

const swapCase = (s: string) =>
  [...s].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');

const unauthorized = (res: LightMyRequestResponse) =>
  expectError(res, 401, 'unauthorized', { identified: false });

let t: TestApp;
useTestApp({}, (app) => {
  t = app;
  // Test-only routes (added before the app is ready) for the scope rules of routes that other
  // files will register: one scope, and one of several scopes.
  t.api.get('/v1/__read', { config: { auth: 'read' } }, async (request) => ({
    ok: true,
    request_id: request.id,
  }));
  t.api.post('/v1/__write', { config: { auth: 'redeem' } }, async (request) => ({
    ok: true,
    request_id: request.id,
  }));
  t.api.get('/v1/__read_or_redeem', { config: { auth: ['read', 'redeem'] } }, async (request) => ({
    ok: true,
    request_id: request.id,
  }));
});

const me = (headers: Record<string, string> = {}, remoteAddress?: string) =>
  t.api.inject({ method: 'GET', url: '/v1/me', headers, ...(remoteAddress ? { remoteAddress } : {}) });

describe('401 unauthorized: no usable key', () => {
  let key: string;
  beforeAll(async () => {
    key = (await createMerchant(t)).key;
  });

  test('the valid key itself is accepted', async () => {
    const res = await me(bearer(key));
    expect(res.statusCode).toBe(200);
  });

  test('no Authorization header', async () => {
    unauthorized(await me());
  });

  test.each([
    ['empty header', ''],
    ['scheme only', 'Bearer'],
    ['scheme and a space', 'Bearer '],
    ['Basic scheme', 'Basic dXNlcjpwYXNz'],
    ['Token scheme', 'Token KEY'],
    ['the key without a scheme', 'KEY'],
    ['lowercase bearer', 'bearer KEY'],
    ['uppercase BEARER', 'BEARER KEY'],
    ['two spaces after Bearer', 'Bearer  KEY'],
    ['a tab after Bearer', 'Bearer\tKEY'],
    ['trailing text', 'Bearer KEY extra'],
    ['two keys', 'Bearer KEY,Bearer KEY'],
    ['key with a trailing character', 'Bearer KEYx'],
    ['key one character short', 'Bearer KEY_SHORT'],
    ['key in another case', 'Bearer KEY_UPPER'],
    ['unknown key of the right shape', 'Bearer rk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
    ['unknown live key', 'Bearer rk_live_0123456789abcdefghijABCDEFGHIJ01'],
    ['other prefix', 'Bearer sk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
    ['garbage', 'Bearer !!!$$$%%%'],
    ['SQL in the token', "Bearer ' or 1=1 --"],
    ['very long token', `Bearer ${'A'.repeat(8000)}`],
    ['non-ASCII token', 'Bearer rk_test_ÄÖÜäöüßAAAAAAAAAAAAAAAAAAAAAAAAA'],
  ])('%s', async (_name, template) => {
    const value = template
      .replace('KEY_SHORT', key.slice(0, -1))
      .replace('KEY_UPPER', key.slice(0, 8) + swapCase(key.slice(8)))
      .replaceAll('KEY', key);
    unauthorized(await me({ authorization: value }));
  });

  test('non-ASCII bytes in the header (latin1 on the wire)', async () => {
    unauthorized(await me({ authorization: Buffer.from(`Bearer ${key}é`, 'utf8').toString('latin1') }));
  });

  test('the key in another header or the query string is not accepted', async () => {
    unauthorized(await me({ 'x-api-key': key }));
    unauthorized(await t.api.inject({ method: 'GET', url: `/v1/me?api_key=${key}` }));
  });
});

describe('401 revoked and expired', () => {
  test('a revoked key is 401 revoked, at once', async () => {
    const m = await createMerchant(t);
    expect((await me(bearer(m.key))).statusCode).toBe(200);
    await adminCall(t, 'POST', `/admin/v1/keys/${m.keyId}/revoke`);
    expectError(await me(bearer(m.key)), 401, 'revoked', { identified: false });
    // Another key of the same customer keeps working.
    const other = await issueTestKey(t, m.customerId);
    expect((await me(bearer(other.key))).statusCode).toBe(200);
  });

  test('a key is accepted until its expiry and 401 expired from that instant on', async () => {
    t.clock.set('2026-11-22T09:00:00Z');
    const m = await createMerchant(t, { key: { expires_at: '2026-11-22T10:00:00Z' } });
    expect((await me(bearer(m.key))).statusCode).toBe(200);
    t.clock.set('2026-11-22T09:59:59.999Z');
    expect((await me(bearer(m.key))).statusCode).toBe(200);
    t.clock.advance(1);
    expectError(await me(bearer(m.key)), 401, 'expired', { identified: false });
    t.clock.advance(86_400_000);
    expectError(await me(bearer(m.key)), 401, 'expired', { identified: false });
    t.clock.set('2026-11-22T09:00:00Z');
  });

  test('a key issued already expired is 401 expired', async () => {
    const m = await createMerchant(t, { key: { expires_at: '2020-01-01T00:00:00Z' } });
    expectError(await me(bearer(m.key)), 401, 'expired', { identified: false });
  });
});

describe('403 unknown_customer, ip_denied, scope_denied', () => {
  test('a disabled customer is 403 unknown_customer for every key', async () => {
    const m = await createMerchant(t);
    const live = await issueTestKey(t, m.customerId, { mode: 'live' });
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/disable`);
    expectError(await me(bearer(m.key)), 403, 'unknown_customer', { identified: true });
    expectError(await me(bearer(live.key)), 403, 'unknown_customer', { identified: true });
  });

  const cases: [string, string[], string, boolean][] = [
    ['IPv4 address, same', ['203.0.113.7'], '203.0.113.7', true],
    ['IPv4 address, other', ['203.0.113.7'], '203.0.113.8', false],
    ['IPv4 CIDR, inside', ['198.51.100.0/24'], '198.51.100.254', true],
    ['IPv4 CIDR, outside', ['198.51.100.0/24'], '198.51.101.1', false],
    ['IPv4 /0 allows every IPv4', ['0.0.0.0/0'], '8.8.8.8', true],
    ['several entries, second matches', ['10.0.0.1', '192.0.2.0/28'], '192.0.2.15', true],
    ['several entries, none matches', ['10.0.0.1', '192.0.2.0/28'], '192.0.2.16', false],
    ['IPv6 address, same', ['2001:db8::1'], '2001:db8::1', true],
    ['IPv6 address, other spelling', ['2001:db8::1'], '2001:0db8:0:0:0:0:0:1', true],
    ['IPv6 address, other', ['2001:db8::1'], '2001:db8::2', false],
    ['IPv6 CIDR, inside', ['2001:db8:abcd::/48'], '2001:db8:abcd:12::9', true],
    ['IPv6 CIDR, outside', ['2001:db8:abcd::/48'], '2001:db8:abce::1', false],
    ['IPv4-mapped peer, IPv4 entry', ['192.0.2.10'], '::ffff:192.0.2.10', true],
    ['IPv4-mapped peer, IPv4 CIDR', ['192.0.2.0/24'], '::ffff:192.0.2.99', true],
    ['IPv4-mapped peer, outside', ['192.0.2.0/24'], '::ffff:192.0.3.1', false],
    ['IPv4-mapped entry, IPv4 peer', ['::ffff:192.0.2.10'], '192.0.2.10', true],
    ['IPv4-mapped CIDR entry, IPv4 peer', ['::ffff:192.0.2.0/120'], '192.0.2.200', true],
    ['IPv4 entry, IPv6 peer', ['127.0.0.1'], '::1', false],
    ['IPv6 entry, IPv4 peer', ['::1'], '127.0.0.1', false],
    ['loopback only, loopback peer', ['127.0.0.1'], '127.0.0.1', true],
  ];
  test.each(cases)('allowlist: %s', async (_name, allowed, peer, ok) => {
    const m = await createMerchant(t, { key: { allowed_ips: allowed } });
    const res = await me(bearer(m.key), peer);
    if (ok) expect(res.statusCode).toBe(200);
    else expectError(res, 403, 'ip_denied', { identified: true });
  });

  test('an empty allowlist allows any address', async () => {
    const m = await createMerchant(t);
    for (const peer of ['10.1.2.3', '2001:db8::5', '::ffff:10.0.0.1']) {
      expect((await me(bearer(m.key), peer)).statusCode).toBe(200);
    }
  });

  test('ip_denied carries the quota headers of the identified key', async () => {
    const m = await createMerchant(t, { topup: { test: '3.25' }, key: { allowed_ips: ['10.0.0.1'] } });
    const res = await me(bearer(m.key), '10.0.0.2');
    expectError(res, 403, 'ip_denied', { identified: true });
    expect(res.headers['svc-quota-used']).toBe('0');
    expect(res.headers['svc-quota-remaining']).toBe('100');
    expect(res.headers['svc-balance-usd']).toBe('3.25');
  });

  test('scope: GET /v1/me needs any valid key, other routes their scope', async () => {
    const redeemOnly = await createMerchant(t, { key: { scopes: ['redeem'] } });
    const readOnly = await issueTestKey(t, redeemOnly.customerId, { scopes: ['read'] });
    const none = await issueTestKey(t, redeemOnly.customerId, { scopes: [] });

    const meNone = await me(bearer(none.key));
    expect(meNone.statusCode).toBe(200);
    expect(meNone.json().scopes).toEqual([]);
    expect((await me(bearer(redeemOnly.key))).json().scopes).toEqual(['redeem']);

    const get = (url: string, key: string) => t.api.inject({ method: 'GET', url, headers: bearer(key) });
    expect((await get('/v1/__read', readOnly.key)).statusCode).toBe(200);
    expectError(await get('/v1/__read', redeemOnly.key), 403, 'scope_denied', { identified: true });
    expectError(await get('/v1/__read', none.key), 403, 'scope_denied', { identified: true });
    expect((await get('/v1/__read_or_redeem', readOnly.key)).statusCode).toBe(200);
    expect((await get('/v1/__read_or_redeem', redeemOnly.key)).statusCode).toBe(200);
    expectError(await get('/v1/__read_or_redeem', none.key), 403, 'scope_denied', { identified: true });
  });
});

describe('the order of the answers', () => {
  test('revoked beats expired, disabled, ip_denied and scope_denied', async () => {
    const m = await createMerchant(t, {
      key: { scopes: [], allowed_ips: ['10.0.0.1'], expires_at: '2020-01-01T00:00:00Z' },
    });
    await adminCall(t, 'POST', `/admin/v1/keys/${m.keyId}/revoke`);
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/disable`);
    expectError(await me(bearer(m.key), '10.9.9.9'), 401, 'revoked', { identified: false });
    expectError(
      await t.api.inject({
        method: 'GET',
        url: '/v1/__read',
        headers: bearer(m.key),
        remoteAddress: '10.9.9.9',
      }),
      401,
      'revoked',
      { identified: false },
    );
  });

  test('expired beats disabled customer and ip_denied', async () => {
    const m = await createMerchant(t, {
      key: { allowed_ips: ['10.0.0.1'], expires_at: '2020-01-01T00:00:00Z' },
    });
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/disable`);
    expectError(await me(bearer(m.key), '10.9.9.9'), 401, 'expired', { identified: false });
  });

  test('unknown_customer beats ip_denied and scope_denied', async () => {
    const m = await createMerchant(t, { key: { scopes: [], allowed_ips: ['10.0.0.1'] } });
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/disable`);
    const res = await t.api.inject({
      method: 'GET',
      url: '/v1/__read',
      headers: bearer(m.key),
      remoteAddress: '10.9.9.9',
    });
    expectError(res, 403, 'unknown_customer', { identified: true });
  });

  test('ip_denied beats scope_denied', async () => {
    const m = await createMerchant(t, { key: { scopes: ['redeem'], allowed_ips: ['10.0.0.1'] } });
    const at = (remoteAddress: string) =>
      t.api.inject({ method: 'GET', url: '/v1/__read', headers: bearer(m.key), remoteAddress });
    expectError(await at('10.9.9.9'), 403, 'ip_denied', { identified: true });
    expectError(await at('10.0.0.1'), 403, 'scope_denied', { identified: true });
  });

  test('authentication beats the body checks: 401 before the body is read', async () => {
    const post = (payload: string, headers: Record<string, string> = {}) =>
      t.api.inject({
        method: 'POST',
        url: '/v1/__write',
        payload,
        headers: { 'content-type': 'application/json', ...headers },
      });
    unauthorized(await post(`{"a":"${'x'.repeat(300_000)}"}`));
    unauthorized(await post('{not json'));
    unauthorized(
      await post('{not json', { authorization: 'Bearer rk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
    );
    const m = await createMerchant(t, { key: { scopes: ['read'] } });
    expectError(await post('{not json', bearer(m.key)), 403, 'scope_denied', { identified: true });
  });
});

describe('client address: X-Forwarded-For and TRUST_PROXY', () => {
  test('without TRUST_PROXY a spoofed X-Forwarded-For changes nothing', async () => {
    const m = await createMerchant(t, { key: { allowed_ips: ['203.0.113.7'] } });
    // Denied peer claiming an allowed address: still denied.
    expectError(
      await me({ ...bearer(m.key), 'x-forwarded-for': '203.0.113.7' }, '198.51.100.1'),
      403,
      'ip_denied',
      { identified: true },
    );
    expectError(
      await me({ ...bearer(m.key), 'x-forwarded-for': '198.51.100.1, 203.0.113.7' }, '198.51.100.1'),
      403,
      'ip_denied',
      { identified: true },
    );
    // Allowed peer claiming a denied address: still allowed (the header is ignored).
    expect(
      (await me({ ...bearer(m.key), 'x-forwarded-for': '198.51.100.1' }, '203.0.113.7')).statusCode,
    ).toBe(200);
    // Other forwarding headers are ignored too.
    expectError(
      await me(
        { ...bearer(m.key), 'x-real-ip': '203.0.113.7', forwarded: 'for=203.0.113.7' },
        '198.51.100.1',
      ),
      403,
      'ip_denied',
      { identified: true },
    );
  });

  describe('with TRUST_PROXY', () => {
    let p: TestApp;
    useTestApp({ env: { TRUST_PROXY: '127.0.0.1,10.10.0.0/16' } }, (app) => {
      p = app;
    });

    const pme = (key: string, remoteAddress: string, xff?: string) =>
      p.api.inject({
        method: 'GET',
        url: '/v1/me',
        remoteAddress,
        headers: { ...bearer(key), ...(xff ? { 'x-forwarded-for': xff } : {}) },
      });

    test('X-Forwarded-For from a trusted proxy is believed', async () => {
      const m = await createMerchant(p, { key: { allowed_ips: ['203.0.113.7'] } });
      expect((await pme(m.key, '127.0.0.1', '203.0.113.7')).statusCode).toBe(200);
      expect((await pme(m.key, '10.10.3.4', '203.0.113.7')).statusCode).toBe(200);
      expectError(await pme(m.key, '127.0.0.1', '203.0.113.8'), 403, 'ip_denied', { identified: true });
      // The proxy itself is not the client once it forwards.
      const proxyKey = await createMerchant(p, { key: { allowed_ips: ['127.0.0.1'] } });
      expectError(await pme(proxyKey.key, '127.0.0.1', '203.0.113.8'), 403, 'ip_denied', {
        identified: true,
      });
      // Without the header, the proxy's own address is the client.
      expect((await pme(proxyKey.key, '127.0.0.1')).statusCode).toBe(200);
    });

    test('a client cannot prepend a spoofed address through a trusted proxy', async () => {
      const m = await createMerchant(p, { key: { allowed_ips: ['203.0.113.7'] } });
      // The proxy appends the real peer (198.51.100.1); the first entry was forged by the client.
      expectError(await pme(m.key, '127.0.0.1', '203.0.113.7, 198.51.100.1'), 403, 'ip_denied', {
        identified: true,
      });
      // Chains of trusted proxies are walked to the first untrusted address.
      expect((await pme(m.key, '127.0.0.1', '203.0.113.7, 10.10.0.9')).statusCode).toBe(200);
    });

    test('X-Forwarded-For from an untrusted peer is not believed', async () => {
      const m = await createMerchant(p, { key: { allowed_ips: ['203.0.113.7'] } });
      expectError(await pme(m.key, '198.51.100.1', '203.0.113.7'), 403, 'ip_denied', { identified: true });
      expectError(await pme(m.key, '10.11.0.1', '203.0.113.7'), 403, 'ip_denied', { identified: true });
      expect((await pme(m.key, '203.0.113.7', '198.51.100.1')).statusCode).toBe(200);
    });
  });
});
