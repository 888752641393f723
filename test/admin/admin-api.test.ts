// The admin API (docs/reference/operators-and-audit.md#the-admin-api): every endpoint's answers, its validation, its token, and
// what the merchant sees afterwards on GET /v1/me.
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, test } from 'vitest';
import {
  ADMIN_TOKEN,
  adminCall,
  createMerchant,
  expectErrorAnswer,
  merchantGet,
  type TestApp,
  useTestApp,
} from '../helpers/app.ts';

let t: TestApp;
useTestApp({}, (app) => {
  t = app;
});

// Far above any id a test run creates, and still a valid bigint.
const UNKNOWN_ID = 8_000_000_000_000;

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'HEAD';

function call(method: Method, url: string, payload?: unknown, token: string | null = ADMIN_TOKEN) {
  // A wallet write needs an Idempotency-Key (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments; its own tests: admin-wallet.test.ts).
  const idempotency = /\/wallet\/(topup|adjust)$/.test(url)
    ? { 'idempotency-key': `k-${Math.random().toString(36).slice(2)}` }
    : {};
  return t.admin.inject({
    method,
    url,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...idempotency },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/** Asserts the error body, whole, and that X-Request-Id matches it. */
function expectError(res: LightMyRequestResponse, status: number, code: string, message?: string | RegExp) {
  expectErrorAnswer(res, status, code, message);
  expect(res.headers['x-request-id']).toMatch(/^req_[A-Za-z0-9]{20,}$/);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
}

/** Asserts a success status and returns the body, after checking request_id against the header. */
function expectOk(res: LightMyRequestResponse, status = 200): Record<string, unknown> {
  expect({ status: res.statusCode, body: res.json() }).toMatchObject({ status, body: { ok: true } });
  const body = res.json();
  expect(body.request_id).toBe(res.headers['x-request-id']);
  return body;
}

async function newCustomer(name = 'Acme'): Promise<number> {
  const body = expectOk(await call('POST', '/admin/v1/customers', { name }), 201);
  return body.customer_id as number;
}

async function showCustomer(id: number) {
  const body = expectOk(await call('GET', `/admin/v1/customers/${id}`));
  // Stock counts belong to the stock tests; everything else is asserted whole here.
  const { stock: _stock, ...rest } = body;
  return rest;
}

const me = (key: string) => merchantGet(t, '/v1/me', key);

const ZERO_WALLETS = {
  live: { balance_usd: 0, held_usd: 0, spendable_usd: 0 },
  test: { balance_usd: 0, held_usd: 0, spendable_usd: 0 },
};

describe('the admin token', () => {
  const endpoints: [Method, string][] = [
    ['POST', '/admin/v1/customers'],
    ['GET', '/admin/v1/customers/1'],
    ['POST', '/admin/v1/customers/1/disable'],
    ['PUT', '/admin/v1/customers/1/plan'],
    ['DELETE', '/admin/v1/customers/1/plan'],
    ['PUT', '/admin/v1/customers/1/subscription'],
    ['POST', '/admin/v1/customers/1/keys'],
    ['POST', '/admin/v1/keys/key_abc/revoke'],
    ['POST', '/admin/v1/customers/1/wallet/topup'],
    ['GET', '/admin/v1/customers/1/ledger?mode=test'],
  ];

  test.each(endpoints)('%s %s without a token is 401 unauthorized', async (method, url) => {
    const res = await call(method, url, method === 'GET' || method === 'DELETE' ? undefined : {}, null);
    expectError(res, 401, 'unauthorized', 'missing or wrong admin token');
  });

  test.each([
    ['a wrong token', { authorization: 'Bearer not-the-admin-token-at-all' }],
    ['the token with one character changed', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}x` }],
    ['a token prefix', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, 10)}` }],
    ['a Basic scheme', { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` }],
    ['the bare token', { authorization: ADMIN_TOKEN }],
    ['an empty bearer', { authorization: 'Bearer ' }],
  ])('%s is 401 unauthorized and creates nothing', async (_name, headers) => {
    const res = await t.admin.inject({
      method: 'POST',
      url: '/admin/v1/customers',
      headers,
      payload: { name: 'intruder' },
    });
    expectError(res, 401, 'unauthorized', 'missing or wrong admin token');
    const rows = await t.ctx.db.query("select 1 from customers where name = 'intruder'");
    expect(rows.rows).toEqual([]);
  });

  test("a merchant's API key is not an admin token", async () => {
    const m = await createMerchant(t);
    expectError(
      await call('GET', `/admin/v1/customers/${m.customerId}`, undefined, m.key),
      401,
      'unauthorized',
    );
  });

  test('the token is never written to the logs', async () => {
    await call('GET', '/admin/v1/customers/1');
    await call('GET', '/admin/v1/customers/1', undefined, 'Bearer-guess-0123456789');
    expect(t.logs.join('')).not.toContain(ADMIN_TOKEN);
  });
});

describe('routing on the admin listener', () => {
  test('an unknown admin path is 404 not_found, with or without the token', async () => {
    expectError(
      await call('GET', '/admin/v1/nothing-here'),
      404,
      'not_found',
      'no route for GET /admin/v1/nothing-here',
    );
    expectError(await call('GET', '/admin/v1/nothing-here', undefined, null), 404, 'not_found');
    expectError(await call('POST', '/v1/redeem', {}), 404, 'not_found');
  });

  test.each([
    ['PATCH', '/admin/v1/customers', 'POST, GET, HEAD'],
    ['DELETE', '/admin/v1/customers/1', 'GET, HEAD'],
    ['GET', '/admin/v1/customers/1/disable', 'POST'],
    ['POST', '/admin/v1/customers/1/plan', 'PUT, DELETE'],
    ['PATCH', '/admin/v1/customers/1/subscription', 'PUT'],
    ['GET', '/admin/v1/keys/key_abc/revoke', 'POST'],
    ['POST', '/admin/v1/customers/1/ledger', 'GET, HEAD'],
  ] as const)('%s %s is 405 with Allow: %s, before authentication', async (method, url, allow) => {
    for (const token of [ADMIN_TOKEN, null]) {
      const res = await call(method, url, undefined, token);
      expectError(res, 405, 'method_not_allowed', `${method} is not allowed here`);
      expect(res.headers.allow).toBe(allow);
    }
  });
});

describe('POST /admin/v1/customers and GET /admin/v1/customers/{id}', () => {
  test('creates a customer with no plan, no keys and empty wallets', async () => {
    const res = await call('POST', '/admin/v1/customers', { name: '  Acme Games  ' });
    expect(res.statusCode).toBe(201);
    const created = res.json();
    expect(created).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      customer_id: expect.any(Number),
    });
    expect(await showCustomer(created.customer_id)).toEqual({
      ok: true,
      request_id: expect.any(String),
      customer: {
        customer_id: created.customer_id,
        name: 'Acme Games',
        created_at: '2026-11-22T09:00:00Z',
        disabled: false,
        disabled_at: null,
      },
      plan: null,
      subscription: { required: false, active: true, expires_at: null, days_left: null },
      keys: [],
      wallets: ZERO_WALLETS,
      usage_today: { live: { used: 0, overage: 0 }, test: { used: 0, overage: 0 } },
    });
  });

  test('customer ids are distinct', async () => {
    const a = await newCustomer('one');
    const b = await newCustomer('two');
    expect(a).not.toBe(b);
  });

  test.each([
    ['no body', undefined, /^name: /],
    ['an empty object', {}, /^name: /],
    ['an empty name', { name: '' }, /^name: /],
    ['a blank name', { name: '   ' }, /^name: /],
    ['a numeric name', { name: 42 }, /^name: /],
    ['a null name', { name: null }, /^name: /],
    ['a name over 200 characters', { name: 'x'.repeat(201) }, /^name: /],
    ['an unknown field', { name: 'ok', plan: 'gold' }, /plan/],
    ['an array body', [{ name: 'x' }], /^body: /],
    ['a JSON string body', JSON.stringify('Acme'), /^body: /],
  ])('%s is 400 bad_request', async (_name, payload, message) => {
    expectError(await call('POST', '/admin/v1/customers', payload), 400, 'bad_request', message);
  });

  test('malformed JSON is 400 bad_request', async () => {
    const res = await t.admin.inject({
      method: 'POST',
      url: '/admin/v1/customers',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: '{"name": "Acme"',
    });
    expectError(res, 400, 'bad_request', 'body is not valid JSON');
  });

  test.each([String(UNKNOWN_ID), 'abc', '0', '-1', '1.5', '1e3', '01', '99999999999999999999', '%20'])(
    'unknown or malformed id %s is 404 not_found',
    async (id) => {
      expectError(await call('GET', `/admin/v1/customers/${id}`), 404, 'not_found', 'unknown customer');
    },
  );

  test('the answer lists keys without secrets', async () => {
    const m = await createMerchant(t);
    const res = await call('GET', `/admin/v1/customers/${m.customerId}`);
    expect(res.body).not.toContain(m.key);
    expect(res.body).not.toContain(m.key.slice(12));
    const row = await t.ctx.db.query<{ d: string }>('select key_sha256 as d from api_keys where id = $1', [
      m.keyId,
    ]);
    expect(res.body).not.toContain(row.rows[0]!.d);
  });
});

describe('POST /admin/v1/customers/{id}/disable', () => {
  test('disables the customer: its keys get 403 unknown_customer; repeating keeps the first time', async () => {
    const m = await createMerchant(t);
    expect((await me(m.key)).statusCode).toBe(200);

    const res = await call('POST', `/admin/v1/customers/${m.customerId}/disable`);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      customer_id: m.customerId,
      disabled: true,
    });
    expectError(await me(m.key), 403, 'unknown_customer');

    t.clock.advance(60_000);
    expectOk(await call('POST', `/admin/v1/customers/${m.customerId}/disable`));
    const shown = await showCustomer(m.customerId);
    expect(shown.customer).toMatchObject({ disabled: true, disabled_at: '2026-11-22T09:00:00Z' });
    t.clock.set('2026-11-22T09:00:00Z');
  });

  test.each([String(UNKNOWN_ID), 'abc'])('unknown customer %s is 404', async (id) => {
    expectError(
      await call('POST', `/admin/v1/customers/${id}/disable`),
      404,
      'not_found',
      'unknown customer',
    );
  });
});

describe('PUT and DELETE /admin/v1/customers/{id}/plan', () => {
  const plan = { label: 'gold', daily_limit: 50, per_request_usd: '0.0035', overage: true, active: true };

  test('sets, replaces and deletes the plan; GET /v1/me follows', async () => {
    const m = await createMerchant(t, { plan: null });
    const res = await call('PUT', `/admin/v1/customers/${m.customerId}/plan`, plan);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      customer_id: m.customerId,
    });
    expect((await showCustomer(m.customerId)).plan).toEqual({ ...plan, per_request_usd: 0.0035 });
    expect((await me(m.key)).json()).toMatchObject({
      plan: 'gold',
      plan_active: true,
      quota: { daily_limit: 50, used_today: 0, remaining_today: 50, overage_today: 0 },
      per_request_usd: 0.0035,
    });

    expectOk(
      await call('PUT', `/admin/v1/customers/${m.customerId}/plan`, {
        label: 'flat',
        daily_limit: null,
        per_request_usd: 0.01,
        overage: false,
        active: false,
      }),
    );
    expect((await showCustomer(m.customerId)).plan).toEqual({
      label: 'flat',
      daily_limit: null,
      per_request_usd: 0.01,
      overage: false,
      active: false,
    });

    const del = await call('DELETE', `/admin/v1/customers/${m.customerId}/plan`);
    expect(del.json()).toEqual({
      ok: true,
      request_id: del.headers['x-request-id'],
      customer_id: m.customerId,
    });
    expect((await showCustomer(m.customerId)).plan).toBeNull();
    expect((await me(m.key)).json()).toMatchObject({
      plan: null,
      plan_active: false,
      quota: { daily_limit: null, used_today: 0, remaining_today: 0, overage_today: 0 },
      per_request_usd: 0,
    });
    // Deleting again is harmless: the customer simply has no plan.
    expectOk(await call('DELETE', `/admin/v1/customers/${m.customerId}/plan`));
  });

  test('a free plan (0 USD per request, no daily include) is accepted', async () => {
    const id = await newCustomer();
    const body = { label: 'free', daily_limit: 0, per_request_usd: 0, overage: false, active: true };
    expectOk(await call('PUT', `/admin/v1/customers/${id}/plan`, body));
    expect((await showCustomer(id)).plan).toEqual(body);
  });

  test.each([
    ['no body', undefined],
    ['a missing label', { ...plan, label: undefined }],
    ['an empty label', { ...plan, label: '' }],
    ['a missing daily_limit', { ...plan, daily_limit: undefined }],
    ['a negative daily_limit', { ...plan, daily_limit: -1 }],
    ['a fractional daily_limit', { ...plan, daily_limit: 1.5 }],
    ['a daily_limit as text', { ...plan, daily_limit: '10' }],
    ['a negative per_request_usd', { ...plan, per_request_usd: -0.01 }],
    ['a per_request_usd with 7 decimals', { ...plan, per_request_usd: 0.0000001 }],
    ['a per_request_usd with 7 decimals as text', { ...plan, per_request_usd: '0.0000001' }],
    ['a per_request_usd in exponent form', { ...plan, per_request_usd: '1e-3' }],
    ['a per_request_usd that is not a number', { ...plan, per_request_usd: 'cheap' }],
    ['a per_request_usd beyond a billion USD', { ...plan, per_request_usd: '1000000000.000001' }],
    ['overage as text', { ...plan, overage: 'yes' }],
    ['a missing active', { ...plan, active: undefined }],
    ['an unknown field', { ...plan, currency: 'USD' }],
  ])('%s is 400 bad_request and changes nothing', async (_name, payload) => {
    const id = await newCustomer();
    expectError(await call('PUT', `/admin/v1/customers/${id}/plan`, payload), 400, 'bad_request');
    expect((await showCustomer(id)).plan).toBeNull();
  });

  test('an over-large price never makes the customer unreadable', async () => {
    const id = await newCustomer();
    await call('PUT', `/admin/v1/customers/${id}/plan`, { ...plan, per_request_usd: 99_999_999_999 });
    expect((await showCustomer(id)).plan).toBeNull();
  });

  test.each([String(UNKNOWN_ID), 'abc'])('unknown customer %s is 404, even with a bad body', async (id) => {
    expectError(
      await call('PUT', `/admin/v1/customers/${id}/plan`, plan),
      404,
      'not_found',
      'unknown customer',
    );
    expectError(await call('PUT', `/admin/v1/customers/${id}/plan`, {}), 404, 'not_found');
    expectError(await call('DELETE', `/admin/v1/customers/${id}/plan`), 404, 'not_found', 'unknown customer');
  });
});

describe('PUT /admin/v1/customers/{id}/subscription', () => {
  test('required with an expiry; GET /v1/me shows it', async () => {
    const m = await createMerchant(t);
    const res = await call('PUT', `/admin/v1/customers/${m.customerId}/subscription`, {
      required: true,
      expires_at: '2026-12-02T09:00:00Z',
    });
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      customer_id: m.customerId,
    });
    const expected = { required: true, active: true, expires_at: '2026-12-02T09:00:00Z', days_left: 10 };
    expect((await showCustomer(m.customerId)).subscription).toEqual(expected);
    expect((await me(m.key)).json().subscription).toEqual(expected);
  });

  test('an offset timestamp is stored as UTC', async () => {
    const id = await newCustomer();
    expectOk(
      await call('PUT', `/admin/v1/customers/${id}/subscription`, {
        required: true,
        expires_at: '2026-12-01T10:30:00+02:00',
      }),
    );
    expect((await showCustomer(id)).subscription).toMatchObject({ expires_at: '2026-12-01T08:30:00Z' });
  });

  test('a past expiry is accepted: the subscription is lapsed', async () => {
    const m = await createMerchant(t);
    expectOk(
      await call('PUT', `/admin/v1/customers/${m.customerId}/subscription`, {
        required: true,
        expires_at: '2020-01-01T00:00:00Z',
      }),
    );
    expect((await me(m.key)).json().subscription).toEqual({
      required: true,
      active: false,
      expires_at: '2020-01-01T00:00:00Z',
      days_left: 0,
    });
  });

  test('required without expiry, then not required', async () => {
    const id = await newCustomer();
    expectOk(
      await call('PUT', `/admin/v1/customers/${id}/subscription`, { required: true, expires_at: null }),
    );
    expect((await showCustomer(id)).subscription).toEqual({
      required: true,
      active: true,
      expires_at: null,
      days_left: null,
    });
    expectOk(
      await call('PUT', `/admin/v1/customers/${id}/subscription`, { required: false, expires_at: null }),
    );
    expect((await showCustomer(id)).subscription).toEqual({
      required: false,
      active: true,
      expires_at: null,
      days_left: null,
    });
  });

  test.each([
    ['no body', undefined],
    ['a missing required', { expires_at: null }],
    ['required as text', { required: 'true', expires_at: null }],
    ['a missing expires_at', { required: true }],
    ['a date without time', { required: true, expires_at: '2026-12-01' }],
    ['month 13', { required: true, expires_at: '2026-13-01T00:00:00Z' }],
    ['February 30', { required: true, expires_at: '2026-02-30T00:00:00Z' }],
    ['no time zone', { required: true, expires_at: '2026-12-01T00:00:00' }],
    ['words', { required: true, expires_at: 'next month' }],
    ['a Unix time', { required: true, expires_at: 1_800_000_000 }],
    ['an unknown field', { required: true, expires_at: null, days: 30 }],
  ])('%s is 400 bad_request', async (_name, payload) => {
    const id = await newCustomer();
    expectError(await call('PUT', `/admin/v1/customers/${id}/subscription`, payload), 400, 'bad_request');
  });

  test('unknown customer is 404', async () => {
    expectError(
      await call('PUT', `/admin/v1/customers/${UNKNOWN_ID}/subscription`, {
        required: false,
        expires_at: null,
      }),
      404,
      'not_found',
      'unknown customer',
    );
  });
});

describe('POST /admin/v1/customers/{id}/keys and POST /admin/v1/keys/{key_id}/revoke', () => {
  test('issues a test key shown once; the listing has its prefix and settings only', async () => {
    const id = await newCustomer();
    const res = await call('POST', `/admin/v1/customers/${id}/keys`, {
      mode: 'test',
      scopes: ['read'],
      allowed_ips: ['10.0.0.0/8', ' 2001:db8::1 ', '::ffff:192.0.2.7', '127.0.0.1'],
      expires_at: '2027-01-01T00:00:00Z',
      label: 'reporting',
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      key_id: expect.stringMatching(/^key_[A-Za-z0-9]{20,}$/),
      key: expect.stringMatching(/^rk_test_[A-Za-z0-9]{32}$/),
      key_prefix: body.key.slice(0, 12),
    });
    expect((await showCustomer(id)).keys).toEqual([
      {
        key_id: body.key_id,
        key_prefix: body.key_prefix,
        mode: 'test',
        scopes: ['read'],
        allowed_ips: ['10.0.0.0/8', '2001:db8::1/128', '192.0.2.7/32', '127.0.0.1/32'],
        label: 'reporting',
        created_at: '2026-11-22T09:00:00Z',
        expires_at: '2027-01-01T00:00:00Z',
        revoked_at: null,
      },
    ]);
    // The key works, from the allowed loopback address.
    expect((await me(body.key)).json()).toMatchObject({ customer_id: id, mode: 'test', scopes: ['read'] });
  });

  test('a live key with defaults: both scopes, any address, no expiry, no label', async () => {
    const id = await newCustomer();
    const body = expectOk(await call('POST', `/admin/v1/customers/${id}/keys`, { mode: 'live' }), 201);
    expect(body.key).toMatch(/^rk_live_[A-Za-z0-9]{32}$/);
    expect((await showCustomer(id)).keys).toEqual([
      expect.objectContaining({
        mode: 'live',
        scopes: ['redeem', 'read'],
        allowed_ips: [],
        label: '',
        expires_at: null,
        revoked_at: null,
      }),
    ]);
    expect((await me(body.key as string)).json()).toMatchObject({ mode: 'live', scopes: ['redeem', 'read'] });
  });

  test('a key that expired in the past is accepted and answers 401 expired', async () => {
    const id = await newCustomer();
    const body = expectOk(
      await call('POST', `/admin/v1/customers/${id}/keys`, {
        mode: 'test',
        expires_at: '2020-01-01T00:00:00Z',
      }),
      201,
    );
    expectError(await me(body.key as string), 401, 'expired');
  });

  test('revoking answers 401 revoked from then on; revoking again is harmless', async () => {
    const m = await createMerchant(t);
    const res = await call('POST', `/admin/v1/keys/${m.keyId}/revoke`);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      key_id: m.keyId,
      revoked: true,
    });
    expectError(await me(m.key), 401, 'revoked');
    t.clock.advance(5_000);
    expectOk(await call('POST', `/admin/v1/keys/${m.keyId}/revoke`));
    t.clock.set('2026-11-22T09:00:00Z');
    expect((await showCustomer(m.customerId)).keys).toEqual([
      expect.objectContaining({ key_id: m.keyId, revoked_at: '2026-11-22T09:00:00Z' }),
    ]);
  });

  test.each(['key_doesnotexist0000000000', 'nope', '1', 'key_%25'])(
    'revoking unknown key %s is 404',
    async (keyId) => {
      expectError(await call('POST', `/admin/v1/keys/${keyId}/revoke`), 404, 'not_found', 'unknown key');
    },
  );

  test.each([
    ['no body', undefined],
    ['a missing mode', { scopes: ['read'] }],
    ['mode prod', { mode: 'prod' }],
    ['mode in capitals', { mode: 'TEST' }],
    ['an unknown scope', { mode: 'test', scopes: ['read', 'admin'] }],
    ['scopes as text', { mode: 'test', scopes: 'read' }],
    ['a repeated scope', { mode: 'test', scopes: ['read', 'read'] }],
    ['a word as an address', { mode: 'test', allowed_ips: ['office'] }],
    ['a prefix too long', { mode: 'test', allowed_ips: ['10.0.0.0/33'] }],
    ['an IPv6 prefix too long', { mode: 'test', allowed_ips: ['2001:db8::/129'] }],
    ['a short IPv4 form', { mode: 'test', allowed_ips: ['10.1'] }],
    ['a bare number', { mode: 'test', allowed_ips: ['1'] }],
    ['a hex IPv4 form', { mode: 'test', allowed_ips: ['0x7f.0.0.1'] }],
    ['an IPv6 zone id', { mode: 'test', allowed_ips: ['fe80::1%eth0'] }],
    ['two slashes', { mode: 'test', allowed_ips: ['10.0.0.0/8/8'] }],
    ['an empty entry', { mode: 'test', allowed_ips: [''] }],
    ['allowed_ips as text', { mode: 'test', allowed_ips: '10.0.0.1' }],
    ['a bad expiry', { mode: 'test', expires_at: '2026-11-31T00:00:00Z' }],
    ['a numeric label', { mode: 'test', label: 7 }],
    ['an unknown field', { mode: 'test', secret: 'mine' }],
  ])('%s is 400 bad_request and issues nothing', async (_name, payload) => {
    const id = await newCustomer();
    expectError(await call('POST', `/admin/v1/customers/${id}/keys`, payload), 400, 'bad_request');
    expect((await showCustomer(id)).keys).toEqual([]);
  });

  test.each([String(UNKNOWN_ID), 'abc'])('unknown customer %s is 404', async (id) => {
    expectError(await call('POST', `/admin/v1/customers/${id}/keys`, { mode: 'test' }), 404, 'not_found');
  });
});

describe('wallet top-up and ledger', () => {
  test('top-ups add up per mode; the ledger lists them newest first', async () => {
    const m = await createMerchant(t);
    const url = `/admin/v1/customers/${m.customerId}/wallet/topup`;
    const first = await call('POST', url, { mode: 'test', usd: 12.5, note: 'invoice 1' });
    expect(first.json()).toEqual({
      ok: true,
      request_id: first.headers['x-request-id'],
      customer_id: m.customerId,
      mode: 'test',
      entry_id: expect.any(Number),
      balance_usd: 12.5,
    });
    t.clock.advance(60_000);
    expect(expectOk(await call('POST', url, { mode: 'test', usd: '0.0035' })).balance_usd).toBe(12.5035);
    t.clock.advance(60_000);
    expect(expectOk(await call('POST', url, { mode: 'live', usd: '7' })).balance_usd).toBe(7);
    t.clock.set('2026-11-22T09:00:00Z');

    const ledger = await call('GET', `/admin/v1/customers/${m.customerId}/ledger?mode=test`);
    expect(ledger.json()).toEqual({
      ok: true,
      request_id: ledger.headers['x-request-id'],
      customer_id: m.customerId,
      mode: 'test',
      entries: [
        {
          entry_id: expect.any(Number),
          id: expect.any(Number),
          kind: 'topup',
          amount_usd: 0.0035,
          balance_after_usd: 12.5035,
          actor: 'root',
          request_id: expect.stringMatching(/^req_/),
          note: '',
          reference: null,
          at: '2026-11-22T09:01:00Z',
          created_at: '2026-11-22T09:01:00Z',
        },
        {
          entry_id: expect.any(Number),
          id: expect.any(Number),
          kind: 'topup',
          amount_usd: 12.5,
          balance_after_usd: 12.5,
          actor: 'root',
          request_id: expect.stringMatching(/^req_/),
          note: 'invoice 1',
          reference: null,
          at: '2026-11-22T09:00:00Z',
          created_at: '2026-11-22T09:00:00Z',
        },
      ],
      next_cursor: null,
    });
    const [newer, older] = ledger.json().entries;
    expect(newer.id).toBeGreaterThan(older.id);

    const live = expectOk(await call('GET', `/admin/v1/customers/${m.customerId}/ledger?mode=live`));
    expect(live.entries).toEqual([expect.objectContaining({ amount_usd: 7, balance_after_usd: 7 })]);
    expect((await showCustomer(m.customerId)).wallets).toEqual({
      live: { balance_usd: 7, held_usd: 0, spendable_usd: 7 },
      test: { balance_usd: 12.5035, held_usd: 0, spendable_usd: 12.5035 },
    });
    expect((await me(m.key)).json().balance_usd).toBe(12.5035);
  });

  test('a customer without top-ups has an empty ledger', async () => {
    const id = await newCustomer();
    expect(expectOk(await call('GET', `/admin/v1/customers/${id}/ledger?mode=live`)).entries).toEqual([]);
  });

  test('the largest top-up (one million USD) is exact', async () => {
    const id = await newCustomer();
    const body = expectOk(
      await call('POST', `/admin/v1/customers/${id}/wallet/topup`, { mode: 'live', usd: '1000000' }),
    );
    expect(body.balance_usd).toBe(1000000);
    const small = expectOk(
      await call('POST', `/admin/v1/customers/${id}/wallet/topup`, { mode: 'live', usd: '0.000001' }),
    );
    expect(small.balance_usd).toBe(1000000.000001);
  });

  test.each([
    ['no body', undefined],
    ['a missing mode', { usd: 1 }],
    ['mode prod', { mode: 'prod', usd: 1 }],
    ['a missing usd', { mode: 'test' }],
    ['zero', { mode: 'test', usd: 0 }],
    ['a negative amount', { mode: 'test', usd: -5 }],
    ['a negative amount as text', { mode: 'test', usd: '-5' }],
    ['7 decimals', { mode: 'test', usd: 0.0000001 }],
    ['7 decimals as text', { mode: 'test', usd: '1.0000001' }],
    ['exponent form', { mode: 'test', usd: '1e3' }],
    ['words', { mode: 'test', usd: 'ten' }],
    ['more than a million USD', { mode: 'test', usd: '1000000.000001' }],
    ['a huge number', { mode: 'test', usd: 1e21 }],
    ['a boolean', { mode: 'test', usd: true }],
    ['a note over 500 characters', { mode: 'test', usd: 1, note: 'n'.repeat(501) }],
    ['an unknown field', { mode: 'test', usd: 1, currency: 'EUR' }],
  ])('%s is 400 bad_request and leaves the ledger empty', async (_name, payload) => {
    const id = await newCustomer();
    expectError(await call('POST', `/admin/v1/customers/${id}/wallet/topup`, payload), 400, 'bad_request');
    for (const mode of ['live', 'test']) {
      expect(expectOk(await call('GET', `/admin/v1/customers/${id}/ledger?mode=${mode}`)).entries).toEqual(
        [],
      );
    }
  });

  test.each([
    ['no mode', ''],
    ['mode prod', '?mode=prod'],
    ['an empty mode', '?mode='],
    ['two modes', '?mode=live&mode=test'],
  ])('a ledger with %s is 400 bad_request', async (_name, query) => {
    const id = await newCustomer();
    expectError(await call('GET', `/admin/v1/customers/${id}/ledger${query}`), 400, 'bad_request');
  });

  test.each([String(UNKNOWN_ID), 'abc'])('unknown customer %s is 404', async (id) => {
    expectError(
      await call('POST', `/admin/v1/customers/${id}/wallet/topup`, { mode: 'test', usd: 1 }),
      404,
      'not_found',
      'unknown customer',
    );
    expectError(
      await call('GET', `/admin/v1/customers/${id}/ledger?mode=test`),
      404,
      'not_found',
      'unknown customer',
    );
  });
});

describe('fixtures through adminCall', () => {
  test('createMerchant leaves a customer with the default plan and a working key', async () => {
    const m = await createMerchant(t, { topup: { test: '1' } });
    const shown = await adminCall<{ plan: unknown }>(t, 'GET', `/admin/v1/customers/${m.customerId}`);
    expect(shown.plan).toEqual({
      label: 'standard',
      daily_limit: 100,
      per_request_usd: 0.01,
      overage: true,
      active: true,
    });
    expect((await me(m.key)).statusCode).toBe(200);
  });
});
