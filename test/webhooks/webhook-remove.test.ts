// Removing a merchant's webhook (the operator's DELETE /admin/v1/customers/{id}/webhooks/{mode}):
// the public API cannot (POST /v1/webhook needs a url), so the operator does it. Once removed, the
// mode's ending jobs write no event, the receiver's record is gone, the other mode's webhook is
// untouched, and a viewer may not remove one.
import { describe, expect, test } from 'vitest';
import {
  adminCall,
  bearer,
  createMerchant,
  issueTestKey,
  merchantGet,
  type TestApp,
  useTestApp,
} from '../helpers/app.ts';
import { addOperator, send } from '../helpers/operators.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } }, (app) => {
  t = app;
});

const register = async (key: string, url: string) => {
  const r = await t.api.inject({
    method: 'POST',
    url: '/v1/webhook',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: { url },
  });
  expect(r.statusCode, r.body).toBe(200);
};

/** Runs an async redeem to its end and answers how many events the mode's log holds then. */
async function eventsAfterAJob(customerId: number, key: string, mode: 'live' | 'test'): Promise<number> {
  const r = await redeem(t, key, { player_id: '5123456789', codes: [uniqueCode()], async: true });
  expect(r.statusCode, r.body).toBe(202);
  const jobId = r.json().job_id as string;
  for (let i = 0; i < 400; i++) {
    const job = await merchantGet(t, `/v1/jobs/${jobId}`, key);
    if (job.json().status === 'completed') break;
    await new Promise((done) => setTimeout(done, 25));
  }
  const events = await adminCall<{ events: unknown[] }>(
    t,
    'GET',
    `/admin/v1/customers/${customerId}/events?mode=${mode}`,
  );
  return events.events.length;
}

describe('the operator removes a webhook', () => {
  test('the mode sends no more events; the other mode keeps its webhook; twice is 404', async () => {
    const m = await createMerchant(t);
    const liveKey = (await issueTestKey(t, m.customerId, { mode: 'live' })).key;
    await register(m.key, 'https://127.0.0.1:9/test-hook');
    await register(liveKey, 'https://127.0.0.1:9/live-hook');
    expect(await eventsAfterAJob(m.customerId, m.key, 'test')).toBe(1);

    const removed = await adminCall(t, 'DELETE', `/admin/v1/customers/${m.customerId}/webhooks/test`);
    expect(removed).toEqual({
      ok: true,
      request_id: expect.stringMatching(/^req_/),
      customer_id: m.customerId,
      mode: 'test',
      removed: 'https://127.0.0.1:9/test-hook',
    });
    // No event for a job that ends now: the log still holds the earlier one only.
    expect(await eventsAfterAJob(m.customerId, m.key, 'test')).toBe(1);
    const hooks = await adminCall<{ webhooks: Record<string, { url: string } | null> }>(
      t,
      'GET',
      `/admin/v1/customers/${m.customerId}/webhooks`,
    );
    expect(hooks.webhooks.test).toBeNull();
    expect(hooks.webhooks.live).toMatchObject({ url: 'https://127.0.0.1:9/live-hook' });

    const again = await adminCall<{ error_code: string }>(
      t,
      'DELETE',
      `/admin/v1/customers/${m.customerId}/webhooks/test`,
      undefined,
      404,
    );
    expect(again).toMatchObject({
      ok: false,
      error_code: 'not_found',
      message: 'no test webhook is registered',
    });
    // Registering again works as before.
    await register(m.key, 'https://127.0.0.1:9/test-hook');
    expect(await eventsAfterAJob(m.customerId, m.key, 'test')).toBe(2);
  });

  test('a viewer may not remove one, and nothing changes', async () => {
    const m = await createMerchant(t);
    await register(m.key, 'https://127.0.0.1:9/hook');
    const viewer = await addOperator(t.admin, 'webhook-viewer', 'viewer');
    const r = await send(
      t.admin,
      viewer.token,
      'DELETE',
      `/admin/v1/customers/${m.customerId}/webhooks/test`,
    );
    expect(r.statusCode, r.body).toBe(403);
    expect(r.json()).toMatchObject({ ok: false, error_code: 'forbidden' });
    const hooks = await adminCall<{ webhooks: Record<string, unknown> }>(
      t,
      'GET',
      `/admin/v1/customers/${m.customerId}/webhooks`,
    );
    expect(hooks.webhooks.test).toMatchObject({ url: 'https://127.0.0.1:9/hook' });
  });
});
