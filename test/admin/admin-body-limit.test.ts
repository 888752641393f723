// The admin listener's body limit (docs/reference/limits.md#body-sizes): 4 MiB on every admin route, a stock import of
// 8,000 codes of 40 characters works; the public API keeps 256 KiB. Over a real socket, as an
// operator's client sends it.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN, adminCall, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
let adminUrl: string;
let publicUrl: string;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
  adminUrl = await t.admin.listen({ host: '127.0.0.1', port: 0 });
  publicUrl = await t.api.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => t.close());

const MiB = 1024 * 1024;
const post = (url: string, body: string, token = ADMIN_TOKEN) =>
  fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body,
  });

/** 40-character codes, unique to this run. */
const codes = (n: number, run: string) =>
  Array.from({ length: n }, (_, i) => `IMP${run}${String(i).padStart(40 - 3 - run.length, '0')}`);

describe('admin body limit', () => {
  test('a stock import of 8,000 codes of 40 characters (over 256 KiB) is accepted', async () => {
    const { customerId } = await createMerchant(t);
    const run = Date.now().toString(36).toUpperCase();
    const body = JSON.stringify({ mode: 'test', category: '60', codes: codes(8000, run) });
    expect(body.length).toBeGreaterThan(256 * 1024);
    const res = await post(`${adminUrl}/admin/v1/customers/${customerId}/stock`, body);
    const answer = await res.json();
    expect(res.status, JSON.stringify(answer)).toBe(200);
    expect(answer).toMatchObject({ ok: true, added: 8000, duplicates: 0, rejected: 0 });
    const stock = await adminCall<{ stock: unknown }>(t, 'GET', `/admin/v1/customers/${customerId}`);
    expect(JSON.stringify(stock)).toContain('"available":8000');
  });

  test('every admin route takes a body up to 4 MiB, and answers 413 beyond it', async () => {
    // A JSON body of exactly 4 MiB on another admin route: read whole, then refused by validation.
    const pad = (size: number) => JSON.stringify({ name: 'x', pad: 'y'.repeat(size - 21) });
    expect(pad(4 * MiB).length).toBe(4 * MiB);
    const within = await post(`${adminUrl}/admin/v1/customers`, pad(4 * MiB));
    expect(within.status).toBe(400);
    expect((await within.json()).error_code).toBe('bad_request');
    const over = await post(`${adminUrl}/admin/v1/customers`, pad(4 * MiB + 1));
    expect(over.status).toBe(413);
    const body = await over.json();
    expect(body).toEqual({
      ok: false,
      error_code: 'payload_too_large',
      message: `body is larger than ${4 * MiB} bytes`,
      request_id: over.headers.get('x-request-id'),
    });
    // No customer was created by either.
    const n = await t.ctx.db.query<{ n: number }>(
      `select count(*)::int as n from customers where name = 'x'`,
    );
    expect(n.rows).toEqual([{ n: 0 }]);
  });

  test('the public API keeps 256 KiB', async () => {
    const m = await createMerchant(t);
    const res = await fetch(`${publicUrl}/v1/webhook`, {
      method: 'POST',
      headers: { authorization: `Bearer ${m.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://example.com/', pad: 'y'.repeat(256 * 1024) }),
    });
    expect(res.status).toBe(413);
    expect((await res.json()).message).toBe('body is larger than 262144 bytes');
  });
});
