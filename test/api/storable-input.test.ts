// The input rule of both listeners: a string that PostgreSQL's text cannot hold (U+0000, an
// unpaired surrogate) in a path id, a query value or a body field is a 400 bad_request naming the
// field, never a database error. Every admin route is tried, as found in the app itself.
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildAdminApp } from '../../src/http/admin-app.ts';
import { registerAdminRoutes } from '../../src/routes/admin/index.ts';
import {
  ADMIN_TOKEN,
  bearer,
  createMerchant,
  createTestApp,
  type Merchant,
  type TestApp,
} from '../helpers/app.ts';

let t: TestApp;
let admin: FastifyInstance;
let m: Merchant;
const routes: { method: string; url: string }[] = [];

beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
  admin = await buildAdminApp(t.ctx, (app, ctx, sessions) => {
    app.addHook('onRoute', (r) => {
      if ((r.config as { methodNotAllowed?: boolean } | undefined)?.methodNotAllowed) return;
      for (const method of [r.method].flat()) if (method !== 'HEAD') routes.push({ method, url: r.url });
    });
    registerAdminRoutes(app, ctx, sessions);
  });
  m = await createMerchant(t);
});
afterAll(async () => {
  await admin?.close();
  await t?.close();
});

// U+0000 in a URL is %00; a lone surrogate has no UTF-8 form, so its CESU bytes stand in for it.
const URL_VALUES = ['%00', 'a%00b', '%ED%A0%80'];
const BODY_VALUES = ['\u0000', 'x\u0000', '\ud800', 'a\udc00b'];
// The admin body's text fields (customer name, plan label, top-up note, …) and
// one name no route knows: the rule holds whatever the field.
const TEXT_FIELDS = ['name', 'label', 'note', 'reason', 'q', 'role', 'mode', 'token', 'url', 'zz'];

const adminHeaders = {
  ...bearer(ADMIN_TOKEN),
  'content-type': 'application/json',
  'idempotency-key': 'nul-1',
};

function expectRefused(
  res: { statusCode: number; body: string; headers: Record<string, unknown> },
  what: string,
) {
  const problem = `${what} → ${res.statusCode} ${res.body.slice(0, 200)}`;
  expect(res.statusCode, problem).toBeLessThan(500);
  expect(res.headers['x-request-id'], problem).toMatch(/^req_/);
  const body = JSON.parse(res.body);
  expect(body.ok, problem).toBe(false);
  expect(body.request_id, problem).toBe(res.headers['x-request-id']);
  return body as { error_code: string; message: string };
}

describe('admin API', () => {
  test('every route with a path id: NUL in each id is 400 bad_request naming it; the bytes of a surrogate no 5xx', async () => {
    const withIds = routes.filter((r) => r.url.includes(':'));
    expect(withIds.length).toBeGreaterThan(15);
    for (const r of withIds) {
      const names = [...r.url.matchAll(/:(\w+)/g)].map((x) => x[1]!);
      for (const name of names) {
        for (const value of URL_VALUES) {
          const url = r.url.replace(/:(\w+)/g, (_, n: string) => (n === name ? value : '1'));
          const res = await admin.inject({
            method: r.method as HTTPMethods,
            url,
            headers: adminHeaders,
            ...(r.method === 'GET' || r.method === 'DELETE' ? {} : { payload: '{}' }),
          });
          const body = expectRefused(res, `${r.method} ${url}`);
          // Undecodable bytes are routed as an unknown id (http/routable-url.ts): any clean 4xx.
          if (value === '%ED%A0%80') continue;
          expect([res.statusCode, body.error_code], `${r.method} ${url}`).toEqual([400, 'bad_request']);
          expect(body.message).toBe(`${name} must not contain U+0000 or unpaired surrogates`);
        }
      }
    }
  });

  test('every route: NUL in a query value is 400 bad_request naming the parameter', async () => {
    for (const r of routes) {
      for (const param of ['q', 'status', 'cursor', 'from']) {
        const url = `${r.url.replace(/:(\w+)/g, '1')}?${param}=a%00b`;
        const res = await admin.inject({
          method: r.method as HTTPMethods,
          url,
          headers: adminHeaders,
          ...(r.method === 'GET' || r.method === 'DELETE' ? {} : { payload: '{}' }),
        });
        const body = expectRefused(res, `${r.method} ${url}`);
        expect([res.statusCode, body.error_code, body.message], `${r.method} ${url}`).toEqual([
          400,
          'bad_request',
          `${param} must not contain U+0000 or unpaired surrogates`,
        ]);
      }
    }
  });

  test('every route with a body: NUL and lone surrogates in each text field are 400 naming it', async () => {
    const withBody = routes.filter((r) => r.method !== 'GET' && r.method !== 'DELETE');
    expect(withBody.length).toBeGreaterThan(15);
    for (const r of withBody) {
      const url = r.url.replace(/:(\w+)/g, '1');
      for (const field of TEXT_FIELDS) {
        for (const value of BODY_VALUES) {
          const res = await admin.inject({
            method: r.method as HTTPMethods,
            url,
            headers: adminHeaders,
            payload: JSON.stringify({ [field]: value, nested: [{ ok: 'fine' }] }),
          });
          const body = expectRefused(res, `${r.method} ${url} ${field}=${JSON.stringify(value)}`);
          expect([res.statusCode, body.message], `${r.method} ${url} ${field}`).toEqual([
            400,
            `${field} must not contain U+0000 or unpaired surrogates`,
          ]);
        }
      }
      // Deep inside a body, and in a field's name.
      const deep = await admin.inject({
        method: r.method as HTTPMethods,
        url,
        headers: adminHeaders,
        payload: '{"items":[{"code":"ok"},{"code":"a\\u0000"}]}',
      });
      expect(expectRefused(deep, `${r.method} ${url} deep`).message).toBe(
        'items[1].code must not contain U+0000 or unpaired surrogates',
      );
      const key = await admin.inject({
        method: r.method as HTTPMethods,
        url,
        headers: adminHeaders,
        payload: '{"a\\u0000":1}',
      });
      expect([key.statusCode, expectRefused(key, `${r.method} ${url} key`).message]).toEqual([
        400,
        'a field name must not contain U+0000 or unpaired surrogates',
      ]);
    }
  });

  test('the requests the outside fuzzer found: 400, and nothing written', async () => {
    const found: [HTTPMethods, string, unknown?][] = [
      ['GET', '/admin/v1/jobs/%00'],
      ['GET', '/admin/v1/customers?q=%00'],
      ['POST', '/admin/v1/keys/%00/revoke', {}],
      ['POST', '/admin/v1/operators/%00/revoke', {}],
      ['POST', '/admin/v1/jobs/%00/codes/2/settle', {}],
      ['POST', '/admin/v1/customers', { name: 'shop\u0000' }],
      ['POST', '/admin/v1/customers', { name: '\ud800' }],
      ['POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, { amount_usd: '1', note: 'a\u0000' }],
      [
        'PUT',
        `/admin/v1/customers/${m.customerId}/plan`,
        { label: '\ud800', daily_limit: 1, per_request_usd: '0.1', overage: false, active: true },
      ],
    ];
    for (const [method, url, payload] of found) {
      const res = await t.admin.inject({
        method,
        url,
        headers: adminHeaders,
        ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
      });
      expect([res.statusCode, expectRefused(res, `${method} ${url}`).error_code], `${method} ${url}`).toEqual(
        [400, 'bad_request'],
      );
    }
    const customers = await t.ctx.db.query<{ n: number }>('select count(*)::int as n from customers');
    expect(customers.rows[0]!.n).toBe(1);
  });

  test('without a token the door answers first: 401, not 400', async () => {
    const res = await t.admin.inject({ method: 'GET', url: '/admin/v1/jobs/%00' });
    expect(res.statusCode).toBe(401);
  });
});

describe('public API: the same rule', () => {
  test('path ids, query values and body fields', async () => {
    const cases: [HTTPMethods, string, string?][] = [
      ['GET', '/v1/jobs/%00'],
      ['GET', '/v1/me?x=%00'],
      ['GET', '/v1/events?cursor=%00'],
      ['POST', '/v1/webhook', '{"url":"https://example.com/\\u0000"}'],
      ['POST', '/v1/webhook', '{"url":"https://example.com/\\ud800"}'],
    ];
    for (const [method, url, payload] of cases) {
      const res = await t.api.inject({
        method,
        url,
        headers: { ...bearer(m.key), 'content-type': 'application/json' },
        ...(payload === undefined ? {} : { payload }),
      });
      const body = expectRefused(res, `${method} ${url}`);
      expect([res.statusCode, body.error_code], `${method} ${url} ${body.message}`).toEqual([
        400,
        'bad_request',
      ]);
      expect(body.message).toMatch(/must not contain U\+0000 or unpaired surrogates$/);
    }
  });

  test('POST /v1/redeem keeps its order: no Idempotency-Key first, then the fields', async () => {
    const payload = '{"player_id":"5123456789","codes":["AAAA"],"reference":"r\\u0000"}';
    const headers = { ...bearer(m.key), 'content-type': 'application/json' };
    const noKey = await t.api.inject({ method: 'POST', url: '/v1/redeem', headers, payload });
    expect(noKey.json().error_code).toBe('idempotency_required');
    const withKey = await t.api.inject({
      method: 'POST',
      url: '/v1/redeem',
      headers: { ...headers, 'idempotency-key': 'nul-redeem' },
      payload,
    });
    expect([withKey.statusCode, withKey.json().message]).toEqual([
      400,
      'reference must not contain U+0000 or unpaired surrogates',
    ]);
  });
});
