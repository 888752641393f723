// docs/reference/running.md#draining, draining for load balancers: from the moment a stop begins GET /v1/health
// answers 503 unavailable with "status": "draining", while every other request is still served
// normally for DRAIN_DELAY_MS; then the stop goes on as in 12.4 and the process exits 0.
import { expect, test } from 'vitest';
import { createProcessMerchant, serverProcesses, waitUntil } from '../helpers/process.ts';
import { uniqueCode } from '../helpers/redeem.ts';

const servers = serverProcesses();

test('SIGTERM with DRAIN_DELAY_MS: health says draining at once, the rest is served, then exit 0', async () => {
  const server = await servers.start(servers.dataDir(), {
    // Long enough for the requests below on a loaded machine (4 s ran out once in CI).
    DRAIN_DELAY_MS: '8000',
    SHUTDOWN_GRACE_MS: '10000',
  });
  const { key } = await createProcessMerchant(server);
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const exited = new Promise<number | null>((r) => server.child.once('exit', (code) => r(code)));

  server.child.kill('SIGTERM');
  const health = await waitUntil('health to say draining', async () => {
    const res = await fetch(`${server.url}/v1/health`);
    return res.status === 200 ? undefined : res;
  });
  expect(health.status).toBe(503);
  expect(await health.json()).toEqual({
    ok: false,
    error_code: 'unavailable',
    message: 'the server is shutting down; retry shortly',
    request_id: health.headers.get('x-request-id'),
    status: 'draining',
  });
  expect(health.headers.get('retry-after')).toBe('1');
  expect(health.headers.get('cache-control')).toBe('no-store');
  expect(health.headers.get('svc-version')).toBe('1.0.0');

  // Still served normally meanwhile: a read, and a redeem that bills.
  const me = await fetch(`${server.url}/v1/me`, { headers: auth });
  expect(me.status).toBe(200);
  const redeem = await fetch(`${server.url}/v1/redeem`, {
    method: 'POST',
    headers: { ...auth, 'idempotency-key': 'drain-1' },
    body: JSON.stringify({ player_id: '5123456789', codes: [uniqueCode('OK')] }),
  });
  expect(redeem.status).toBe(200);
  expect(await redeem.json()).toMatchObject({ ok: true, summary: { activated: 1 }, billed_requests: 1 });
  // HEAD, as some load balancers check, says the same.
  expect((await fetch(`${server.url}/v1/health`, { method: 'HEAD' })).status).toBe(503);

  expect(await exited).toBe(0);
  expect(server.output()).not.toMatch(/"level":(50|60)/);
}, 60_000);
