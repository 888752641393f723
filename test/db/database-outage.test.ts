// The database away for a while (docs/reference/running.md#database-loss), on PostgreSQL only: the server process reaches
// this file's database through a TCP proxy in the test, which can swallow every connection (a
// network cut: nothing refused, nothing answered) and let them through again. While it is cut,
// requests answer 503 unavailable with Retry-After within DATABASE_TIMEOUT_MS, /v1/health says
// 503, and a sync redeem whose code the activator already answered is answered 503 while its
// outcome waits; once the database is back the outcome is recorded (not quarantined), a retry
// with the same key gets the result, and the workers run jobs again, with no restart.
import { createServer, Socket as NetSocket, type Server, type Socket } from 'node:net';
import { afterAll, expect, test } from 'vitest';
import { onPostgres } from '../helpers/db.ts';
import { adminHttp, createProcessMerchant, freePort, serverProcesses } from '../helpers/process.ts';
import { uniqueCode } from '../helpers/redeem.ts';

const DATABASE_TIMEOUT_MS = 2000;
const SLOW_MS = 3000;
const PLAYER = '5123456789';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const servers = serverProcesses();

/** A TCP proxy to PostgreSQL that can be cut (connections swallowed) and restored. */
function databaseProxy(target: { host: string; port: number }) {
  let cut = false;
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  };
  const server: Server = createServer((client) => {
    track(client);
    // Cut: accepted and never answered, like a network that drops packets.
    if (cut) return;
    const upstream = new NetSocket();
    track(upstream);
    upstream.connect(target.port, target.host);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  return {
    async listen(): Promise<number> {
      const port = await freePort();
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
      return port;
    },
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      cut = false;
      // Swallowed connections are dropped: their clients have long given up.
      for (const s of sockets) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

let proxy: ReturnType<typeof databaseProxy> | undefined;
afterAll(async () => {
  await proxy?.close();
});

test.skipIf(!onPostgres)(
  'a network cut to the database: 503s within the timeout, outcomes kept, everything resumes by itself',
  async () => {
    const real = new URL(process.env.DATABASE_URL!);
    proxy = databaseProxy({ host: real.hostname, port: Number(real.port || 5432) });
    const proxied = new URL(real);
    proxied.port = String(await proxy.listen());
    const server = await servers.start(servers.dataDir(), {
      DATABASE_URL: proxied.toString(),
      DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS),
      SANDBOX_SLOW_MS: String(SLOW_MS),
    });
    const { key } = await createProcessMerchant(server, { daily_limit: null, per_request_usd: '0.01' });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const timed = async (path: string, init: RequestInit = {}) => {
      const started = Date.now();
      const res = await fetch(`${server.url}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
      return { res, body: (await res.json()) as Record<string, unknown>, ms: Date.now() - started };
    };

    // A sync redeem whose SLOW code the sandbox consumes at once and answers 3 s later: the
    // database is cut in between, so the outcome is known and cannot be recorded yet.
    const slow = uniqueCode('SLOW');
    const redeemBody = JSON.stringify({ player_id: PLAYER, codes: [slow] });
    const pending = timed('/v1/redeem', {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': 'outage-1' },
      body: redeemBody,
    });
    await sleep(SLOW_MS / 2);
    proxy.cut();

    const answered = await pending;
    expect(answered.res.status).toBe(503);
    expect(answered.body).toMatchObject({ ok: false, error_code: 'unavailable' });
    expect(answered.res.headers.get('retry-after')).toBe('2');
    // The activator answered after SLOW_MS; the request gave up on the database within the timeout.
    expect(answered.ms).toBeLessThan(SLOW_MS + DATABASE_TIMEOUT_MS + 1500);

    // While the database is away: every request that needs it is a prompt 503 with the headers.
    const health = await timed('/v1/health');
    expect(health.res.status).toBe(503);
    expect(health.body).toMatchObject({ ok: false, error_code: 'unavailable' });
    const me = await timed('/v1/me', { headers });
    expect(me.res.status).toBe(503);
    expect(me.body).toEqual({
      ok: false,
      error_code: 'unavailable',
      message: 'the service cannot reach its database; retry shortly',
      request_id: me.res.headers.get('x-request-id'),
    });
    expect(me.res.headers.get('retry-after')).toBe('2');
    expect(me.res.headers.get('svc-version')).toBe('1.0.0');
    expect(me.ms).toBeLessThan(DATABASE_TIMEOUT_MS + 1500);
    const asyncWhileAway = await timed('/v1/redeem', {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': 'outage-2' },
      body: JSON.stringify({ player_id: PLAYER, codes: [uniqueCode('OK')], async: true }),
    });
    expect(asyncWhileAway.res.status).toBe(503);
    expect(asyncWhileAway.ms).toBeLessThan(DATABASE_TIMEOUT_MS + 1500);

    // Back: health recovers by itself.
    proxy.restore();
    for (let i = 0; ; i++) {
      const h = await timed('/v1/health');
      if (h.res.status === 200) break;
      expect(i).toBeLessThan(50);
      await sleep(200);
    }

    // The same key: the recorded outcome is reused (activated, billed once), nothing resent.
    let retry: Awaited<ReturnType<typeof timed>>;
    for (let i = 0; ; i++) {
      retry = await timed('/v1/redeem', {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': 'outage-1' },
        body: redeemBody,
      });
      if (retry.res.status !== 409 && retry.res.status !== 503) break;
      expect(i).toBeLessThan(100);
      await sleep(500);
    }
    expect(retry.res.status).toBe(200);
    expect(retry.body).toMatchObject({
      ok: true,
      codes: [{ code: slow, status: 'activated', disposition: 'consumed', billed: true }],
      billed_requests: 1,
    });
    // Nothing was left to the quarantine: the answer was known.
    const quarantine = await adminHttp<{ codes: unknown[] }>(server, 'GET', '/admin/v1/quarantine');
    expect(quarantine.codes).toEqual([]);

    // The workers resumed: a new async job runs to the end.
    const queued = await timed('/v1/redeem', {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': 'outage-3' },
      body: JSON.stringify({ player_id: PLAYER, codes: [uniqueCode('OK')], async: true }),
    });
    expect(queued.res.status).toBe(202);
    for (let i = 0; ; i++) {
      const job = await timed(`/v1/jobs/${queued.body.job_id}`, { headers });
      if (job.body.status === 'completed') break;
      expect(i).toBeLessThan(100);
      await sleep(100);
    }
    expect(server.child.exitCode).toBeNull();
  },
  120_000,
);
