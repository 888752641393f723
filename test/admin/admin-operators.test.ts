// Operators (docs/reference/operators-and-audit.md#operators-and-roles): named operators with roles and tokens shown once; ADMIN_TOKEN is
// `root`. A viewer reads everything and changes nothing: the table-driven test below sends every
// write route of the admin app (from its own route list) as a viewer, so a new route is covered.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { ADMIN_TOKEN, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import {
  addOperator,
  adminWithRoutes,
  auditCount,
  type ListedAdmin,
  send,
  writeRoutes,
} from '../helpers/operators.ts';

let t: TestApp;
let admin: ListedAdmin;
beforeAll(async () => {
  t = await createTestApp();
  admin = await adminWithRoutes(t);
});
afterAll(async () => {
  await admin.app.close();
  await t.close();
});

const root = (method: string, url: string, payload?: unknown) =>
  send(admin.app, ADMIN_TOKEN, method, url, payload);

describe('operators', () => {
  test('root creates an operator whose token is shown once, stored as a digest, and works', async () => {
    const res = await root('POST', '/admin/v1/operators', { name: 'bob.smith_1', role: 'admin' });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      operator_id: expect.stringMatching(/^op_[A-Za-z0-9]{24}$/),
      name: 'bob.smith_1',
      role: 'admin',
      token: expect.stringMatching(/^adm_[A-Za-z0-9]{40}$/),
    });
    const stored = await t.ctx.db.query<Record<string, unknown>>('select * from operators where id = $1', [
      body.operator_id,
    ]);
    expect(JSON.stringify(stored.rows)).not.toContain(body.token);
    const made = await send(admin.app, body.token, 'POST', '/admin/v1/customers', { name: 'by bob' });
    expect(made.statusCode).toBe(201);
    expect(t.logs.join('')).not.toContain(body.token);
  });

  test('the list shows root and every operator, without tokens', async () => {
    await addOperator(admin.app, 'listed', 'viewer');
    const res = await root('GET', '/admin/v1/operators');
    const body = res.json();
    expect(body.operators[0]).toEqual({
      operator_id: 'op_root',
      name: 'root',
      role: 'admin',
      created_at: expect.any(String),
      revoked_at: null,
    });
    expect(body.operators).toContainEqual({
      operator_id: expect.any(String),
      name: 'listed',
      role: 'viewer',
      created_at: '2026-11-22T09:00:00Z',
      revoked_at: null,
    });
    expect(res.body).not.toMatch(/adm_|token/);
  });

  test('a name in use is 409 conflict; a bad body is 400 bad_request', async () => {
    await addOperator(admin.app, 'taken', 'viewer');
    const again = await root('POST', '/admin/v1/operators', { name: 'taken', role: 'admin' });
    expect([again.statusCode, again.json().error_code]).toEqual([409, 'conflict']);
    for (const payload of [
      { name: '', role: 'admin' },
      { name: 'x'.repeat(65), role: 'admin' },
      { name: 'has space', role: 'admin' },
      { name: 'ok', role: 'owner' },
      { name: 'ok' },
      { name: 'ok', role: 'admin', extra: 1 },
    ]) {
      const res = await root('POST', '/admin/v1/operators', payload);
      expect([res.statusCode, res.json().error_code], JSON.stringify(payload)).toEqual([400, 'bad_request']);
    }
  });

  test('a revoked operator is 401 from then on; root cannot be revoked; unknown is 404', async () => {
    const op = await addOperator(admin.app, 'leaver', 'admin');
    expect((await send(admin.app, op.token, 'GET', '/admin/v1/operators')).statusCode).toBe(200);
    const res = await root('POST', `/admin/v1/operators/${op.operator_id}/revoke`);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      operator_id: op.operator_id,
      name: 'leaver',
      role: 'admin',
      created_at: '2026-11-22T09:00:00Z',
      revoked_at: '2026-11-22T09:00:00Z',
    });
    const after = await send(admin.app, op.token, 'GET', '/admin/v1/operators');
    expect([after.statusCode, after.json().error_code]).toEqual([401, 'unauthorized']);
    const rootRevoke = await root('POST', '/admin/v1/operators/op_root/revoke');
    expect([rootRevoke.statusCode, rootRevoke.json().error_code]).toEqual([409, 'conflict']);
    const unknown = await root('POST', '/admin/v1/operators/op_nobody/revoke');
    expect([unknown.statusCode, unknown.json().error_code]).toEqual([404, 'not_found']);
  });
});

describe('a viewer reads and changes nothing', () => {
  let viewer: string;
  let customerId: number;
  let keyId: string;
  beforeAll(async () => {
    viewer = (await addOperator(admin.app, 'watcher', 'viewer')).token;
    const m = await createMerchant(t, { topup: { test: 5 } });
    customerId = m.customerId;
    keyId = m.keyId;
  });

  const fill = (route: string) =>
    route
      .replace(':id', String(customerId))
      .replace(':keyId', keyId)
      .replace(':jobId', 'job_x')
      .replace(':position', '0');

  test('every write route of the admin app answers 403 forbidden to a viewer, and writes nothing', async () => {
    const routes = writeRoutes(admin);
    expect(routes.length).toBeGreaterThan(10);
    const before = await auditCount(t);
    const ledgerBefore = await t.ctx.db.query('select count(*)::int as n from wallet_ledger');
    for (const route of routes) {
      const [method, path] = route.split(' ') as [string, string];
      const res = await send(admin.app, viewer, method, fill(path), { name: 'x', mode: 'test', usd: 1 });
      expect({ route, status: res.statusCode, body: res.json() }).toEqual({
        route,
        status: 403,
        body: {
          ok: false,
          error_code: 'forbidden',
          message: 'the operator watcher is a viewer and may only read',
          request_id: res.headers['x-request-id'],
        },
      });
    }
    expect(await auditCount(t)).toBe(before);
    expect((await t.ctx.db.query('select count(*)::int as n from wallet_ledger')).rows).toEqual(
      ledgerBefore.rows,
    );
  });

  test('a viewer reads customers, the ledger, the audit log, operators and metrics', async () => {
    for (const url of [
      `/admin/v1/customers/${customerId}`,
      `/admin/v1/customers/${customerId}/ledger?mode=test`,
      '/admin/v1/audit',
      '/admin/v1/operators',
      '/admin/v1/overview',
      '/metrics',
    ]) {
      const res = await send(admin.app, viewer, 'GET', url);
      expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
    }
  });
});

describe('ADMIN_TOKEN', () => {
  test('shorter than 32 characters is refused at start, saying how to make one', () => {
    expect(() => loadConfig({ ADMIN_TOKEN: 'a'.repeat(31) })).toThrow(
      /ADMIN_TOKEN must be at least 32 characters \(make one with: openssl rand -base64 32\)/,
    );
    expect(loadConfig({ ADMIN_TOKEN: 'a'.repeat(32) }).ADMIN_TOKEN).toBe('a'.repeat(32));
  });
});
