// The operator's side of the event log (docs/reference/webhooks-and-events.md#the-event-log): a customer's events by mode, one event,
// a redelivery; what a process that stops while redelivering leaves (closed as a failed attempt
// once its lease runs out, never sent twice; a queued one is sent by the next pass); and
// retention (docs/reference/running.md#retention) of events, attempts and redeliveries.
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { sweepRetention } from '../../src/core/sweeper/retention.ts';
import { envelopeBody, sendAttempt } from '../../src/core/webhooks/delivery.ts';
import { runDueRedeliveries } from '../../src/core/webhooks/redelivery.ts';
import { ADMIN_TOKEN, adminCall, createMerchant } from '../helpers/app.ts';
import { attempt, eventKit } from '../helpers/event-kit.ts';

const kit = eventKit();
const { clock, get, redeliver, deliver, register, finishedJob, eventOfJob } = kit;
const newReceiver = () => kit.newReceiver();

describe('a process that stops while redelivering', () => {
  test('a queued redelivery waits for the next pass; one in flight is closed as failed, not resent', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    receiver.secret = await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    await deliver();
    expect((await redeliver(m.key, evt.id)).statusCode).toBe(202);
    // A sender that never finishes: the process "stops" with the redelivery claimed.
    const hung = runDueRedeliveries(
      kit.t.ctx,
      { leaseMs: 60_000 },
      { send: () => new Promise(() => undefined), envelope: envelopeBody },
    );
    void hung;
    await new Promise((r) => setTimeout(r, 200));
    const claimed = await kit.t.ctx.db.query<{ state: string }>(
      'select state from webhook_redeliveries where event_id = $1',
      [evt.id],
    );
    expect(claimed.rows).toEqual([{ state: 'sending' }]);
    // Still in flight: a second request is refused; the event shows pending.
    expect((await redeliver(m.key, evt.id)).statusCode).toBe(409);
    expect((await get(m.key, `/v1/events/${evt.id}`)).json().state).toBe('pending');

    // Past the lease, the next pass closes it as a failed attempt and sends nothing.
    clock.advance(61_000);
    await runDueRedeliveries(kit.t.ctx, { ca: kit.ca.ca }, { send: sendAttempt, envelope: envelopeBody });
    expect(receiver.requests).toHaveLength(1);
    const view = (await get(m.key, `/v1/events/${evt.id}`)).json();
    expect(view.state).toBe('delivered');
    expect(view.attempts).toEqual([
      attempt(200, null),
      { ...attempt(null, 'connection', true), duration_ms: 0 },
    ]);
    // Now another may be asked for, and the next pass sends it.
    expect((await redeliver(m.key, evt.id)).statusCode).toBe(202);
    await deliver();
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[1]!.headers['svc-delivery-id']).toBe(evt.id);
    clock.set('2026-11-22T09:00:00Z');
  });
});

describe('the operator', () => {
  const admin = (method: 'GET' | 'POST', url: string) =>
    kit.t.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

  test("a customer's events by mode, one event, and a redelivery", async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    receiver.secret = await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    const list = await adminCall<{ events: { id: string }[]; customer_id: number }>(
      kit.t,
      'GET',
      `/admin/v1/customers/${m.customerId}/events?mode=test`,
    );
    expect(list.customer_id).toBe(m.customerId);
    expect(list.events.map((e) => e.id)).toEqual([evt.id]);
    expect(
      (await admin('GET', `/admin/v1/customers/${m.customerId}/events?mode=live`)).json().events,
    ).toEqual([]);
    const one = await admin('GET', `/admin/v1/events/${evt.id}`);
    expect(one.json()).toMatchObject({ ok: true, id: evt.id, job_id: evt.job_id, state: 'pending' });
    const res = await admin('POST', `/admin/v1/events/${evt.id}/redeliver`);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ ok: true, request_id: res.headers['x-request-id'], event_id: evt.id });
    expect((await admin('POST', `/admin/v1/events/${evt.id}/redeliver`)).statusCode).toBe(409);
    expect((await admin('GET', '/admin/v1/customers/999999999/events')).statusCode).toBe(404);
    expect((await admin('GET', '/admin/v1/events/evt_0000000000000000000000000')).statusCode).toBe(404);
    const by = await kit.t.ctx.db.query<{ requestedBy: string }>(
      'select requested_by as "requestedBy" from webhook_redeliveries where event_id = $1',
      [evt.id],
    );
    expect(by.rows).toEqual([{ requestedBy: 'operator' }]);
  });
});

describe('retention (12.2)', () => {
  test('events, attempts and redeliveries older than RETENTION_DAYS are deleted', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    await deliver();
    await redeliver(m.key, evt.id);
    await deliver();
    const late = new ManualClock('2026-12-23T09:00:01Z');
    await sweepRetention(kit.t.ctx.db, late, 30);
    for (const table of [
      'webhook_events where id',
      'webhook_attempts where event_id',
      'webhook_redeliveries where event_id',
    ]) {
      const r = await kit.t.ctx.db.query(`select 1 from ${table} = $1`, [evt.id]);
      expect(r.rows, table).toHaveLength(0);
    }
    expect((await get(m.key, `/v1/events/${evt.id}`)).statusCode).toBe(404);
  });
});
