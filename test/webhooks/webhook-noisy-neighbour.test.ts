// No tenant degrades another's webhooks (docs/reference/webhooks-and-events.md#fair-delivery), through a real server process: customer
// A's receiver accepts connections and never answers, with 100 of A's events pending; customer
// B's events still arrive at once. The delay from B's job to its delivery is measured and
// printed (the figure is in bench/README.md); the assertion is a generous bound far under what
// a shared batch would cost (A's attempts each hang for the 10 s timeout, and before fair claims
// B's event waited behind all of A's). The metrics show the backlog and A's receiver backed off.
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bearer } from '../helpers/app.ts';
import { createTestCa, type Receiver, startReceiver, type TestCa } from '../helpers/https-receiver.ts';
import {
  adminHttp,
  createProcessMerchant,
  type ServerProcess,
  serverProcesses,
  TEST_ADMIN_TOKEN,
  waitUntil,
} from '../helpers/process.ts';
import { uniqueCode } from '../helpers/redeem.ts';

const processes = serverProcesses();
let ca: TestCa;
let server: ServerProcess;
let silent: Server;
const sockets = new Set<Socket>();
const receivers: Receiver[] = [];

beforeAll(async () => {
  ca = createTestCa();
  // A receiver that takes the connection and never says a word (not even the TLS handshake).
  silent = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  server = await processes.start(processes.dataDir(), {
    NODE_EXTRA_CA_CERTS: ca.caFile,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  });
});
afterAll(async () => {
  await server?.kill();
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => silent?.close(resolve));
  await Promise.all(receivers.map((r) => r.close()));
  ca?.remove();
});

async function call(path: string, key: string, body: unknown, idempotencyKey?: string) {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      ...bearer(key),
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const asyncRedeem = async (key: string) => {
  const res = await call(
    '/v1/redeem',
    key,
    { player_id: '5123456789', codes: [uniqueCode('OK')], async: true },
    randomUUID(),
  );
  expect(res.status, JSON.stringify(res.json)).toBe(202);
  return res.json.job_id as string;
};

async function jobStatus(key: string, jobId: string): Promise<string> {
  const res = await fetch(`${server.url}/v1/jobs/${jobId}`, { headers: bearer(key) });
  return ((await res.json()) as { status: string }).status;
}

async function metric(name: string): Promise<number | undefined> {
  const res = await fetch(`${server.adminUrl}/metrics`, {
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
  });
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

/** `n` async jobs of the customer ended, each with its event pending (waits for the events). */
async function backlog(m: { customerId: number; key: string }, n: number) {
  // Four keys, so that the burst limit (30 per key in 10 s) lets them through.
  const keys = [m.key];
  for (let i = 0; i < 3; i++) {
    const path = `/admin/v1/customers/${m.customerId}/keys`;
    keys.push((await adminHttp<{ key: string }>(server, 'POST', path, { mode: 'test' })).key);
  }
  for (let i = 0; i < n; i++) await asyncRedeem(keys[i % keys.length]!);
  await waitUntil(
    `${n} events`,
    async () => {
      const res = await fetch(`${server.url}/v1/events?limit=100&state=pending`, { headers: bearer(m.key) });
      return ((await res.json()) as { events: unknown[] }).events.length === n ? true : undefined;
    },
    60_000,
  );
}

/** `n` async jobs one after another; each delivery timed from the 202 and from the job seen ended. */
async function timeDeliveries(key: string, receiver: Receiver, n: number) {
  const fromAccepted: number[] = [];
  const fromEnded: number[] = [];
  for (let i = 0; i < n; i++) {
    const accepted = Date.now();
    const jobId = await asyncRedeem(key);
    const ended = await waitUntil(
      'job ended',
      async () => (['queued', 'running'].includes(await jobStatus(key, jobId)) ? undefined : Date.now()),
      20_000,
    );
    const [got] = (await receiver.waitFor(i + 1, { timeoutMs: 20_000 })).slice(i);
    expect(got!.answered).toBe(200);
    expect(got!.verdict).toBeNull();
    fromAccepted.push(got!.receivedAt - accepted);
    fromEnded.push(Math.max(0, got!.receivedAt - ended));
  }
  return { fromAccepted, fromEnded };
}

describe('one customer with a receiver that never answers', () => {
  test('another customer is delivered at once; the backlog and the backed-off receiver show in the metrics', {
    timeout: 180_000,
  }, async () => {
    const plan = { daily_limit: 1000, per_request_usd: '0.001' };
    const a = await createProcessMerchant(server, plan);
    const b = await createProcessMerchant(server, plan);
    const port = (silent.address() as { port: number }).port;
    expect((await call('/v1/webhook', a.key, { url: `https://127.0.0.1:${port}/never` })).status).toBe(200);
    const receiver = await startReceiver(ca);
    receivers.push(receiver);
    const reg = await call('/v1/webhook', b.key, { url: receiver.url });
    expect(reg.status).toBe(200);
    receiver.secret = reg.json.secret as string;

    await backlog(a, 100);
    // A's first attempts hang (at most 4 at once, the customer's limit).
    const sending = await metric('redeem_gateway_webhook_events_pending{state="sending"}');
    expect(sending).toBeGreaterThanOrEqual(1);
    expect(sending).toBeLessThanOrEqual(4);

    const { fromAccepted, fromEnded } = await timeDeliveries(b.key, receiver, 5);
    console.log(
      `noisy neighbour: B delivered ${fromAccepted.join(', ')} ms after its 202 ` +
        `(${fromEnded.join(', ')} ms after the job was seen ended); A: 100 events behind a silent receiver`,
    );
    // Generous: under the 10 s one of A's attempts holds a slot (the figure itself is ~0.1 s).
    for (const ms of fromAccepted) expect(ms).toBeLessThan(8_000);

    // A's first attempts time out (10 s): its receiver is then backed off to one attempt at a
    // time, and its events stay pending, their retries not used up.
    await waitUntil(
      'A backed off',
      async () => ((await metric('redeem_gateway_webhook_receivers_backed_off')) === 1 ? true : undefined),
      40_000,
    );
    // The attempts that started before it was backed off end with their timeout; then one at a time.
    await waitUntil(
      'one attempt of A at a time',
      async () =>
        (await metric('redeem_gateway_webhook_events_pending{state="sending"}')) === 1 ? true : undefined,
      40_000,
    );
    const pending =
      (await metric('redeem_gateway_webhook_events_pending{state="due"}'))! +
      (await metric('redeem_gateway_webhook_events_pending{state="sending"}'))! +
      (await metric('redeem_gateway_webhook_events_pending{state="retry_wait"}'))!;
    expect(pending).toBe(100);
    expect(await metric('redeem_gateway_webhook_oldest_pending_age_seconds')).toBeGreaterThan(0);
    const events = await fetch(`${server.url}/v1/events?limit=100&state=failed`, { headers: bearer(a.key) });
    expect(((await events.json()) as { events: unknown[] }).events).toEqual([]);
  });
});
