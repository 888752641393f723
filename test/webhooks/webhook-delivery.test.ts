// Webhook deliveries (docs/reference/webhooks-and-events.md#the-url-guard) through real server processes and a real HTTPS
// receiver whose certificate comes from a throwaway CA (trusted through NODE_EXTRA_CA_CERTS):
// signature over the exact bytes, headers and envelope, retries with one delivery id, drop after
// the last retry, the secret switched by re-registration, redirects not followed, a pending
// delivery surviving SIGKILL, private addresses refused at delivery time. Then, in-process with
// an injected resolver: the connection goes to the address that was checked.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { enqueueJobEvent } from '../../src/core/jobs/job-events.ts';
import { deliverDueEvents, MAX_ATTEMPTS } from '../../src/core/webhooks/delivery.ts';
import { registerWebhook } from '../../src/core/webhooks/registration.ts';
import { checkSignature } from '../../src/core/webhooks/signing.ts';
import type { LookupFn } from '../../src/core/webhooks/url-guard.ts';
import { startWebhookWorker } from '../../src/core/webhooks/worker.ts';
import { type Database, openPglite, openPostgres } from '../../src/db/database.ts';
import { bearer, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { onPostgres } from '../helpers/db.ts';
import {
  createTestCa,
  type ReceivedRequest,
  type Receiver,
  startReceiver,
  TEST_HOST_NAME,
  type TestCa,
} from '../helpers/https-receiver.ts';
import {
  adminHttp,
  createProcessMerchant,
  type ServerProcess,
  startServerProcess,
} from '../helpers/process.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

const PLAYER = '5123456789';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let ca: TestCa;
const dataDir = mkdtempSync(join(tmpdir(), 'rg-webhooks-'));
const servers: ServerProcess[] = [];
const receivers: Receiver[] = [];

beforeAll(() => {
  ca = createTestCa();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  await Promise.all(receivers.map((r) => r.close()));
  ca?.remove();
  rmSync(dataDir, { recursive: true, force: true });
});

async function startServer(env: Record<string, string> = {}) {
  const server = await startServerProcess({
    dataDir,
    env: {
      NODE_EXTRA_CA_CERTS: ca.caFile,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_DELAYS: '1,1,1',
      ...env,
    },
  });
  servers.push(server);
  return server;
}

async function newReceiver() {
  const r = await startReceiver(ca);
  receivers.push(r);
  return r;
}

async function registerOver(server: ServerProcess, key: string, url: string): Promise<string> {
  const res = await fetch(`${server.url}/v1/webhook`, {
    method: 'POST',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    body: JSON.stringify({ url }),
  });
  const body = (await res.json()) as { secret: string; url: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  expect(body.url).toBe(url);
  return body.secret;
}

async function asyncRedeem(server: ServerProcess, key: string, codes = [uniqueCode('OK')]): Promise<string> {
  const res = await fetch(`${server.url}/v1/redeem`, {
    method: 'POST',
    headers: { ...bearer(key), 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
    body: JSON.stringify({ player_id: PLAYER, codes, async: true }),
  });
  const body = (await res.json()) as { job_id: string };
  expect(res.status, JSON.stringify(body)).toBe(202);
  return body.job_id;
}

interface Envelope {
  id: string;
  event: string;
  created_at: number;
  data: Record<string, unknown>;
}
const envelopeOf = (r: ReceivedRequest) => JSON.parse(r.raw.toString('utf8')) as Envelope;

/** Waits long enough for any further attempt to have come (the delays are 1 s). */
const settle = () => sleep(2_500);

describe('deliveries through a real server process', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServer();
  }, 90_000);
  // No server process may be left to take the in-process tests' events on a shared PostgreSQL.
  afterAll(() => server?.kill());

  test('one signed POST: exact-bytes signature, headers, envelope shape, data = the job result', async () => {
    const m = await createProcessMerchant(server);
    const receiver = await newReceiver();
    receiver.secret = await registerOver(server, m.key, receiver.url);
    const before = Math.floor(Date.now() / 1000);
    const jobId = await asyncRedeem(server, m.key);

    const [req] = await receiver.waitFor(1);
    expect(req!.method).toBe('POST');
    expect(req!.path).toBe('/hook');
    expect(req!.verdict).toBeNull();
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['svc-event']).toBe('redeem.completed');
    expect(req!.headers['svc-delivery-id']).toMatch(/^evt_[A-Za-z0-9]{20,}$/);
    expect(req!.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(req!.headers.authorization).toBeUndefined();
    // The signature covers the bytes as sent: any change to them, even re-serialising, breaks it.
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(req!.raw.toString()), null, 1));
    expect(checkSignature(receiver.secret, req!.headers['svc-signature'] as string, reserialised)).toBe(
      'mismatch',
    );

    const envelope = envelopeOf(req!);
    expect(Object.keys(envelope)).toEqual(['id', 'event', 'created_at', 'data']);
    expect(envelope.id).toBe(req!.headers['svc-delivery-id']);
    expect(envelope.event).toBe('redeem.completed');
    expect(Number.isInteger(envelope.created_at)).toBe(true);
    expect(envelope.created_at).toBeGreaterThanOrEqual(before - 1);
    expect(envelope.created_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));

    const job = (await (
      await fetch(`${server.url}/v1/jobs/${jobId}`, { headers: bearer(m.key) })
    ).json()) as {
      status: string;
      result: Record<string, unknown>;
    };
    expect(job.status).toBe('completed');
    expect(envelope.data).toEqual(job.result);
    expect(envelope.data).toMatchObject({ ok: true, job_id: jobId, codes: [{ status: 'activated' }] });

    await settle();
    expect(receiver.requests).toHaveLength(1);
  });

  test('500, 500, 200: exactly three attempts, one delivery id, each signed afresh and valid', async () => {
    const m = await createProcessMerchant(server);
    const receiver = await newReceiver();
    receiver.secret = await registerOver(server, m.key, receiver.url);
    receiver.script = [500, 500, 200];
    await asyncRedeem(server, m.key);

    const got = await receiver.waitFor(3);
    await settle();
    expect(receiver.requests).toHaveLength(3);
    expect(got.map((r) => r.answered)).toEqual([500, 500, 200]);
    expect(got.every((r) => r.verdict === null)).toBe(true);
    expect(new Set(got.map((r) => r.headers['svc-delivery-id'])).size).toBe(1);
    expect(new Set(got.map((r) => envelopeOf(r).id)).size).toBe(1);
    // The pauses are WEBHOOK_RETRY_DELAYS (1 s here).
    expect(got[1]!.receivedAt - got[0]!.receivedAt).toBeGreaterThanOrEqual(900);
    expect(got[2]!.receivedAt - got[1]!.receivedAt).toBeGreaterThanOrEqual(900);
  });

  test('always 500: the first attempt and 3 retries, then none more', async () => {
    const m = await createProcessMerchant(server);
    const receiver = await newReceiver();
    receiver.secret = await registerOver(server, m.key, receiver.url);
    receiver.fallback = 500;
    await asyncRedeem(server, m.key);

    await receiver.waitFor(MAX_ATTEMPTS);
    await sleep(3_500); // past the last delay, twice over
    expect(receiver.requests).toHaveLength(4);
    expect(new Set(receiver.requests.map((r) => r.headers['svc-delivery-id'])).size).toBe(1);
  });

  test('a 503 is a failed attempt and a 204 is success', async () => {
    const m = await createProcessMerchant(server);
    const receiver = await newReceiver();
    receiver.secret = await registerOver(server, m.key, receiver.url);
    receiver.script = [503, 204];
    await asyncRedeem(server, m.key);
    await receiver.waitFor(2);
    await settle();
    expect(receiver.requests.map((r) => r.answered)).toEqual([503, 204]);
  });

  test('re-registration switches the secret: the next attempt verifies only with the new one', async () => {
    const m = await createProcessMerchant(server);
    const receiver = await newReceiver();
    const oldSecret = await registerOver(server, m.key, receiver.url);
    receiver.secret = oldSecret;
    receiver.script = [500];
    await asyncRedeem(server, m.key);
    const [first] = await receiver.waitFor(1);
    expect(first!.verdict).toBeNull();

    const newSecret = await registerOver(server, m.key, receiver.url);
    expect(newSecret).not.toBe(oldSecret);
    receiver.secret = newSecret;
    const got = await receiver.waitFor(2);
    const second = got[1]!;
    expect(second.verdict).toBeNull();
    const header = second.headers['svc-signature'] as string;
    expect(checkSignature(oldSecret, header, second.raw)).toBe('mismatch');
    expect(second.headers['svc-delivery-id']).toBe(first!.headers['svc-delivery-id']);
    await settle();
    expect(receiver.requests).toHaveLength(2);
  });

  test('a redirect is not followed: the 302 is a failed attempt and the retry goes to the registered URL', async () => {
    const m = await createProcessMerchant(server);
    const receiver = await newReceiver();
    receiver.secret = await registerOver(server, m.key, receiver.url);
    receiver.script = [
      { status: 302, headers: { location: `https://127.0.0.1:${receiver.port}/other` } },
      200,
    ];
    await asyncRedeem(server, m.key);
    await receiver.waitFor(2);
    await settle();
    expect(receiver.requests.map((r) => [r.path, r.answered])).toEqual([
      ['/hook', 302],
      ['/hook', 200],
    ]);
    expect(receiver.at('/other')).toHaveLength(0);
  });

  test('no event for a customer without a webhook, and none for a sync redeem', async () => {
    const m = await createProcessMerchant(server);
    const receiver = await newReceiver();
    await asyncRedeem(server, m.key); // not registered yet: no outbox row
    await sleep(1_000);
    receiver.secret = await registerOver(server, m.key, receiver.url);
    const res = await fetch(`${server.url}/v1/redeem`, {
      method: 'POST',
      headers: { ...bearer(m.key), 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
      body: JSON.stringify({ player_id: PLAYER, codes: [uniqueCode('OK')] }),
    });
    expect(res.status).toBe(200);
    await settle();
    expect(receiver.requests).toHaveLength(0);
  });

  test('SIGKILL while a retry is pending: the restarted process delivers it', {
    timeout: 120_000,
  }, async () => {
    const m = await createProcessMerchant(server);
    const receiver = await newReceiver();
    receiver.secret = await registerOver(server, m.key, receiver.url);
    await server.kill('SIGKILL');

    // A process whose retry comes only 6 s after the failed first attempt.
    const slow = await startServer({ WEBHOOK_RETRY_DELAYS: '6,6,6' });
    receiver.script = [500];
    const jobId = await asyncRedeem(slow, m.key);
    const [first] = await receiver.waitFor(1);
    // Kill only once the failed first attempt is recorded (otherwise the restarted process
    // rightly treats the attempt as cut off and sends it again at once).
    for (let i = 0; i < 100; i++) {
      const view = await adminHttp<{ webhooks: { attempts: number; last_status: number | null }[] }>(
        slow,
        'GET',
        `/admin/v1/jobs/${jobId}`,
      );
      if (view.webhooks[0]?.last_status === 500) break;
      await sleep(50);
    }
    await slow.kill('SIGKILL');
    const killedAt = Date.now();

    server = await startServer();
    const got = await receiver.waitFor(2, { timeoutMs: 30_000 });
    expect(got[1]!.answered).toBe(200);
    expect(got[1]!.verdict).toBeNull();
    expect(got[1]!.headers['svc-delivery-id']).toBe(first!.headers['svc-delivery-id']);
    expect(got[1]!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(5_500); // its due time held
    expect(got[1]!.receivedAt).toBeGreaterThan(killedAt);
    await settle();
    expect(receiver.requests).toHaveLength(2);
  });

  test('private targets not allowed: a registered loopback URL is refused at every attempt and nothing is sent', {
    timeout: 120_000,
  }, async () => {
    const m = await createProcessMerchant(server);
    const receiver = await newReceiver();
    receiver.secret = await registerOver(server, m.key, receiver.url);
    await server.kill('SIGKILL');

    const strict = await startServer({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
    await asyncRedeem(strict, m.key);
    await sleep(6_000); // four attempts at 1 s pauses, with room
    expect(receiver.requests).toHaveLength(0);
    await strict.kill('SIGKILL');

    const rows = await withDatabase((db) =>
      db.query<{ state: string; attempts: number; errors: string[] }>(
        `select e.state, e.attempts,
                array(select a.error from webhook_attempts a where a.customer_id = e.customer_id and a.event_id = e.id order by a.attempt) as errors
           from webhook_events e where e.customer_id = $1`,
        [m.customerId],
      ),
    );
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]).toMatchObject({ state: 'dropped', attempts: 4 });
    expect(rows.rows[0]!.errors).toHaveLength(4);
    for (const e of rows.rows[0]!.errors) expect(e).toMatch(/^blocked: /);
    server = await startServer();
  });
});

/** Opens the server processes' database (on PGlite only while no process holds it). */
async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const db = onPostgres
    ? await openPostgres(process.env.DATABASE_URL!)
    : await openPglite(join(dataDir, 'pglite'));
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

describe('in-process worker with an injected resolver', () => {
  let t: TestApp;
  let clock: ManualClock;
  let receiver: Receiver;
  beforeAll(async () => {
    // A day ahead: on a shared PostgreSQL no other process (real clock) finds these events due.
    clock = new ManualClock(new Date(Date.now() + 86_400_000));
    t = await createTestApp({
      clock,
      jobWorker: false,
      env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_DELAYS: '10,60,300' },
    });
    receiver = await newReceiver();
    receiver.nowSec = () => Math.floor(clock.now().getTime() / 1000);
  });
  afterAll(() => t?.close());

  /** A merchant registered through an injected resolver, with one finished job in the outbox. */
  async function merchantWithEvent(lookup: LookupFn, url: string) {
    const m = await createMerchant(t, { topup: { test: 5 } });
    const { secret } = await registerWebhook(
      { db: t.ctx.db, clock, codeKey: t.ctx.codeKey, allowPrivate: true, lookup },
      { customerId: m.customerId, mode: 'test' },
      { url },
    );
    // A sync redeem makes the job; its event is written as the job worker writes async ones.
    const res = await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode('OK')] });
    expect(res.statusCode).toBe(200);
    const job = await t.ctx.db.query<{ id: string }>(
      'select id from jobs where customer_id = $1 order by created_at desc limit 1',
      [m.customerId],
    );
    const jobId = job.rows[0]!.id;
    const eventId = await enqueueJobEvent(
      t.ctx.db,
      { id: jobId, customerId: m.customerId, mode: 'test' },
      'redeem.completed',
      clock,
    );
    expect(eventId).toMatch(/^evt_/);
    return { ...m, secret, jobId, eventId: eventId! };
  }

  const toLoopback: LookupFn = async () => [{ address: '127.0.0.1', family: 4 }];
  /** One worker pass; `trust: 'node'` leaves out the test CA (Node's default trust only). */
  const pass = (ctx: TestApp['ctx'] = t.ctx, trust: 'test-ca' | 'node' = 'test-ca') =>
    deliverDueEvents(ctx, { lookup: toLoopback, ...(trust === 'test-ca' ? { ca: ca.ca } : {}) });

  test('connects to the vetted address, keeping the host name for SNI and the certificate check', async () => {
    // No system resolver knows this name: only the injected lookup can have found the address.
    const url = `https://${TEST_HOST_NAME}:${receiver.port}/pinned`;
    const m = await merchantWithEvent(toLoopback, url);
    receiver.secret = m.secret;
    await pass();
    const [req] = receiver.at('/pinned');
    expect(req!.headers.host).toBe(`${TEST_HOST_NAME}:${receiver.port}`);
    expect(req!.verdict).toBeNull();
    expect(req!.headers['svc-delivery-id']).toBe(m.eventId);
    const envelope = envelopeOf(req!);
    expect(envelope.created_at).toBe(Math.floor(clock.now().getTime() / 1000));
    expect(envelope.data).toMatchObject({ ok: true, job_id: m.jobId, codes: [{ status: 'activated' }] });
    expect(await eventRow(m.eventId)).toMatchObject({
      state: 'delivered',
      attempts: 1,
      last_status: 200,
      locked_until: null,
    });
    expect(await attemptRows(m.eventId)).toEqual([
      { attempt: 1, url, status: 200, error: null, duration_ms: expect.any(Number) },
    ]);
  });

  test('a name that now resolves to a private address is refused at delivery (rebinding), retried on schedule, then dropped', async () => {
    const strict = { ...t.ctx, config: { ...t.ctx.config, WEBHOOK_ALLOW_PRIVATE_TARGETS: false } };
    const url = `https://${TEST_HOST_NAME}:${receiver.port}/rebound`;
    const m = await merchantWithEvent(async () => [{ address: '93.184.216.34', family: 4 }], url);
    await pass(strict);
    expect(receiver.at('/rebound')).toHaveLength(0);
    const event = await eventRow(m.eventId);
    expect(event).toMatchObject({ state: 'pending', attempts: 1, last_status: null });
    expect(event.last_error).toMatch(/^blocked: .*not public/);
    expect(event.next_attempt_at.getTime()).toBe(clock.now().getTime() + 10_000);

    // Not due yet: untouched. Due: the next attempt; every attempt refused, dropped after the 4th.
    await pass(strict);
    expect((await eventRow(m.eventId)).attempts).toBe(1);
    for (const delay of [10, 60, 300]) {
      clock.advance(delay * 1000);
      await pass(strict);
    }
    expect(await eventRow(m.eventId)).toMatchObject({ state: 'dropped', attempts: 4 });
    expect((await attemptRows(m.eventId)).map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
    clock.advance(3_600_000);
    await pass(strict);
    expect((await eventRow(m.eventId)).attempts).toBe(4);
    expect(receiver.at('/rebound')).toHaveLength(0);
  });

  test('an untrusted certificate is a failed attempt; the retry with the CA trusted succeeds', async () => {
    const url = `https://${TEST_HOST_NAME}:${receiver.port}/untrusted`;
    const m = await merchantWithEvent(toLoopback, url);
    receiver.secret = m.secret;
    await pass(t.ctx, 'node');
    expect(receiver.at('/untrusted')).toHaveLength(0);
    const event = await eventRow(m.eventId);
    expect(event).toMatchObject({ state: 'pending', attempts: 1, last_status: null });
    expect(event.last_error).toMatch(/certificate|self.signed|issuer/i);
    clock.advance(10_000);
    await pass();
    expect(receiver.at('/untrusted')).toHaveLength(1);
    expect(await eventRow(m.eventId)).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  test('a claimed event is not taken again while its lease runs; a dead holder’s lease runs out', async () => {
    const m = await merchantWithEvent(toLoopback, `https://${TEST_HOST_NAME}:${receiver.port}/lease`);
    receiver.secret = m.secret;
    // A process that claimed the event and died: attempt 1 taken, leased for 60 s.
    await t.ctx.db.query('update webhook_events set attempts = 1, locked_until = $2 where id = $1', [
      m.eventId,
      new Date(clock.now().getTime() + 60_000),
    ]);
    await pass();
    expect(receiver.at('/lease')).toHaveLength(0);
    clock.advance(61_000);
    await pass();
    expect(receiver.at('/lease')).toHaveLength(1);
    expect(await eventRow(m.eventId)).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  test('a customer without a registration any more: the event is dropped unsent', async () => {
    const m = await merchantWithEvent(toLoopback, `https://${TEST_HOST_NAME}:${receiver.port}/gone`);
    await t.ctx.db.query('delete from webhooks where customer_id = $1', [m.customerId]);
    await pass();
    expect(receiver.at('/gone')).toHaveLength(0);
    expect(await eventRow(m.eventId)).toMatchObject({
      state: 'dropped',
      attempts: 0,
      last_error: 'no webhook registered any more',
    });
  });

  test('concurrent worker passes send one attempt once (FOR UPDATE SKIP LOCKED and the lease)', async () => {
    const m = await merchantWithEvent(toLoopback, `https://${TEST_HOST_NAME}:${receiver.port}/once`);
    receiver.secret = m.secret;
    await Promise.all([pass(), pass(), pass(), pass()]);
    expect(receiver.at('/once')).toHaveLength(1);
    expect(await eventRow(m.eventId)).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(await attemptRows(m.eventId)).toHaveLength(1);
  });

  test('the loop survives a failing database: it logs, backs off and stops cleanly', async () => {
    const broken = {
      ...t.ctx,
      db: {
        ...t.ctx.db,
        kind: 'postgres' as const,
        query: () => Promise.reject(new Error('database is down')),
      },
    };
    const worker = startWebhookWorker(broken, { pollMs: 20, maxBackoffMs: 80 });
    await sleep(300);
    worker.wake();
    await worker.stop();
    const failures = t.logs.filter((l) => l.includes('webhook worker pass failed'));
    expect(failures.length).toBeGreaterThanOrEqual(2);
  });

  test('the secret never reaches the logs', () => {
    expect(t.logs.join('')).not.toMatch(/whsec_/);
  });

  async function eventRow(id: string) {
    const r = await t.ctx.db.query<{
      state: string;
      attempts: number;
      last_status: number | null;
      last_error: string | null;
      next_attempt_at: Date;
      locked_until: Date | null;
    }>(
      `select state, attempts, last_status, last_error, next_attempt_at, locked_until
         from webhook_events where id = $1`,
      [id],
    );
    expect(r.rows).toHaveLength(1);
    return r.rows[0]!;
  }

  async function attemptRows(eventId: string) {
    const r = await t.ctx.db.query<{
      attempt: number;
      url: string;
      status: number | null;
      error: string | null;
      duration_ms: number;
    }>(
      'select attempt, url, status, error, duration_ms from webhook_attempts where event_id = $1 order by attempt',
      [eventId],
    );
    return r.rows;
  }
});
