// Enabling a disabled customer: POST /admin/v1/customers/{id}/enable end to end: the
// answer, the customer's keys refused while disabled and accepted again at once, one audit row
// `customer.enable` per success (none for a refusal), a viewer refused, and the CLI's
// `admin customers enable` (text and --json) against a listening admin app.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import {
  ADMIN_TOKEN,
  adminCall,
  createMerchant,
  createTestApp,
  merchantGet,
  type TestApp,
} from '../helpers/app.ts';

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await createTestApp();
  url = await listenAdmin(t.admin);
});
afterAll(() => t.close());

const cli = (args: string[], token = ADMIN_TOKEN) => runAdminCli(url, args, { token });

const me = (key: string) => merchantGet(t, '/v1/me', key);
const post = (path: string, token = ADMIN_TOKEN) =>
  t.admin.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${token}` } });
const auditOf = async (customerId: number) =>
  (
    await adminCall<{ events: { action: string; details: unknown; request_id: string; actor: string }[] }>(
      t,
      'GET',
      `/admin/v1/audit?customer_id=${customerId}`,
    )
  ).events;

describe('POST /admin/v1/customers/{id}/enable', () => {
  test('a disabled customer is enabled: its key answers again, and the audit row says since when', async () => {
    const m = await createMerchant(t);
    expect((await me(m.key)).statusCode).toBe(200);
    const disabledAt = t.clock.now().toISOString().replace('.000Z', 'Z');
    expect((await post(`/admin/v1/customers/${m.customerId}/disable`)).statusCode).toBe(200);
    const refused = await me(m.key);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error_code).toBe('unknown_customer');

    t.clock.advance(60_000);
    const res = await post(`/admin/v1/customers/${m.customerId}/enable`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      customer_id: m.customerId,
      disabled: false,
    });
    expect((await me(m.key)).statusCode).toBe(200);
    const detail = await adminCall<{ customer: { disabled: boolean; disabled_at: string | null } }>(
      t,
      'GET',
      `/admin/v1/customers/${m.customerId}`,
    );
    expect(detail.customer).toMatchObject({ disabled: false, disabled_at: null });

    const events = await auditOf(m.customerId);
    expect(events[0]).toMatchObject({
      action: 'customer.enable',
      actor: 'root',
      request_id: res.headers['x-request-id'],
      details: { disabled_at: disabledAt },
    });
    expect(events[1]!.action).toBe('customer.disable');
  });

  test('enabling an enabled customer changes nothing and is audited with disabled_at null', async () => {
    const m = await createMerchant(t);
    const res = await post(`/admin/v1/customers/${m.customerId}/enable`);
    expect(res.statusCode).toBe(200);
    expect((await auditOf(m.customerId))[0]).toMatchObject({
      action: 'customer.enable',
      details: { disabled_at: null },
    });
    expect((await me(m.key)).statusCode).toBe(200);
  });

  test('unknown customer: 404 not_found and no audit row; a bad id: 404 as disable; a viewer: 403 and nothing changes', async () => {
    const before = (
      await adminCall<{ events: unknown[] }>(t, 'GET', '/admin/v1/audit?action=customer.enable&limit=500')
    ).events.length;
    const unknown = await post('/admin/v1/customers/8000000000000/enable');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error_code).toBe('not_found');
    expect((await post('/admin/v1/customers/abc/enable')).statusCode).toBe(404);

    const m = await createMerchant(t);
    await post(`/admin/v1/customers/${m.customerId}/disable`);
    const viewer = await adminCall<{ token: string }>(
      t,
      'POST',
      '/admin/v1/operators',
      {
        name: `viewer-${Math.random().toString(36).slice(2, 8)}`,
        role: 'viewer',
      },
      201,
    );
    const denied = await post(`/admin/v1/customers/${m.customerId}/enable`, viewer.token);
    expect(denied.statusCode).toBe(403);
    expect(denied.json().error_code).toBe('forbidden');
    expect((await me(m.key)).statusCode).toBe(403);
    const after = (
      await adminCall<{ events: unknown[] }>(t, 'GET', '/admin/v1/audit?action=customer.enable&limit=500')
    ).events.length;
    expect(after).toBe(before);
  });
});

describe('admin customers enable (CLI)', () => {
  test('disable then enable, in text and in --json; an unknown customer fails with one line', async () => {
    const m = await createMerchant(t);
    expect(await cli(['customers', 'disable', String(m.customerId)])).toEqual({
      code: 0,
      stdout: `customer ${m.customerId} disabled\n`,
      stderr: '',
    });
    expect((await me(m.key)).statusCode).toBe(403);
    expect(await cli(['customers', 'enable', String(m.customerId)])).toEqual({
      code: 0,
      stdout: `customer ${m.customerId} enabled\n`,
      stderr: '',
    });
    expect((await me(m.key)).statusCode).toBe(200);
    const json = await cli(['customers', 'enable', String(m.customerId), '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, customer_id: m.customerId, disabled: false });
    expect((await auditOf(m.customerId)).map((e) => e.action).slice(0, 3)).toEqual([
      'customer.enable',
      'customer.enable',
      'customer.disable',
    ]);
    const unknown = await cli(['customers', 'enable', '8000000000000']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('error: not_found: unknown customer\n');
    expect((await cli(['help'])).stdout).toContain('customers enable');
  });
});
