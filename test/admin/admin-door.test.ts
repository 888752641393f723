// Key reroll (docs/reference/operators-and-audit.md#key-reroll) and the admin door (docs/reference/operators-and-audit.md#the-admin-door): the old key's grace ends through the
// expiry check every key passes (with the injected clock); failed authentications lock an address
// out, right token or wrong; only the listener's own Host names are answered; the console cookie
// is Secure over TLS, here through a trusted proxy's X-Forwarded-Proto.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN, createMerchant, createTestApp, merchantGet, type TestApp } from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { ADMIN_HOSTNAMES: 'admin.example.com, ops.example.com:8443' } });
});
afterAll(() => t.close());

const reroll = (keyId: string, payload: unknown) =>
  t.admin.inject({
    method: 'POST',
    url: `/admin/v1/keys/${keyId}/reroll`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: payload as object,
  });
const me = (key: string) => merchantGet(t, '/v1/me', key);
const stock = (key: string) => merchantGet(t, '/v1/stock', key);

describe('key reroll', () => {
  test('a new key like the old one; the old one works until the grace ends, then 401 expired', async () => {
    t.clock.set('2026-11-22T09:00:00Z');
    const m = await createMerchant(t, {
      key: {
        mode: 'test',
        scopes: ['read'],
        allowed_ips: ['127.0.0.0/8'],
        expires_at: '2027-01-01T00:00:00Z',
      },
    });
    // This process has seen the old key: a cached key must still meet the new expiry.
    expect((await me(m.key)).statusCode).toBe(200);
    const res = await reroll(m.keyId, { grace_seconds: 3600 });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      key_id: expect.stringMatching(/^key_/),
      key: expect.stringMatching(/^rk_test_[A-Za-z0-9]{32}$/),
      key_prefix: body.key.slice(0, 12),
      old_key_expires_at: '2026-11-22T10:00:00Z',
    });
    const shown = (
      await t.admin.inject({
        method: 'GET',
        url: `/admin/v1/customers/${m.customerId}`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      })
    ).json();
    const newKey = shown.keys.find((k: { key_id: string }) => k.key_id === body.key_id);
    expect(newKey).toMatchObject({
      mode: 'test',
      scopes: ['read'],
      allowed_ips: ['127.0.0.0/8'],
      label: 'test',
      expires_at: '2027-01-01T00:00:00Z',
      revoked_at: null,
    });

    t.clock.set('2026-11-22T09:59:59Z');
    for (const key of [m.key, body.key]) {
      expect((await me(key)).statusCode).toBe(200);
      expect((await stock(key)).statusCode).toBe(200);
    }
    t.clock.set('2026-11-22T10:00:00Z');
    for (const res of [await me(m.key), await stock(m.key)]) {
      expect([res.statusCode, res.json().error_code]).toEqual([401, 'expired']);
    }
    expect((await me(body.key)).statusCode).toBe(200);
    t.clock.set('2026-11-22T09:00:00Z');
  });

  test('POST /v1/redeem with a process-cached old key answers 401 expired once the grace ends', async () => {
    t.clock.set('2026-11-22T09:00:00Z');
    const m = await createMerchant(t);
    const body = (code: string) => ({ player_id: '5123456789', codes: [code] });
    // The first redeem caches the key in this process; the redeem statement re-checks it after.
    expect((await redeem(t, m.key, body(uniqueCode()))).statusCode).toBe(200);
    expect((await reroll(m.keyId, { grace_seconds: 60 })).statusCode).toBe(201);
    t.clock.set('2026-11-22T09:00:59Z');
    expect((await redeem(t, m.key, body(uniqueCode()))).statusCode).toBe(200);
    t.clock.set('2026-11-22T09:01:00Z');
    const late = await redeem(t, m.key, body(uniqueCode()));
    expect([late.statusCode, late.json().error_code]).toEqual([401, 'expired']);
    t.clock.set('2026-11-22T09:00:00Z');
  });

  test('grace 0 ends the old key at once; an earlier expiry is kept', async () => {
    const m = await createMerchant(t);
    expect((await me(m.key)).statusCode).toBe(200);
    const res = await reroll(m.keyId, { grace_seconds: 0 });
    expect(res.json().old_key_expires_at).toBe('2026-11-22T09:00:00Z');
    expect((await me(m.key)).json().error_code).toBe('expired');

    const soon = await createMerchant(t, { key: { expires_at: '2026-11-22T09:05:00Z' } });
    const r = await reroll(soon.keyId, { grace_seconds: 3600 });
    expect(r.json().old_key_expires_at).toBe('2026-11-22T09:05:00Z');
  });

  test('a revoked or expired key is 409 conflict, an unknown one 404, a bad grace 400', async () => {
    const revoked = await createMerchant(t);
    await t.admin.inject({
      method: 'POST',
      url: `/admin/v1/keys/${revoked.keyId}/revoke`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const expired = await createMerchant(t, { key: { expires_at: '2026-11-22T08:00:00Z' } });
    for (const keyId of [revoked.keyId, expired.keyId]) {
      const res = await reroll(keyId, { grace_seconds: 10 });
      expect([res.statusCode, res.json().error_code]).toEqual([409, 'conflict']);
    }
    expect((await reroll('key_nothing', { grace_seconds: 10 })).statusCode).toBe(404);
    for (const grace of [-1, 2_592_001, 1.5, '10', null]) {
      const res = await reroll(revoked.keyId, { grace_seconds: grace });
      expect([res.statusCode, res.json().error_code], String(grace)).toEqual([400, 'bad_request']);
    }
    expect((await reroll(revoked.keyId, {})).statusCode).toBe(400);
  });
});

describe('the admin door', () => {
  const asFrom = (ip: string, token: string, url = '/admin/v1/customers') =>
    t.admin.inject({ method: 'GET', url, remoteAddress: ip, headers: { authorization: `Bearer ${token}` } });

  test('10 failures in 60 s lock the address out, right token or wrong, until 60 s after the last', async () => {
    const ip = '10.9.8.7';
    for (let i = 0; i < 9; i++) expect((await asFrom(ip, `wrong-${i}`)).statusCode).toBe(401);
    expect((await asFrom(ip, ADMIN_TOKEN)).statusCode).toBe(200);
    t.clock.advance(30_000);
    expect((await asFrom(ip, 'wrong-last')).statusCode).toBe(401);
    const locked = await asFrom(ip, ADMIN_TOKEN);
    expect(locked.statusCode).toBe(429);
    expect(locked.headers['retry-after']).toBe('60');
    expect(locked.json()).toEqual({
      ok: false,
      error_code: 'rate_limited',
      message: 'too many failed admin authentications from this address; try again in 60 s',
      request_id: locked.headers['x-request-id'],
      retry_after_sec: 60,
    });
    // Another address is not affected; the console's pages are locked too.
    expect((await asFrom('10.9.8.6', ADMIN_TOKEN)).statusCode).toBe(200);
    expect((await t.admin.inject({ method: 'GET', url: '/console', remoteAddress: ip })).statusCode).toBe(
      429,
    );
    t.clock.advance(59_000);
    expect((await asFrom(ip, ADMIN_TOKEN)).headers['retry-after']).toBe('1');
    t.clock.advance(1_000);
    expect((await asFrom(ip, ADMIN_TOKEN)).statusCode).toBe(200);
    const logs = t.logs.join('');
    expect(logs).toContain('"ip":"10.9.8.7"');
    expect(logs).not.toContain('wrong-last');
    t.clock.set('2026-11-22T09:00:00Z');
  });

  test('ADMIN_LOCKOUT_AFTER sets how many failures lock an address out', async () => {
    const strict = await createTestApp({ env: { ADMIN_LOCKOUT_AFTER: '3' } });
    try {
      const from = (token: string) =>
        strict.admin.inject({
          method: 'GET',
          url: '/admin/v1/customers',
          remoteAddress: '10.9.7.1',
          headers: { authorization: `Bearer ${token}` },
        });
      for (let i = 0; i < 2; i++) expect((await from(`wrong-${i}`)).statusCode).toBe(401);
      expect((await from(ADMIN_TOKEN)).statusCode).toBe(200);
      expect((await from('wrong-2')).statusCode).toBe(401);
      const locked = await from(ADMIN_TOKEN);
      expect([locked.statusCode, locked.json().error_code, locked.headers['retry-after']]).toEqual([
        429,
        'rate_limited',
        '60',
      ]);
    } finally {
      await strict.close();
    }
  });

  test('failed console sign-ins count too', async () => {
    const ip = '10.9.8.5';
    const signIn = (token: string) =>
      t.admin.inject({
        method: 'POST',
        url: '/console/session',
        remoteAddress: ip,
        headers: { 'x-console': '1' },
        payload: { token },
      });
    for (let i = 0; i < 10; i++) expect((await signIn(`nope-${i}`)).statusCode).toBe(401);
    expect((await signIn(ADMIN_TOKEN)).statusCode).toBe(429);
    t.clock.advance(60_000);
    expect((await signIn(ADMIN_TOKEN)).statusCode).toBe(200);
    t.clock.set('2026-11-22T09:00:00Z');
  });

  test.each([
    ['localhost:80', 200],
    ['127.0.0.1:8081', 200],
    ['[::1]:8081', 200],
    ['LOCALHOST', 200],
    ['admin.example.com', 200],
    ['ops.example.com:8443', 200],
    ['evil.example', 421],
    ['localhost.evil.example', 421],
    ['127.0.0.1.nip.io:8081', 421],
  ])('Host %s answers %i', async (host, status) => {
    const res = await t.admin.inject({
      method: 'GET',
      url: '/admin/v1/customers',
      headers: { host, authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.statusCode, res.body).toBe(status);
    if (status === 421) expect(res.json().error_code).toBe('misdirected_request');
  });

  test('over a socket, a loopback Host with another port is 421', async () => {
    await t.admin.listen({ host: '127.0.0.1', port: 0 });
    const port = (t.admin.server.address() as { port: number }).port;
    // node:http sends the Host header as given (fetch would put the URL's).
    const get = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            path: '/admin/v1/customers',
            headers: { host, authorization: `Bearer ${ADMIN_TOKEN}` },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', reject);
        req.end();
      });
    expect(await get(`127.0.0.1:${port}`)).toBe(200);
    expect(await get(`localhost:${port}`)).toBe(200);
    expect(await get(`localhost:${port + 1}`)).toBe(421);
    expect(await get('attacker.example')).toBe(421);
  });
});

describe('the console cookie', () => {
  const signIn = (app: TestApp, headers: Record<string, string>) =>
    app.admin.inject({
      method: 'POST',
      url: '/console/session',
      headers: { 'x-console': '1', ...headers },
      payload: { token: ADMIN_TOKEN },
    });

  test('Secure behind a trusted proxy saying https; never from an untrusted one', async () => {
    const proxied = await createTestApp({ env: { TRUST_PROXY: '127.0.0.1' } });
    try {
      const viaProxy = await signIn(proxied, {
        'x-forwarded-proto': 'https',
        'x-forwarded-for': '203.0.113.9',
      });
      expect(viaProxy.statusCode, viaProxy.body).toBe(200);
      expect(String(viaProxy.headers['set-cookie'])).toMatch(/; Secure$/);
      const plain = await signIn(proxied, {});
      expect(String(plain.headers['set-cookie'])).not.toContain('Secure');
    } finally {
      await proxied.close();
    }
    const untrusted = await signIn(t, { 'x-forwarded-proto': 'https' });
    expect(untrusted.statusCode).toBe(200);
    expect(String(untrusted.headers['set-cookie'])).not.toContain('Secure');
  });
});
