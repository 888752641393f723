// GET /metrics (docs/reference/running.md#metrics) on a real server process: live keys through the http activator
// against the upstream simulator, test keys through the sandbox, an async job whose webhook goes
// to a real HTTPS receiver. Each test scrapes before and after real traffic, reads the text with
// a strict exposition-format reader and checks that the series moved by exactly what was done.
// Then, in process: the admin token, registries that do not leak between apps, and an outcome
// whose transaction rolled back not being counted.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadJob, loadJobCodes } from '../../src/core/jobs/jobs.ts';
import { recordOutcome } from '../../src/core/redeem/outcome.ts';
import { openPglite } from '../../src/db/database.ts';
import { createUpstreamSim, type UpstreamSim } from '../../src/dev/upstream-sim.ts';
import { createMetrics } from '../../src/metrics/registry.ts';
import { ADMIN_TOKEN, bearer, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { onPostgres } from '../helpers/db.ts';
import { createTestCa, type Receiver, startReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { adminHttp, type ServerProcess, serverProcesses, TEST_ADMIN_TOKEN } from '../helpers/process.ts';
import { parsePrometheusText, type Scrape } from '../helpers/prometheus-text.ts';
import { redeem as injectRedeem, uniqueCode } from '../helpers/redeem.ts';

const SIM_KEY = 'metrics-sim-key-0123456789abcdef';
const PLAYER = '5123456789';
const M = 'redeem_gateway_';

const processes = serverProcesses();
let sim: UpstreamSim;
let ca: TestCa;
let receiver: Receiver;
let server: ServerProcess;
/** Every value that must never be a label value: customer ids, keys, codes, job ids, URLs. */
const secrets: string[] = [];
/** Requests this file sent to the public listener, by "METHOD route status". */
const publicSent = new Map<string, number>();

beforeAll(async () => {
  sim = createUpstreamSim({ key: SIM_KEY });
  ca = createTestCa();
  receiver = await startReceiver(ca);
  server = await processes.start(processes.dataDir(), {
    ACTIVATOR: 'http',
    ACTIVATOR_URL: await sim.listen(),
    ACTIVATOR_KEY: SIM_KEY,
    NODE_EXTRA_CA_CERTS: ca.caFile,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_DELAYS: '1',
    // Long enough to scrape while the job runs; the test waits for it anyway.
    SANDBOX_SLOW_MS: '4000',
  });
}, 90_000);
afterAll(async () => {
  await server?.kill();
  await sim?.close();
  await receiver?.close();
  ca?.remove();
});

async function scrape(token = TEST_ADMIN_TOKEN): Promise<Scrape> {
  const res = await fetch(`${server.adminUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  expect(res.headers.get('cache-control')).toBe('no-store');
  return parsePrometheusText(text);
}

/** A public call, remembered by the route pattern it should be counted under. */
async function call(method: string, path: string, route: string, key: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(method === 'POST' && route === '/v1/redeem' ? { 'idempotency-key': randomUUID() } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as Record<string, unknown>;
  const k = `${method} ${route} ${res.status}`;
  publicSent.set(k, (publicSent.get(k) ?? 0) + 1);
  return { status: res.status, json };
}

interface CodeResult {
  code: string;
  status: string;
  disposition: string;
  billed: boolean;
}

/** A customer with a plan of 1 included request a day, then $0.25 a request; both wallets funded. */
async function newMerchant() {
  const { customer_id: id } = await adminHttp<{ customer_id: number }>(
    server,
    'POST',
    '/admin/v1/customers',
    {
      name: 'metrics merchant',
    },
  );
  await adminHttp(server, 'PUT', `/admin/v1/customers/${id}/plan`, {
    label: 'metrics',
    daily_limit: 1,
    per_request_usd: '0.25',
    overage: true,
    active: true,
  });
  for (const mode of ['live', 'test']) {
    await adminHttp(server, 'POST', `/admin/v1/customers/${id}/wallet/topup`, { mode, usd: 10 });
  }
  const issue = async (mode: string) =>
    (await adminHttp<{ key: string }>(server, 'POST', `/admin/v1/customers/${id}/keys`, { mode })).key;
  const m = { id, testKey: await issue('test'), liveKey: await issue('live') };
  secrets.push(String(id), m.testKey, m.liveKey);
  return m;
}

/** Micro-dollars and entries charged to a wallet, from the admin ledger. */
async function charges(customerId: number, mode: string) {
  const { entries } = await adminHttp<{ entries: { kind: string; amount_usd: number }[] }>(
    server,
    'GET',
    `/admin/v1/customers/${customerId}/ledger?mode=${mode}`,
  );
  const c = entries.filter((e) => e.kind === 'charge');
  return { count: c.length, micros: c.reduce((a, e) => a - Math.round(e.amount_usd * 1_000_000), 0) };
}

const delta = (a: Scrape, b: Scrape, name: string, labels: Record<string, string> = {}) =>
  b.sum(name, labels) - a.sum(name, labels);

describe('GET /metrics on a server process', () => {
  let m: Awaited<ReturnType<typeof newMerchant>>;
  let quarantined: { jobId: string; position: number };

  test('without the admin token: 401 with the error body, and no series', async () => {
    const tries: Record<string, string>[] = [{}, { authorization: 'Bearer wrong-token-0123456789abcdef' }];
    for (const headers of tries) {
      const res = await fetch(`${server.adminUrl}/metrics`, { headers });
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body).toEqual({
        ok: false,
        error_code: 'unauthorized',
        message: 'missing or wrong admin token',
        request_id: res.headers.get('x-request-id'),
      });
    }
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(404); // not on the public listener
  });

  test('series move by the traffic between two scrapes', async () => {
    m = await newMerchant();
    const webhook = await call('POST', '/v1/webhook', '/v1/webhook', m.testKey, { url: receiver.url });
    expect(webhook.status).toBe(200);
    receiver.secret = webhook.json.secret as string;
    // The first delivery attempt fails, the retry (1 s later) is delivered.
    receiver.script = [500];
    const before = await scrape();
    const chargesBefore = await charges(m.id, 'test');

    // Test key, sandbox: every outcome in one sync redeem, then a bad player.
    const codes = ['OK', 'USED', 'INVALID', 'FAIL', 'TIMEOUT'].map((k) => uniqueCode(k));
    const badPlayerCode = uniqueCode('OK');
    const sync = await call('POST', '/v1/redeem', '/v1/redeem', m.testKey, { player_id: PLAYER, codes });
    expect(sync.status).toBe(200);
    const badPlayer = await call('POST', '/v1/redeem', '/v1/redeem', m.testKey, {
      player_id: '0001234567',
      codes: [badPlayerCode],
    });
    expect(badPlayer.status).toBe(422); // no code activated
    // Live key, http activator against the simulator.
    const liveCode = `LIVE-${randomUUID().slice(0, 8).toUpperCase()}-660`;
    const live = await call('POST', '/v1/redeem', '/v1/redeem', m.liveKey, {
      player_id: PLAYER,
      codes: [liveCode],
    });
    expect(live.status).toBe(200);
    // An async job with a slow code: scraped while it runs.
    const slowCode = uniqueCode('SLOW');
    const accepted = await call('POST', '/v1/redeem', '/v1/redeem', m.testKey, {
      player_id: PLAYER,
      codes: [slowCode],
      async: true,
    });
    expect(accepted.status).toBe(202);
    const jobId = accepted.json.job_id as string;
    let job: Record<string, unknown> = {};
    const poll = async () => {
      job = (await call('GET', `/v1/jobs/${jobId}`, '/v1/jobs/:id', m.testKey)).json;
      return job.status as string;
    };
    while ((await poll()) === 'queued') await new Promise((r) => setTimeout(r, 20));
    expect(job.status).toBe('running');
    const during = await scrape();
    expect(during.value(`${M}jobs`, { status: 'running', mode: 'test' })).toBe(1);
    expect(during.value(`${M}jobs`, { status: 'queued', mode: 'test' })).toBe(0);
    while ((await poll()) === 'running') await new Promise((r) => setTimeout(r, 100));
    expect(job.status).toBe('completed');
    await receiver.waitFor(2);
    // A URL no route serves, with a query string that must not reach a label.
    const missing = await call('GET', '/v1/no-such-thing/job_abc?token=s3cr3t-query', 'unmatched', m.testKey);
    expect(missing.status).toBe(404);
    // The webhook's second attempt is recorded just after the receiver answered it.
    let after = await scrape();
    for (
      let i = 0;
      i < 100 && delta(before, after, `${M}webhook_deliveries_total`, { result: 'delivered' }) < 1;
      i++
    ) {
      await new Promise((r) => setTimeout(r, 50));
      after = await scrape();
    }

    const results = [
      ...(sync.json.codes as CodeResult[]).map((c) => ({ ...c, mode: 'test' })),
      ...(badPlayer.json.codes as CodeResult[]).map((c) => ({ ...c, mode: 'test' })),
      ...(live.json.codes as CodeResult[]).map((c) => ({ ...c, mode: 'live' })),
      ...((job.result as { codes: CodeResult[] }).codes ?? []).map((c) => ({ ...c, mode: 'test' })),
    ];
    secrets.push(...codes, badPlayerCode, liveCode, slowCode, jobId, 's3cr3t', 'no-such-thing');
    expect(results.map((r) => r.status)).toEqual([
      'activated',
      'code_used',
      'invalid_code',
      'failed',
      'failed',
      'bad_player',
      'activated',
      'activated',
    ]);
    expect(results[4]!.disposition).toBe('quarantined');
    const q = await adminHttp<{ codes: { job_id: string; position: number }[] }>(
      server,
      'GET',
      `/admin/v1/quarantine?customer_id=${m.id}&mode=test`,
    );
    expect(q.codes).toHaveLength(1);
    quarantined = { jobId: q.codes[0]!.job_id, position: q.codes[0]!.position };
    secrets.push(quarantined.jobId);

    // Code outcomes by mode, status and disposition, and billed / refunded by mode.
    const outcomes = new Map<string, number>();
    for (const r of results) {
      const k = JSON.stringify({ mode: r.mode, status: r.status, disposition: r.disposition });
      outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    }
    for (const [k, n] of outcomes)
      expect(delta(before, after, `${M}code_outcomes_total`, JSON.parse(k)), k).toBe(n);
    expect(delta(before, after, `${M}code_outcomes_total`)).toBe(results.length);
    for (const mode of ['test', 'live']) {
      const ofMode = results.filter((r) => r.mode === mode);
      expect(delta(before, after, `${M}billed_requests_total`, { mode })).toBe(
        ofMode.filter((r) => r.billed).length,
      );
      expect(delta(before, after, `${M}refunded_requests_total`, { mode })).toBe(
        ofMode.filter((r) => !r.billed).length,
      );
    }
    // Wallet captures: the first billed request of the day is included, the others paid $0.25.
    const charged = await charges(m.id, 'test');
    const walletPaid = results.filter((r) => r.mode === 'test' && r.billed).length - 1;
    expect(walletPaid).toBe(3); // activated, code_used, bad_player (billed), slow; less the include
    expect(charged.count - chargesBefore.count).toBe(walletPaid);
    expect(delta(before, after, `${M}wallet_captures_total`, { mode: 'test' })).toBe(walletPaid);
    expect(delta(before, after, `${M}wallet_captured_microdollars_total`, { mode: 'test' })).toBe(
      charged.micros - chargesBefore.micros,
    );
    expect(charged.micros - chargesBefore.micros).toBe(walletPaid * 250_000);
    expect(delta(before, after, `${M}wallet_captures_total`, { mode: 'live' })).toBe(0);

    // Activator calls by activator and result, with one latency observation each.
    const sandboxResults = {
      activated: 2,
      code_used: 1,
      invalid_code: 1,
      failed: 1,
      unknown: 1,
      bad_player: 1,
    };
    for (const [result, n] of Object.entries(sandboxResults)) {
      expect(
        delta(before, after, `${M}activator_calls_total`, {
          activator: 'sandbox',
          operation: 'activate',
          result,
        }),
        result,
      ).toBe(n);
    }
    expect(
      delta(before, after, `${M}activator_calls_total`, {
        activator: 'http',
        operation: 'activate',
        result: 'activated',
      }),
    ).toBe(1);
    expect(delta(before, after, `${M}activator_calls_total`)).toBe(8);
    expect(delta(before, after, `${M}activator_call_duration_seconds_count`, { activator: 'sandbox' })).toBe(
      7,
    );
    expect(delta(before, after, `${M}activator_call_duration_seconds_count`, { activator: 'http' })).toBe(1);
    expect(after.value(`${M}activator_breaker_state`, { activator: 'http', state: 'closed' })).toBe(1);
    expect(after.value(`${M}activator_breaker_state`, { activator: 'http', state: 'open' })).toBe(0);
    expect(after.sum(`${M}activator_breaker_state`, { activator: 'sandbox' })).toBe(0); // no breaker

    // The job: waited in the queue once, and is no longer running.
    expect(delta(before, after, `${M}job_queue_wait_seconds_count`, { mode: 'test' })).toBe(1);
    expect(delta(before, after, `${M}job_queue_wait_seconds_count`, { mode: 'live' })).toBe(0);
    expect(after.value(`${M}jobs`, { status: 'running', mode: 'test' })).toBe(0);
    // Its webhook: one failed attempt, then delivered; the lag observed once.
    expect(delta(before, after, `${M}webhook_deliveries_total`, { mode: 'test', result: 'failed' })).toBe(1);
    expect(delta(before, after, `${M}webhook_deliveries_total`, { mode: 'test', result: 'delivered' })).toBe(
      1,
    );
    expect(delta(before, after, `${M}webhook_deliveries_total`)).toBe(2);
    expect(delta(before, after, `${M}webhook_delivery_lag_seconds_count`, { mode: 'test' })).toBe(1);
    expect(delta(before, after, `${M}webhook_delivery_lag_seconds_sum`, { mode: 'test' })).toBeGreaterThan(0);

    // Requests by listener, method, route pattern and status: exactly what this test sent.
    const sent = [...publicSent].filter(([k]) => k !== 'POST /v1/webhook 200');
    for (const [k, n] of sent) {
      const [method, route, status] = k.split(' ') as [string, string, string];
      const labels = { listener: 'public', method, route, status };
      expect(delta(before, after, `${M}http_requests_total`, labels), k).toBe(n);
      expect(delta(before, after, `${M}http_request_duration_seconds_count`, labels), k).toBe(n);
    }
    expect(delta(before, after, `${M}http_requests_total`, { listener: 'public' })).toBe(
      sent.reduce((a, [, n]) => a + n, 0),
    );
    // The scrapes before this one, counted on the admin listener under the route /metrics.
    expect(
      delta(before, after, `${M}http_requests_total`, {
        listener: 'admin',
        method: 'GET',
        route: '/metrics',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      delta(before, after, `${M}http_requests_total`, {
        listener: 'admin',
        method: 'GET',
        route: '/admin/v1/customers/:id/ledger',
        status: '200',
      }),
    ).toBe(1);

    // The pool: PostgreSQL reports its connections; PGlite its single one.
    if (onPostgres) {
      expect(after.value(`${M}db_pool_max`)).toBe(10);
      const open = after.sum(`${M}db_pool_connections`);
      expect(open).toBeGreaterThanOrEqual(1);
      expect(open).toBeLessThanOrEqual(10);
      expect(after.types.get(`${M}db_pool_waiting`)).toBe('gauge');
    } else {
      expect(after.value(`${M}db_pool_max`)).toBe(1);
    }
    // Node's process metrics come along.
    expect(after.value('process_resident_memory_bytes')).toBeGreaterThan(0);
  }, 60_000);

  test('a tripped breaker and a quarantined code settled as used', async () => {
    const before = await scrape();
    // Five 503s in a row open the http activator's breaker (its threshold).
    sim.setFaults([{ kind: 'error', status: 503, path: 'activate', stage: 'before', count: 5 }]);
    const codes = Array.from({ length: 5 }, () => `LIVE-${randomUUID().slice(0, 8).toUpperCase()}-60`);
    secrets.push(...codes);
    const res = await call('POST', '/v1/redeem', '/v1/redeem', m.liveKey, { player_id: PLAYER, codes });
    expect(res.status).toBe(422); // none activated
    expect((res.json.codes as CodeResult[]).map((c) => c.disposition)).toEqual(Array(5).fill('quarantined'));
    const settle = await adminHttp(
      server,
      'POST',
      `/admin/v1/jobs/${quarantined.jobId}/codes/${quarantined.position}/settle`,
      { outcome: 'used' },
    );
    expect(settle.settlement).toBe('used');
    const after = await scrape();

    expect(after.value(`${M}activator_breaker_state`, { activator: 'http', state: 'open' })).toBe(1);
    expect(after.value(`${M}activator_breaker_state`, { activator: 'http', state: 'closed' })).toBe(0);
    expect(after.value(`${M}activator_breaker_state`, { activator: 'http', state: 'half_open' })).toBe(0);
    expect(
      delta(before, after, `${M}activator_calls_total`, {
        activator: 'http',
        operation: 'activate',
        result: 'unknown',
      }),
    ).toBe(5);
    expect(
      delta(before, after, `${M}code_outcomes_total`, {
        mode: 'live',
        status: 'failed',
        disposition: 'quarantined',
      }),
    ).toBe(5);
    expect(delta(before, after, `${M}refunded_requests_total`, { mode: 'live' })).toBe(5);
    // The settlement bills one request from the test wallet (the day's include is used up).
    expect(
      delta(before, after, `${M}quarantine_settlements_total`, {
        mode: 'test',
        settlement: 'used',
        by: 'operator',
      }),
    ).toBe(1);
    expect(delta(before, after, `${M}billed_requests_total`, { mode: 'test' })).toBe(1);
    expect(delta(before, after, `${M}wallet_captured_microdollars_total`, { mode: 'test' })).toBe(250_000);
    expect(delta(before, after, `${M}billed_requests_total`, { mode: 'live' })).toBe(0);
  }, 60_000);

  test('label values are bounded: no customer id, key, code, job id, URL or query string', async () => {
    const s = await scrape();
    expect(s.samples.length).toBeGreaterThan(100);
    expect(secrets.length).toBeGreaterThanOrEqual(18);
    const names = new Set(s.samples.flatMap((x) => Object.keys(x.labels)));
    for (const n of names)
      expect(['customer', 'customer_id', 'code', 'job_id', 'url', 'key']).not.toContain(n);
    const closed: Record<string, RegExp> = {
      listener: /^(public|admin)$/,
      method: /^(GET|HEAD|POST|PUT|DELETE|PATCH|OPTIONS|OTHER)$/,
      // A pattern: literal segments or :params, nothing from a request's URL.
      route: /^(unmatched|\/|(\/([a-z0-9._-]+|:[a-zA-Z]+|\*))+)$/,
      // An HTTP status, a code's outcome, or a job's state.
      status: /^([1-5]\d\d|activated|code_used|invalid_code|bad_player|failed|queued|running)$/,
      mode: /^(live|test)$/,
      disposition: /^(consumed|deleted|kept|returned|quarantined)$/,
      result:
        /^(activated|code_used|invalid_code|bad_player|failed|unknown|error|redeemed|not_redeemed|delivered|dropped)$/,
      activator: /^(sandbox|http)$/,
      operation: /^(activate|status)$/,
      settlement: /^(used|unused)$/,
      by: /^(check|operator)$/,
    };
    for (const sample of s.samples) {
      for (const [label, value] of Object.entries(sample.labels)) {
        const rule = closed[label];
        if (rule) expect(value, `${sample.name} ${label}`).toMatch(rule);
        expect(value.length, `${sample.name} ${label}`).toBeLessThanOrEqual(64);
        for (const secret of secrets) {
          // A customer id is a small number: only a label holding exactly it would be one (bucket
          // bounds and Node's version numbers are numbers too, and say nothing of a customer).
          if (!/^\d+$/.test(secret)) expect(value, `${sample.name} ${label}`).not.toContain(secret);
          else if (sample.name.startsWith(M) && label !== 'le')
            expect(value, `${sample.name} ${label}`).not.toBe(secret);
        }
      }
    }
    const routes = new Set(s.samples.flatMap((x) => (x.labels.route ? [x.labels.route] : [])));
    expect(routes).toContain('/v1/jobs/:id');
    expect(routes).toContain('unmatched');
  });
});

/** GET /metrics of an in-process app. */
async function scrapeApp(app: TestApp) {
  const res = await app.admin.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(res.statusCode).toBe(200);
  return parsePrometheusText(res.body);
}

describe('in process', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ jobWorker: false });
  });
  afterAll(() => t?.close());

  test('a 401 for a missing, wrong or malformed token, like every admin route', async () => {
    for (const authorization of [undefined, 'Bearer nope', `bearer ${ADMIN_TOKEN}`, ADMIN_TOKEN]) {
      const res = await t.admin.inject({
        method: 'GET',
        url: '/metrics',
        headers: authorization ? { authorization } : {},
      });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({
        ok: false,
        error_code: 'unauthorized',
        message: 'missing or wrong admin token',
        request_id: res.headers['x-request-id'],
      });
      expect(res.body).not.toContain(M);
    }
  });

  test('each registry is its own: counts of one app never show in another', async () => {
    const other = createMetrics({ db: t.ctx.db, processMetrics: false });
    other.observeRequest('public', 'GET', '/v1/me', 200, 0.01);
    other.codeOutcome({
      mode: 'test',
      status: 'activated',
      disposition: 'consumed',
      billed: true,
      walletMicros: 7,
    });
    const before = await scrapeApp(t);
    const o = parsePrometheusText(await other.registry.metrics());
    expect(o.value(`${M}wallet_captured_microdollars_total`, { mode: 'test' })).toBe(7);
    expect(before.value(`${M}wallet_captured_microdollars_total`, { mode: 'test' })).toBe(0);
    expect(before.sum(`${M}code_outcomes_total`)).toBe(0);
    expect(
      before.value(`${M}http_requests_total`, {
        listener: 'public',
        method: 'GET',
        route: '/v1/me',
        status: '200',
      }),
    ).toBe(0);
  });

  test('a database that does not answer leaves out the jobs gauge; the scrape still answers', async () => {
    const dead = await openPglite(undefined);
    await dead.close();
    const metrics = createMetrics({ db: dead, processMetrics: false });
    metrics.observeRequest('admin', 'GET', '/metrics', 200, 0.001);
    const s = parsePrometheusText(await metrics.registry.metrics());
    expect(s.types.get(`${M}jobs`)).toBe('gauge');
    expect(s.samples.filter((x) => x.name === `${M}jobs`)).toEqual([]);
    expect(s.value(`${M}db_pool_max`)).toBe(1);
    expect(
      s.value(`${M}http_requests_total`, {
        listener: 'admin',
        method: 'GET',
        route: '/metrics',
        status: '200',
      }),
    ).toBe(1);
  });

  test('an outcome whose transaction rolled back is not counted', async () => {
    const merchant = await createMerchant(t, { topup: { test: 1 } });
    const res = await injectRedeem(t, merchant.key, { player_id: PLAYER, codes: [uniqueCode('OK')] });
    expect(res.statusCode).toBe(200);
    const jobs = await t.ctx.db.query<{ id: string }>('select id from jobs where customer_id = $1', [
      merchant.customerId,
    ]);
    const jobId = jobs.rows[0]!.id;
    const before = await scrapeApp(t);
    expect(
      before.value(`${M}code_outcomes_total`, { mode: 'test', status: 'activated', disposition: 'consumed' }),
    ).toBe(1);
    // The code looks out with the upstream again, but its hold is spent: capturing it throws,
    // so the whole transaction rolls back.
    await t.ctx.db.query(`update job_codes set state = 'sending' where job_id = $1`, [jobId]);
    const job = (await loadJob(t.ctx.db, jobId))!;
    const [row] = await loadJobCodes(t.ctx.db, jobId);
    await expect(recordOutcome(t.ctx, job, row!, { status: 'activated' }, 'sending')).rejects.toThrow(
      /no open hold/,
    );
    const after = await scrapeApp(t);
    expect((await loadJobCodes(t.ctx.db, jobId))[0]!.state).toBe('sending');
    expect(after.sum(`${M}code_outcomes_total`)).toBe(before.sum(`${M}code_outcomes_total`));
    expect(after.sum(`${M}billed_requests_total`)).toBe(before.sum(`${M}billed_requests_total`));
    // An outcome recorded already (another process won the race) is not counted twice either.
    await t.ctx.db.query(`update job_codes set state = 'done' where job_id = $1`, [jobId]);
    await recordOutcome(t.ctx, job, row!, { status: 'activated' }, 'sending');
    const again = await scrapeApp(t);
    expect(again.sum(`${M}code_outcomes_total`)).toBe(before.sum(`${M}code_outcomes_total`));
  });
});

describe('the exposition-format reader used above', () => {
  const ok = [
    '# HELP a_total A counter.',
    '# TYPE a_total counter',
    'a_total{x="1",y="q\\"uote\\\\"} 3',
    '# TYPE h histogram',
    'h_bucket{le="0.5"} 1',
    'h_bucket{le="+Inf"} 2',
    'h_sum 0.7',
    'h_count 2',
    '',
  ].join('\n');

  test('reads valid text', () => {
    const s = parsePrometheusText(ok);
    expect(s.value('a_total', { x: '1', y: 'q"uote\\' })).toBe(3);
    expect(s.value('h_count')).toBe(2);
  });

  test.each([
    ['no TYPE before a sample', 'b 1\n'],
    ['a duplicate series', '# TYPE b gauge\nb 1\nb 2\n'],
    ['a bad value', '# TYPE b gauge\nb one\n'],
    ['a bad label name', '# TYPE b gauge\nb{1x="a"} 1\n'],
    ['an unquoted label value', '# TYPE b gauge\nb{x=a} 1\n'],
    ['a bad escape', '# TYPE b gauge\nb{x="\\t"} 1\n'],
    ['a family split in two', '# TYPE b gauge\n# TYPE c gauge\nb{x="1"} 1\nc 1\nb{x="2"} 1\n'],
    ['a TYPE given twice', '# TYPE b gauge\n# TYPE b counter\n'],
    [
      'decreasing buckets',
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
    ],
    [
      'a +Inf bucket that is not the count',
      '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n',
    ],
    ['no final newline', '# TYPE b gauge\nb 1'],
  ])('refuses %s', (_what, text) => {
    expect(() => parsePrometheusText(text)).toThrow();
  });
});

describe("the database seam's counts", () => {
  let app: TestApp;
  beforeAll(async () => {
    // The counts are the requests' and the scrapes' alone: no request-log flush or read-budget
    // settle (each once a second by default; on a Citus coordinator a settle fell inside the
    // scrape every time) is sent meanwhile.
    app = await createTestApp({
      jobWorker: false,
      env: { REQUEST_LOG_FLUSH_MS: '3600000', READ_BUDGET_SETTLE_MS: '3600000' },
    });
  });
  afterAll(() => app.close());
  const scrapeOf = () => scrapeApp(app);

  test("are the process's own (Database.counters), read at scrape time", async () => {
    const m = await createMerchant(app, { topup: { test: 1 } });
    const me = () => app.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(m.key) });
    expect((await me()).statusCode).toBe(200);
    const before = await scrapeOf();
    // The scrape's own queries (the jobs gauge, the rotation gauges of docs/reference/operators-and-audit.md#encryption-key-rotation, the webhook
    // backlog gauges) are counted before or after the read, not more.
    for (const [name, field] of [
      ['db_statements_total', 'statements'],
      ['db_round_trips_total', 'roundTrips'],
      ['db_commits_total', 'commits'],
    ] as const) {
      expect(before.types.get(`${M}${name}`)).toBe('counter');
      expect([0, 1, 2, 3]).toContain(app.ctx.db.counters[field] - before.value(`${M}${name}`));
    }
    expect((await me()).statusCode).toBe(200);
    const after = await scrapeOf();
    // GET /v1/me of a cached key is one statement, which also takes its read slot
    // (docs/reference/limits.md#read-budget); one scrape's jobs, rotation and webhook backlog queries are the others.
    expect(after.value(`${M}db_statements_total`) - before.value(`${M}db_statements_total`)).toBe(4);
  });
});
