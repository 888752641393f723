// The webhook event log and redelivery (contract 13.6), through real HTTPS receivers whose
// certificate comes from a throwaway CA: delivered, failed after every retry and pending events
// with their attempts (error class and duration), a redelivery signed with the current secret
// and the same delivery id that leaves the automatic schedule alone, the 409s, tenant and mode
// isolation, cursor paging under inserts, filters, the operator's endpoints, and retention.
// Deliveries are driven one pass at a time (deliverDueEvents) with an injected clock.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { sweepRetention } from '../src/core/sweeper/retention.ts';
import { deliverDueEvents } from '../src/core/webhooks/delivery.ts';
import { enqueueJobEvent } from '../src/core/webhooks/events.ts';
import { checkSignature } from '../src/core/webhooks/signing.ts';
import {
  ADMIN_TOKEN,
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  issueTestKey,
  type Merchant,
  type TestApp,
} from './helpers/app.ts';
import { createTestCa, type Receiver, startReceiver, type TestCa } from './helpers/https-receiver.ts';
import { redeem, uniqueCode } from './helpers/redeem.ts';

const PLAYER = '5123456789';
let t: TestApp;
let ca: TestCa;
const clock = new ManualClock('2026-11-22T09:00:00Z');
const receivers: Receiver[] = [];

beforeAll(async () => {
  ca = createTestCa();
  t = await createTestApp({
    clock,
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_DELAYS: '10,60,300' },
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await t?.close();
  ca?.remove();
});

async function newReceiver() {
  const r = await startReceiver(ca);
  // Signatures carry the injected clock's time.
  r.nowSec = () => Math.floor(clock.now().getTime() / 1000);
  receivers.push(r);
  return r;
}

const get = (key: string, url: string) => t.api.inject({ method: 'GET', url, headers: bearer(key) });
const redeliver = (key: string, id: string) =>
  t.api.inject({ method: 'POST', url: `/v1/events/${id}/redeliver`, headers: bearer(key) });
/** One pass of the webhook worker, trusting the test CA. */
const deliver = (opts: { trustCa?: boolean } = {}) =>
  deliverDueEvents(t.ctx, opts.trustCa === false ? {} : { ca: ca.ca });

async function register(key: string, url: string): Promise<string> {
  const res = await t.api.inject({
    method: 'POST',
    url: '/v1/webhook',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: { url },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().secret;
}

/** An async redeem of one code, waited for until its job has ended (and its event is written). */
async function finishedJob(m: Merchant, marker = 'OK'): Promise<string> {
  const res = await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode(marker)], async: true });
  expect(res.statusCode, res.body).toBe(202);
  const jobId = res.json().job_id as string;
  for (let i = 0; i < 400; i++) {
    const job = await get(m.key, `/v1/jobs/${jobId}`);
    if (!['queued', 'running'].includes(job.json().status)) return jobId;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`job ${jobId} did not end`);
}

async function eventOfJob(m: Merchant, jobId: string) {
  const res = await get(m.key, `/v1/events?job_id=${jobId}`);
  expect(res.statusCode, res.body).toBe(200);
  const events = res.json().events;
  expect(events).toHaveLength(1);
  return events[0];
}

async function eventRow(id: string) {
  const r = await t.ctx.db.query<{ attempts: number; nextAttemptAt: Date; state: string }>(
    `select attempts, next_attempt_at as "nextAttemptAt", state from webhook_events where id = $1`,
    [id],
  );
  return r.rows[0]!;
}

const attempt = (status: number | null, error: string | null, redelivery = false) => ({
  at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
  status,
  error,
  duration_ms: expect.any(Number),
  redelivery,
});

describe('event states through real HTTPS receivers', () => {
  test('delivered: one attempt with a 2xx; the detail carries the payload data', async () => {
    const m = await createMerchant(t);
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
    const m = await createMerchant(t);
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
    const m = await createMerchant(t);
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
    const m = await createMerchant(t);
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
    const m = await createMerchant(t);
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
    const m = await createMerchant(t);
    const receiver = await newReceiver();
    await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    // There is no endpoint that removes a registration; the operator's database can.
    await t.ctx.db.query('delete from webhooks where customer_id = $1', [m.customerId]);
    const res = await redeliver(m.key, evt.id);
    expect(res.statusCode).toBe(409);
    expect(res.json().error_code).toBe('conflict');
    expect(res.json().message).toBe('no webhook is registered for this mode');
    const rows = await t.ctx.db.query('select 1 from webhook_redeliveries where event_id = $1', [evt.id]);
    expect(rows.rows).toHaveLength(0);
  });
});

describe('isolation and errors', () => {
  test("another customer's or mode's event, an unknown or malformed id: 404 not_found", async () => {
    const m = await createMerchant(t);
    const receiver = await newReceiver();
    await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    const other = await createMerchant(t);
    const live = await issueTestKey(t, m.customerId, { mode: 'live' });
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
    const m = await createMerchant(t, { key: { scopes: ['read'] } });
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
    const m = await createMerchant(t);
    const receiver = await newReceiver();
    await register(m.key, receiver.url);
    const jobId = await finishedJob(m);
    const job = { id: jobId, customerId: m.customerId, mode: 'test' as const };
    // Events at distinct and equal times (the id breaks ties).
    const local = new ManualClock('2026-11-22T08:00:00Z');
    for (let i = 0; i < 8; i++) {
      if (i % 3 !== 0) local.advance(1000);
      await enqueueJobEvent(t.ctx.db, job, i % 2 ? 'redeem.failed' : 'redeem.completed', local);
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
      await enqueueJobEvent(t.ctx.db, job, 'redeem.completed', local);
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toEqual(all.map((e) => e.id));
    const filtered = (await get(m.key, `/v1/events?type=redeem.failed&job_id=${jobId}&limit=100`)).json();
    expect(filtered.events).toHaveLength(4);
    expect(filtered.next_cursor).toBeNull();
  });
});

describe('the operator', () => {
  const admin = (method: 'GET' | 'POST', url: string) =>
    t.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

  test("a customer's events by mode, one event, and a redelivery", async () => {
    const m = await createMerchant(t);
    const receiver = await newReceiver();
    receiver.secret = await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    const list = await adminCall<{ events: { id: string }[]; customer_id: number }>(
      t,
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
    const by = await t.ctx.db.query<{ requestedBy: string }>(
      'select requested_by as "requestedBy" from webhook_redeliveries where event_id = $1',
      [evt.id],
    );
    expect(by.rows).toEqual([{ requestedBy: 'operator' }]);
  });
});

describe('retention (12.2)', () => {
  test('events, attempts and redeliveries older than RETENTION_DAYS are deleted', async () => {
    const m = await createMerchant(t);
    const receiver = await newReceiver();
    await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    await deliver();
    await redeliver(m.key, evt.id);
    await deliver();
    const late = new ManualClock('2026-12-23T09:00:01Z');
    await sweepRetention(t.ctx.db, late, 30);
    for (const table of [
      'webhook_events where id',
      'webhook_attempts where event_id',
      'webhook_redeliveries where event_id',
    ]) {
      const r = await t.ctx.db.query(`select 1 from ${table} = $1`, [evt.id]);
      expect(r.rows, table).toHaveLength(0);
    }
    expect((await get(m.key, `/v1/events/${evt.id}`)).statusCode).toBe(404);
  });
});
