// The webhook event log and redelivery (docs/reference/webhooks-and-events.md#redelivery), through real HTTPS receivers whose
// certificate comes from a throwaway CA: delivered, failed after every retry and pending events
// with their attempts (error class and duration), a redelivery signed with the current secret
// and the same delivery id that leaves the automatic schedule alone, the 409s, tenant and mode
// isolation, cursor paging under inserts and filters (the operator's side: events-admin.test.ts).
// Deliveries are driven one pass at a time (deliverDueEvents) with an injected clock.
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { enqueueJobEvent } from '../../src/core/jobs/job-events.ts';
import { checkSignature } from '../../src/core/webhooks/signing.ts';
import { createMerchant, issueTestKey } from '../helpers/app.ts';
import { attempt, eventKit } from '../helpers/event-kit.ts';

const kit = eventKit();
const { clock, get, redeliver, deliver, register, finishedJob, eventOfJob } = kit;
const newReceiver = () => kit.newReceiver();

async function eventRow(id: string) {
  const r = await kit.t.ctx.db.query<{ attempts: number; nextAttemptAt: Date; state: string }>(
    `select attempts, next_attempt_at as "nextAttemptAt", state from webhook_events where id = $1`,
    [id],
  );
  return r.rows[0]!;
}

describe('event states through real HTTPS receivers', () => {
  test('delivered: one attempt with a 2xx; the detail carries the payload data', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    receiver.secret = await register(m.key, receiver.url);
    const jobId = await finishedJob(m);
    const pending = await eventOfJob(m, jobId);
    expect(pending).toEqual({
      id: expect.stringMatching(/^evt_[A-Za-z0-9]{20,}$/),
      event: 'redeem.completed',
      job_id: jobId,
      mode: 'test',
      created_at: expect.stringMatching(/Z$/),
      state: 'pending',
      next_attempt_at: '2026-11-22T09:00:00Z',
      attempts: [],
    });
    expect(await deliver()).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]!.verdict).toBeNull();

    const res = await get(m.key, `/v1/events/${pending.id}`);
    expect(res.statusCode).toBe(200);
    const job = (await get(m.key, `/v1/jobs/${jobId}`)).json();
    const sent = JSON.parse(receiver.requests[0]!.raw.toString('utf8'));
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      ...pending,
      state: 'delivered',
      next_attempt_at: null,
      attempts: [attempt(200, null)],
      data: sent.data,
    });
    expect(sent.data.job_id).toBe(job.job_id);
    expect(res.headers['svc-cost']).toBe('0');
  });

  test('failed after the retries: four attempts with their error class, then dropped', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    receiver.fallback = 503;
    receiver.secret = await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));

    await deliver();
    const afterOne = (await get(m.key, `/v1/events/${evt.id}`)).json();
    expect(afterOne.state).toBe('pending');
    expect(afterOne.attempts).toEqual([attempt(503, 'http_status')]);
    expect(afterOne.next_attempt_at).toBe('2026-11-22T09:00:10Z');
    expect(
      (await get(m.key, '/v1/events?state=pending')).json().events.map((e: { id: string }) => e.id),
    ).toEqual([evt.id]);

    for (const wait of [10, 60, 300]) {
      clock.advance(wait * 1000);
      await deliver();
    }
    clock.set('2026-11-22T09:00:00Z');
    const done = (await get(m.key, `/v1/events/${evt.id}`)).json();
    expect(done.state).toBe('failed');
    expect(done.next_attempt_at).toBeNull();
    expect(done.attempts).toEqual([
      attempt(503, 'http_status'),
      attempt(503, 'http_status'),
      attempt(503, 'http_status'),
      attempt(503, 'http_status'),
    ]);
    expect(receiver.requests).toHaveLength(4);
    const failed = (await get(m.key, '/v1/events?state=failed')).json();
    expect(failed.events.map((e: { id: string }) => e.id)).toEqual([evt.id]);
    expect((await get(m.key, '/v1/events?state=delivered')).json().events).toEqual([]);
  });

  test('error classes: tls (an untrusted certificate) and connection (nothing listening)', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    await deliver({ trustCa: false });
    expect((await get(m.key, `/v1/events/${evt.id}`)).json().attempts).toEqual([attempt(null, 'tls')]);

    const closed = await newReceiver();
    await closed.close();
    await register(m.key, closed.url);
    clock.advance(10_000);
    await deliver();
    clock.set('2026-11-22T09:00:00Z');
    expect((await get(m.key, `/v1/events/${evt.id}`)).json().attempts).toEqual([
      attempt(null, 'tls'),
      attempt(null, 'connection'),
    ]);
  });
});

describe('redelivery', () => {
  test('to the URL and secret registered now, same delivery id, schedule untouched; 409 while queued', async () => {
    const m = await createMerchant(kit.t);
    const first = await newReceiver();
    first.fallback = 500;
    first.secret = await register(m.key, first.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    await deliver();
    const before = await eventRow(evt.id);
    expect(before).toMatchObject({ attempts: 1, state: 'pending' });

    // Registering again replaces the URL and the secret: the redelivery goes there, signed anew.
    const second = await newReceiver();
    second.secret = await register(m.key, second.url);
    const res = await redeliver(m.key, evt.id);
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toEqual({ ok: true, request_id: res.headers['x-request-id'], event_id: evt.id });
    expect(res.headers['svc-cost']).toBe('0');
    const again = await redeliver(m.key, evt.id);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({
      ok: false,
      error_code: 'conflict',
      message: 'a redelivery of this event is still in flight; wait for its result',
      request_id: again.headers['x-request-id'],
    });

    // The clock is before the next automatic attempt: only the redelivery is due.
    expect(await deliver()).toBe(1);
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(1);
    const got = second.requests[0]!;
    expect(got.verdict).toBeNull();
    expect(
      checkSignature(first.secret, got.headers['svc-signature'] as string, got.raw, {
        nowSec: Math.floor(clock.now().getTime() / 1000),
      }),
    ).toBe('mismatch');
    expect(got.headers['svc-delivery-id']).toBe(evt.id);
    expect(JSON.parse(got.raw.toString('utf8')).id).toBe(evt.id);
    expect(await eventRow(evt.id)).toEqual(before);

    const view = (await get(m.key, `/v1/events/${evt.id}`)).json();
    // Still pending: the automatic retry is due at its time, neither used up nor reset.
    expect(view.state).toBe('pending');
    expect(view.next_attempt_at).toBe('2026-11-22T09:00:10Z');
    expect(view.attempts).toEqual([attempt(500, 'http_status'), attempt(200, null, true)]);
    // Once the schedule ends (the old receiver's URL is gone), the 2xx of the redelivery counts.
    second.fallback = 500;
    for (const wait of [10, 60, 300]) {
      clock.advance(wait * 1000);
      await deliver();
    }
    clock.set('2026-11-22T09:00:00Z');
    const ended = (await get(m.key, `/v1/events/${evt.id}`)).json();
    expect(ended.state).toBe('delivered');
    expect(ended.attempts).toHaveLength(5);
  });

  test('a delivered event may be redelivered; pending while it is queued', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    receiver.secret = await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    await deliver();
    expect((await redeliver(m.key, evt.id)).statusCode).toBe(202);
    const queued = (await get(m.key, `/v1/events/${evt.id}`)).json();
    expect(queued).toMatchObject({ state: 'pending', next_attempt_at: '2026-11-22T09:00:00Z' });
    await deliver();
    expect(receiver.requests.map((r) => r.headers['svc-delivery-id'])).toEqual([evt.id, evt.id]);
    const view = (await get(m.key, `/v1/events/${evt.id}`)).json();
    expect(view).toMatchObject({ state: 'delivered', next_attempt_at: null });
    expect(view.attempts).toEqual([attempt(200, null), attempt(200, null, true)]);
    // Done: another may be asked for.
    expect((await redeliver(m.key, evt.id)).statusCode).toBe(202);
  });

  test('no webhook registered: 409 conflict, nothing queued', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    // There is no endpoint that removes a registration; the operator's database can.
    await kit.t.ctx.db.query('delete from webhooks where customer_id = $1', [m.customerId]);
    const res = await redeliver(m.key, evt.id);
    expect(res.statusCode).toBe(409);
    expect(res.json().error_code).toBe('conflict');
    expect(res.json().message).toBe('no webhook is registered for this mode');
    const rows = await kit.t.ctx.db.query('select 1 from webhook_redeliveries where event_id = $1', [evt.id]);
    expect(rows.rows).toHaveLength(0);
  });
});

describe('isolation and errors', () => {
  test("another customer's or mode's event, an unknown or malformed id: 404 not_found", async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    const other = await createMerchant(kit.t);
    const live = await issueTestKey(kit.t, m.customerId, { mode: 'live' });
    for (const key of [other.key, live.key]) {
      for (const res of [await get(key, `/v1/events/${evt.id}`), await redeliver(key, evt.id)]) {
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({
          ok: false,
          error_code: 'not_found',
          message: 'unknown event',
          request_id: res.headers['x-request-id'],
        });
      }
      expect((await get(key, '/v1/events')).json().events).toEqual([]);
    }
    for (const id of ['evt_0000000000000000000000000', 'nope', 'evt_%27%20or%201=1']) {
      expect((await get(m.key, `/v1/events/${id}`)).statusCode).toBe(404);
      expect((await redeliver(m.key, id)).statusCode).toBe(404);
    }
  });

  test('scopes: a read key lists but may not redeliver; bad query parameters are 400', async () => {
    const m = await createMerchant(kit.t, { key: { scopes: ['read'] } });
    const res = await redeliver(m.key, 'evt_0000000000000000000000000');
    expect(res.statusCode).toBe(403);
    expect(res.json().error_code).toBe('scope_denied');
    expect((await get(m.key, '/v1/events')).statusCode).toBe(200);
    for (const q of [
      'limit=0',
      'limit=101',
      'state=lost',
      'cursor=%21%21',
      'job_id=x',
      'color=red',
      'type=A',
    ]) {
      const bad = await get(m.key, `/v1/events?${q}`);
      expect(bad.statusCode, q).toBe(400);
      expect(bad.json().error_code).toBe('bad_request');
    }
  });
});

describe('paging', () => {
  test('newest first, no gaps or repeats while events are written between pages', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    await register(m.key, receiver.url);
    const jobId = await finishedJob(m);
    const job = { id: jobId, customerId: m.customerId, mode: 'test' as const };
    // Events at distinct and equal times (the id breaks ties).
    const local = new ManualClock('2026-11-22T08:00:00Z');
    for (let i = 0; i < 8; i++) {
      if (i % 3 !== 0) local.advance(1000);
      await enqueueJobEvent(kit.t.ctx.db, job, i % 2 ? 'redeem.failed' : 'redeem.completed', local);
    }
    const all = (await get(m.key, '/v1/events?limit=100')).json().events as {
      id: string;
      created_at: string;
    }[];
    expect(all).toHaveLength(9);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(m.key, `/v1/events?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode).toBe(200);
      const page = res.json();
      seen.push(...page.events.map((e: { id: string }) => e.id));
      cursor = page.next_cursor;
      pages++;
      // A newer event written while paging never shifts what follows.
      local.set('2026-11-22T10:00:00Z');
      await enqueueJobEvent(kit.t.ctx.db, job, 'redeem.completed', local);
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toEqual(all.map((e) => e.id));
    const filtered = (await get(m.key, `/v1/events?type=redeem.failed&job_id=${jobId}&limit=100`)).json();
    expect(filtered.events).toHaveLength(4);
    expect(filtered.next_cursor).toBeNull();
  });
});

// The state is a column (webhook_events.log_state, kept by triggers in the
// transaction of each change), so a list filtered by state reads an index range.
describe('the event state kept in a column', () => {
  const derived = `case
      when e.state = 'pending' or exists (select 1 from webhook_redeliveries d where d.customer_id = e.customer_id and d.event_id = e.id and d.state <> 'done') then 'pending'
      when e.state = 'delivered' or exists (select 1 from webhook_redeliveries d where d.customer_id = e.customer_id and d.event_id = e.id and d.state = 'done'
             and d.error_class is null and d.status between 200 and 299) then 'delivered'
      else 'failed' end`;
  const column = async (id: string) =>
    (
      await kit.t.ctx.db.query<{ stored: string; derived: string }>(
        `select e.log_state as stored, ${derived} as derived from webhook_events e where e.id = $1`,
        [id],
      )
    ).rows[0]!;

  test('failed, redelivered (pending), then delivered: the column follows every step', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    receiver.fallback = 503;
    receiver.secret = await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    expect(await column(evt.id)).toEqual({ stored: 'pending', derived: 'pending' });
    for (const wait of [0, 10, 60, 300]) {
      clock.advance(wait * 1000);
      await deliver();
    }
    clock.set('2026-11-22T09:00:00Z');
    expect(await column(evt.id)).toEqual({ stored: 'failed', derived: 'failed' });
    expect((await redeliver(m.key, evt.id)).statusCode).toBe(202);
    expect(await column(evt.id)).toEqual({ stored: 'pending', derived: 'pending' });
    expect(
      (await get(m.key, '/v1/events?state=pending')).json().events.map((e: { id: string }) => e.id),
    ).toEqual([evt.id]);
    receiver.fallback = 200;
    await deliver();
    expect(await column(evt.id)).toEqual({ stored: 'delivered', derived: 'delivered' });
    expect(
      (await get(m.key, '/v1/events?state=delivered')).json().events.map((e: { id: string }) => e.id),
    ).toEqual([evt.id]);
    expect((await get(m.key, '/v1/events?state=failed')).json().events).toEqual([]);
  });

  test("the list filters on the column, not on a derivation of every event's state", async () => {
    const m = await createMerchant(kit.t);
    const receiver = await newReceiver();
    receiver.secret = await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    // A state only the column says (no write path sets it so): the list answers from the column.
    await kit.t.ctx.db.query(`update webhook_events set log_state = 'failed' where id = $1`, [evt.id]);
    const failed = (await get(m.key, '/v1/events?state=failed')).json();
    expect(failed.events.map((e: { id: string; state: string }) => [e.id, e.state])).toEqual([
      [evt.id, 'failed'],
    ]);
    await kit.t.ctx.db.query(`update webhook_events set log_state = 'pending' where id = $1`, [evt.id]);
  });

  test('every event written by this file: the column equals the derived state', async () => {
    const r = await kit.t.ctx.db.query<{ n: number }>(
      `select count(*)::int as n from webhook_events e where e.log_state is distinct from ${derived}`,
    );
    expect(r.rows[0]!.n).toBe(0);
    const all = await kit.t.ctx.db.query<{ n: number }>('select count(*)::int as n from webhook_events');
    expect(all.rows[0]!.n).toBeGreaterThan(5);
  });
});
