// A webhook event written by a process whose webhook worker is busy is delivered by another
// process's worker, woken by PostgreSQL's NOTIFY (src/db/functions/wake.sql, src/db/listener.ts),
// with every worker's poll set to a minute.
//
// Who sends what is forced, not hoped for, and then checked. Each process resolves the receiver's
// host name through its own DNS server, to its own loopback address (a → 127.0.0.2,
// b → 127.0.0.3), so the receiver knows which process sent each request. A receiver that holds a
// request open keeps the sending worker busy: each process sends one attempt at a time
// (WEBHOOK_CONCURRENCY=1), so while its one send is open it claims nothing more.
//   1. b alone: job 0 through b ends in b, whose webhook worker sends event 0 and is held there;
//      then a slow job through b takes b's only job slot.
//   2. a starts: job 1 through a can only run in a (b's slot is taken) and event 1 can only be
//      sent by a (b's webhook worker is held): a's webhook worker is held in turn.
//   3. Event 0 is let go; b's webhook worker records it, looks once more and sleeps (a minute).
//   4. Job 2 through a runs in a (b's slot is still taken) and a writes event 2 while its own
//      webhook worker is held: only b can send it, and b, whose own job has not ended and whose
//      poll is a minute away, only looks because PostgreSQL told it.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { onPostgres } from '../helpers/db.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { createTestCa, TEST_HOST_NAME, type TestCa } from '../helpers/https-receiver.ts';
import { createProcessMerchant, serverProcesses, submitAsyncRedeem, waitUntil } from '../helpers/process.ts';

const processes = serverProcesses();
const ADDRESS = { a: '127.0.0.2', b: '127.0.0.3' } as const;
const POLL_MS = 60_000;

interface Delivery {
  jobId: string;
  /** The receiver's address the request came to: which process sent it. */
  from: 'a' | 'b' | 'unknown';
  release: () => void;
}

let sql: pg.Client;
let ca: TestCa;
const receivers: Server[] = [];
const dnsServers: TestDnsServer[] = [];
const deliveries: Delivery[] = [];
let holdNext = false;

function onRequest(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { job_id: string } };
    const local = req.socket.localAddress;
    const from = local === ADDRESS.a ? 'a' : local === ADDRESS.b ? 'b' : 'unknown';
    const answer = () => {
      if (!res.writableEnded) res.writeHead(200).end('ok');
    };
    deliveries.push({ jobId: body.data.job_id, from, release: answer });
    if (!holdNext) answer();
  });
}

async function listen(server: Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

let port = 0;
beforeAll(async () => {
  if (!onPostgres) return;
  sql = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await sql.connect();
  ca = createTestCa();
  // One receiver on two loopback addresses, same port (the registered URL names one port).
  for (let tries = 0; ; tries++) {
    const first = createServer({ key: ca.key, cert: ca.cert }, onRequest);
    const second = createServer({ key: ca.key, cert: ca.cert }, onRequest);
    port = await listen(first, ADDRESS.a, 0);
    try {
      await listen(second, ADDRESS.b, port);
      receivers.push(first, second);
      break;
    } catch (err) {
      first.close();
      if (tries > 5) throw err;
    }
  }
  for (const address of [ADDRESS.a, ADDRESS.b])
    dnsServers.push(await startDnsServer({ records: { [TEST_HOST_NAME]: [address] } }));
});

afterAll(async () => {
  for (const d of deliveries) d.release();
  for (const r of receivers) {
    r.closeAllConnections();
    r.close();
  }
  for (const d of dnsServers) await d.close();
  ca?.remove();
  await sql?.end();
});

async function jobStatus(id: string): Promise<{ status: string; started: boolean }> {
  const r = await sql.query<{ status: string; started: boolean }>(
    'select status, started_at is not null as started from jobs where id = $1',
    [id],
  );
  return r.rows[0]!;
}

async function eventState(jobId: string): Promise<string | undefined> {
  const r = await sql.query<{ state: string }>('select state from webhook_events where job_id = $1', [jobId]);
  return r.rows[0]?.state;
}

const deliveryOf = (jobId: string) => deliveries.find((d) => d.jobId === jobId);

test.skipIf(!onPostgres)(
  "a webhook event written by a process whose webhook worker is busy is sent by another process's worker, woken by NOTIFY",
  { timeout: 120_000 },
  async () => {
    const env = (dns: TestDnsServer) => ({
      JOB_CONCURRENCY: '1',
      WEBHOOK_CONCURRENCY: '1',
      WORKER_POLL_MS: String(POLL_MS),
      SANDBOX_SLOW_MS: '30000',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_DNS_SERVERS: dns.address,
      // A failed attempt is not retried within the test.
      WEBHOOK_RETRY_DELAYS: '3600',
      NODE_EXTRA_CA_CERTS: ca.caFile,
    });
    const tag = Date.now().toString(36).toUpperCase();

    // 1. b alone: its webhook worker held by event 0, its only job slot taken by a slow job.
    const b = await processes.start(processes.dataDir(), env(dnsServers[1]!));
    const m = await createProcessMerchant(b);
    const hook = await fetch(`${b.url}/v1/webhook`, {
      method: 'POST',
      headers: { authorization: `Bearer ${m.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `https://${TEST_HOST_NAME}:${port}/hook` }),
    });
    expect(hook.status).toBe(200);
    holdNext = true;
    const job0 = await submitAsyncRedeem(b, m.key, `WAKE${tag}A`);
    const event0 = await waitUntil('event 0 at the receiver', () => deliveryOf(job0));
    expect(event0.from).toBe('b');
    const slow = await submitAsyncRedeem(b, m.key, `SLOW${tag}B`);
    await waitUntil('the slow job to start in b', async () =>
      (await jobStatus(slow)).started ? true : undefined,
    );

    // 2. a: job 1 runs there and a's webhook worker is held by event 1.
    const a = await processes.start(processes.dataDir(), env(dnsServers[0]!));
    const job1 = await submitAsyncRedeem(a, m.key, `WAKE${tag}C`);
    const event1 = await waitUntil('event 1 at the receiver', () => deliveryOf(job1));
    expect(event1.from).toBe('a');
    // Both sends still open: the other process could not have sent event 1.
    expect(await eventState(job0)).toBe('pending');

    // 3. b's webhook worker is let go; it records event 0, looks once more (its slot is free
    //    again) and goes back to sleep.
    holdNext = false;
    event0.release();
    await waitUntil('event 0 delivered', async () =>
      (await eventState(job0)) === 'delivered' ? true : undefined,
    );

    // 4. Job 2 through a runs in a (b's slot is still taken); a's webhook worker is still held.
    const job2 = await submitAsyncRedeem(a, m.key, `WAKE${tag}D`);
    // Within 30 s (until's limit): b's next poll was a minute after its pass for event 0 ended.
    const event2 = await waitUntil('event 2 at the receiver', () => deliveryOf(job2));
    expect(event2.from).toBe('b');
    // a's send of event 1 is still open, and b's slow job still running: nothing else woke b.
    expect(await eventState(job1)).toBe('pending');
    expect((await jobStatus(slow)).status).toBe('running');
    expect(await jobStatus(job2)).toEqual({ status: 'completed', started: true });
    await waitUntil('event 2 delivered', async () =>
      (await eventState(job2)) === 'delivered' ? true : undefined,
    );

    event1.release();
    await waitUntil('event 1 delivered', async () =>
      (await eventState(job1)) === 'delivered' ? true : undefined,
    );
    expect(deliveries.map((d) => [d.jobId, d.from])).toEqual([
      [job0, 'b'],
      [job1, 'a'],
      [job2, 'b'],
    ]);
  },
);
