// The operator's webhooks across customers: GET /admin/v1/events lists every
// customer's events (by state, mode, customer), each with its customer and the receiver's last
// error as the sender recorded it; GET /admin/v1/customers/{id}/webhooks shows each registered
// receiver with its query-string values masked and its last 24 hours' success rate. Real HTTPS
// receivers, a real worker pass, the real database.
import { describe, expect, test } from 'vitest';
import { maskWebhookUrl } from '../../src/core/webhooks/event-overview.ts';
import { ADMIN_TOKEN, adminCall, createMerchant, type Merchant } from '../helpers/app.ts';
import { eventKit } from '../helpers/event-kit.ts';
import { addOperator } from '../helpers/operators.ts';

const kit = eventKit();
const { clock, register, finishedJob, eventOfJob, deliver } = kit;

const admin = (url: string, token = ADMIN_TOKEN) =>
  kit.t.admin.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

describe('webhooks across customers', () => {
  let failing: Merchant;
  let healthy: Merchant;
  let failedId: string;
  let deliveredId: string;
  let port: number;

  test('a failed event of one customer and a delivered one of another', async () => {
    failing = await createMerchant(kit.t);
    healthy = await createMerchant(kit.t);
    const bad = await kit.newReceiver();
    bad.fallback = 503;
    port = bad.port;
    bad.secret = await register(failing.key, `${bad.url}?token=s3cret&x=1`);
    const good = await kit.newReceiver();
    good.secret = await register(healthy.key, good.url);
    failedId = (await eventOfJob(failing, await finishedJob(failing))).id;
    deliveredId = (await eventOfJob(healthy, await finishedJob(healthy))).id;
    await deliver();
    for (const wait of [10, 60, 300]) {
      clock.advance(wait * 1000);
      await deliver();
    }
    expect(bad.requests).toHaveLength(4);
    expect(bad.requests[0]!.path).toBe('/hook?token=s3cret&x=1');
    expect(good.requests).toHaveLength(1);
  });

  test('GET /admin/v1/events?state=failed: every customer, each event with its customer and last error', async () => {
    const res = await admin('/admin/v1/events?state=failed');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.next_cursor).toBeNull();
    expect(body.events).toHaveLength(1);
    expect(body.events[0]).toMatchObject({
      id: failedId,
      state: 'failed',
      mode: 'test',
      customer_id: failing.customerId,
      customer_name: expect.stringMatching(/^merchant /),
      next_attempt_at: null,
      last_error: { status: 503, message: 'answered 503' },
    });
    expect(body.events[0].attempts).toHaveLength(4);
    expect(body.events[0].attempts[3]).toMatchObject({
      status: 503,
      error: 'http_status',
      redelivery: false,
    });

    const all = (await admin('/admin/v1/events')).json();
    expect(all.events.map((e: { id: string }) => e.id).sort()).toEqual([failedId, deliveredId].sort());
    const delivered = (await admin('/admin/v1/events?state=delivered')).json().events;
    expect(delivered).toEqual([expect.objectContaining({ id: deliveredId, last_error: null })]);
    const one = (await admin(`/admin/v1/events?customer_id=${healthy.customerId}`)).json().events;
    expect(one.map((e: { id: string }) => e.id)).toEqual([deliveredId]);
    expect((await admin('/admin/v1/events?mode=live')).json().events).toEqual([]);
  });

  test('paging: limit and cursor; bad parameters are 400 bad_request; a viewer may read', async () => {
    const first = (await admin('/admin/v1/events?limit=1')).json();
    expect(first.events).toHaveLength(1);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = (await admin(`/admin/v1/events?limit=1&cursor=${first.next_cursor}`)).json();
    expect(second.events).toHaveLength(1);
    expect(second.events[0].id).not.toBe(first.events[0].id);
    expect(second.next_cursor).toBeNull();
    for (const q of ['state=dropped', 'state=failing', 'limit=0', 'customer_id=x', 'mode=prod', 'other=1']) {
      const res = await admin(`/admin/v1/events?${q}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.json().error_code).toBe('bad_request');
    }
    const viewer = await addOperator(kit.t.admin, 'vic', 'viewer');
    expect((await admin('/admin/v1/events?state=failed', viewer.token)).statusCode).toBe(200);
    expect((await kit.t.admin.inject({ method: 'GET', url: '/admin/v1/events' })).statusCode).toBe(401);
  });

  test('GET /admin/v1/customers/{id}/webhooks: the URL masked, the last 24 hours delivered/attempted', async () => {
    const bad = (await admin(`/admin/v1/customers/${failing.customerId}/webhooks`)).json();
    expect(bad).toEqual({
      ok: true,
      request_id: expect.any(String),
      customer_id: failing.customerId,
      window_hours: 24,
      webhooks: {
        live: null,
        test: {
          url: `https://127.0.0.1:${port}/hook?token=***&x=***`,
          registered_at: '2026-11-22T09:00:00Z',
          attempted: 4,
          delivered: 0,
          success_rate: 0,
          consecutive_failures: 4,
          last_failure_at: '2026-11-22T09:06:10Z',
          // The run began with the first attempt, 370 s before its last.
          failing_since: '2026-11-22T09:00:00Z',
        },
      },
    });
    expect(JSON.stringify(bad)).not.toContain('s3cret');
    const good = (await admin(`/admin/v1/customers/${healthy.customerId}/webhooks`)).json();
    expect(good.webhooks.test).toMatchObject({
      attempted: 1,
      delivered: 1,
      success_rate: 1,
      consecutive_failures: 0,
      failing_since: null,
    });
    // A day later the window is empty: nothing attempted, no rate.
    clock.advance(25 * 3_600_000);
    const later = (await admin(`/admin/v1/customers/${failing.customerId}/webhooks`)).json();
    expect(later.webhooks.test).toMatchObject({ attempted: 0, delivered: 0, success_rate: null });
    clock.set('2026-11-22T09:00:00Z');
    const none = await adminCall<{ webhooks: unknown }>(
      kit.t,
      'POST',
      '/admin/v1/customers',
      { name: 'no hooks' },
      201,
    );
    const noneId = (none as unknown as { customer_id: number }).customer_id;
    expect((await admin(`/admin/v1/customers/${noneId}/webhooks`)).json().webhooks).toEqual({
      live: null,
      test: null,
    });
    expect((await admin('/admin/v1/customers/8000000000000/webhooks')).statusCode).toBe(404);
  });

  test('GET /admin/v1/customers/{id}/health: live and test side by side, the mode in trouble first', async () => {
    // Two refusals of the failing customer's test key today.
    for (let i = 0; i < 2; i++)
      await kit.t.api.inject({
        method: 'GET',
        url: `/v1/jobs/job_gone${i}`,
        headers: { authorization: `Bearer ${failing.key}` },
      });
    await kit.t.api.requestLog.flush();
    const res = await admin(`/admin/v1/customers/${failing.customerId}/health`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      request_id: expect.any(String),
      customer_id: failing.customerId,
      window_hours: 24,
      day: '2026-11-22',
      trouble_first: 'test',
      modes: {
        live: { webhook: null, refusals_today: { total: 0, by_error_code: [] } },
        test: {
          webhook: expect.objectContaining({
            url: `https://127.0.0.1:${port}/hook?token=***&x=***`,
            success_rate: 0,
            consecutive_failures: 4,
            failing_since: '2026-11-22T09:00:00Z',
          }),
          refusals_today: { total: 2, by_error_code: [{ error_code: 'not_found', count: 2 }] },
        },
      },
    });
    const quiet = (await admin(`/admin/v1/customers/${healthy.customerId}/health`)).json();
    expect(quiet.trouble_first).toBeNull();
    expect(quiet.modes.test.webhook).toMatchObject({ success_rate: 1, failing_since: null });
    expect((await admin('/admin/v1/customers/8000000000000/health')).statusCode).toBe(404);
  });

  test('maskWebhookUrl masks every query value and a password, and keeps the rest', () => {
    expect(maskWebhookUrl('https://hooks.example.com/in?token=abc&v=2')).toBe(
      'https://hooks.example.com/in?token=***&v=***',
    );
    expect(maskWebhookUrl('https://u:pw@hooks.example.com/in')).toBe('https://u:***@hooks.example.com/in');
    expect(maskWebhookUrl('https://hooks.example.com/in')).toBe('https://hooks.example.com/in');
    expect(maskWebhookUrl('not a url')).toBe('***');
  });
});
