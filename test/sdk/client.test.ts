// The SDK against a real server process (through a fault-injecting proxy): every call, the retry
// rules (network errors, 5xx, 429 with Retry-After, 409 idempotency_in_progress; never another
// 4xx), one Idempotency-Key per call reused on every retry, a killed connection that does not
// bill twice, and job polling.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RedeemGateway, RedeemGatewayError, type RetryInfo } from '../../sdk/src/index.ts';
import { adminHttp, createProcessMerchant, type ServerProcess, serverProcesses } from '../helpers/process.ts';
import { type FaultProxy, startFaultProxy } from './fault-proxy.ts';

const processes = serverProcesses();
let server: ServerProcess;
let proxy: FaultProxy;
let merchant: { customerId: number; key: string };
let seq = 0;
const tag = Date.now().toString(36).toUpperCase();
const code = (marker = 'OK') => `${marker}-SDK-${tag}-${seq++}`;
const PLAYER = '5123456789';

beforeAll(async () => {
  server = await processes.start(processes.dataDir());
  proxy = await startFaultProxy(server.url);
  merchant = await createProcessMerchant(server);
}, 90_000);
afterAll(async () => {
  await proxy?.close();
});

function client(opts: { key?: string; maxRetries?: number } = {}) {
  const retries: RetryInfo[] = [];
  const c = new RedeemGateway({
    apiKey: opts.key ?? merchant.key,
    baseUrl: proxy.url,
    retryBaseMs: 50,
    ...(opts.maxRetries === undefined ? {} : { maxRetries: opts.maxRetries }),
    onRetry: (info) => retries.push(info),
  });
  return { c, retries };
}

/** The proxy's log from now on. */
function logFrom() {
  const start = proxy.log.length;
  return () => proxy.log.slice(start);
}

async function usedToday(key = merchant.key) {
  return (await new RedeemGateway({ apiKey: key, baseUrl: server.url }).me()).quota.used_today;
}

describe('typed calls', () => {
  test('me() and stock()', async () => {
    const { c } = client();
    const me = await c.me();
    expect(me).toMatchObject({
      ok: true,
      key_prefix: merchant.key.slice(0, 12),
      mode: 'test',
      plan: 'standard',
    });
    expect(me.customer_id).toBe(merchant.customerId);
    const stock = await c.stock();
    expect(stock.mode).toBe('test');
    expect(stock.categories.map((x) => x.category)).toEqual(['60', '325', '660', '1800', '3850', '8100']);
  });

  test('redeem(): one generated Idempotency-Key per call; 200 and 422 results both resolve', async () => {
    const { c, retries } = client();
    const seen = logFrom();
    const ok = await c.redeem({ player_id: PLAYER, codes: [code(), code('USED')], reference: 'order-1' });
    expect(ok).toMatchObject({ ok: true, source: 'codes', reference: 'order-1', billed_requests: 2 });
    expect(ok.codes.map((x) => x.status)).toEqual(['activated', 'code_used']);
    const none = await c.redeem({ player_id: PLAYER, codes: [code('FAIL')] });
    expect(none).toMatchObject({ ok: false, summary: { failed: 1 }, refunded_requests: 1 });
    const keys = seen().map((e) => e.idempotencyKey);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).not.toBe(keys[0]);
    expect(seen().map((e) => e.status)).toEqual([200, 422]);
    expect(retries).toEqual([]);
  });

  test('getJob() of an unknown job and registerWebhook() of a refused URL are errors with status, errorCode, requestId', async () => {
    const { c, retries } = client();
    const seen = logFrom();
    const missing = await c.getJob('job_AAAAAAAAAAAAAAAAAAAAAAAA').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(RedeemGatewayError);
    expect(missing).toMatchObject({ status: 404, errorCode: 'not_found', retryable: false });
    expect((missing as RedeemGatewayError).requestId).toBe(seen()[0]!.headers!['x-request-id']);
    const http = await c.registerWebhook('http://example.com/hook').catch((e: unknown) => e);
    expect(http).toMatchObject({ status: 400, errorCode: 'https_required', retryable: false });
    const local = await c.registerWebhook('https://127.0.0.1/hook').catch((e: unknown) => e);
    expect(local).toMatchObject({ status: 400, errorCode: 'webhook_url_blocked' });
    expect(retries).toEqual([]);
    expect(seen()).toHaveLength(3);
  });
});

describe('retries', () => {
  test('a killed connection after the server redeemed: retried with the same key, replayed, billed once', async () => {
    const { c, retries } = client();
    const before = await usedToday();
    const seen = logFrom();
    proxy.inject('drop-response', 1, { method: 'POST', path: '/v1/redeem' });
    const result = await c.redeem({ player_id: PLAYER, codes: [code(), code()] });
    expect(result).toMatchObject({ ok: true, billed_requests: 2, summary: { activated: 2 } });
    const posts = seen().filter((e) => e.path === '/v1/redeem');
    expect(posts).toHaveLength(2);
    expect(posts[1]!.idempotencyKey).toBe(posts[0]!.idempotencyKey);
    // The server answered both; the first answer never reached the client, the second is its replay.
    expect(posts.map((e) => e.status)).toEqual([200, 200]);
    expect(posts[0]!.headers!['svc-cost']).toBe('2');
    expect(posts[1]!.headers!['svc-idempotent-replay']).toBe('true');
    expect(posts[1]!.headers!['svc-cost']).toBe('0');
    expect(JSON.parse(posts[1]!.body!)).toEqual(JSON.parse(posts[0]!.body!));
    expect(retries.map((r) => r.error.errorCode)).toEqual(['network_error']);
    expect(await usedToday()).toBe(before + 2);
  });

  test('connections refused before sending and a gateway 502 are retried', async () => {
    const { c, retries } = client();
    proxy.inject('refuse', 2, { path: '/v1/me' });
    proxy.inject('bad-gateway', 1, { path: '/v1/stock' });
    expect((await c.me()).ok).toBe(true);
    expect((await c.stock()).ok).toBe(true);
    expect(retries.map((r) => [r.attempt, r.error.status, r.error.errorCode])).toEqual([
      [1, 0, 'network_error'],
      [2, 0, 'network_error'],
      [1, 502, 'http_error'],
    ]);
  });

  test('retries stop at maxRetries and the last error is thrown (retryable)', async () => {
    const { c, retries } = client({ maxRetries: 1 });
    proxy.inject('bad-gateway', 2, { path: '/v1/me' });
    const err = await c.me().catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 502, errorCode: 'http_error', retryable: true, requestId: null });
    expect(retries).toHaveLength(1);
  });

  test('never on another 4xx: bad_player, a bad key, idempotency_conflict', async () => {
    const { c, retries } = client();
    const seen = logFrom();
    const bad = await c.redeem({ player_id: '12', codes: [code()] }).catch((e: unknown) => e);
    expect(bad).toMatchObject({ status: 400, errorCode: 'bad_player', retryable: false });
    const stranger = client({ key: `rk_test_${'x'.repeat(32)}` });
    expect(await stranger.c.me().catch((e: unknown) => e)).toMatchObject({
      status: 401,
      errorCode: 'unauthorized',
    });
    const body = { player_id: PLAYER, codes: [code()] };
    await c.redeem(body, { idempotencyKey: `conflict-${tag}` });
    const conflict = await c
      .redeem({ ...body, reference: 'other' }, { idempotencyKey: `conflict-${tag}` })
      .catch((e: unknown) => e);
    expect(conflict).toMatchObject({ status: 422, errorCode: 'idempotency_conflict', retryable: false });
    expect(seen()).toHaveLength(4);
    expect(retries).toEqual([]);
    expect(stranger.retries).toEqual([]);
  });

  test('409 idempotency_in_progress: waits Retry-After, then gets the replay of the first answer', async () => {
    const { c, retries } = client();
    const key = `inprogress-${tag}`;
    const body = { player_id: PLAYER, codes: [code('SLOW')] };
    const before = await usedToday();
    const first = fetch(`${server.url}/v1/redeem`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${merchant.key}`,
        'idempotency-key': key,
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
    });
    // The first request holds its code (and the key) before the SDK asks.
    while ((await usedToday()) === before) await new Promise((r) => setTimeout(r, 20));
    const result = await c.redeem(body, { idempotencyKey: key });
    const firstAnswer = await (await first).json();
    expect(result).toEqual(firstAnswer);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    for (const r of retries) {
      expect(r.error).toMatchObject({ status: 409, errorCode: 'idempotency_in_progress', retryable: true });
      expect(r.delayMs).toBe(r.error.retryAfterSec! * 1000);
    }
    expect(await usedToday()).toBe(before + 1);
  });

  test('429 rate_limited: waits Retry-After, then succeeds; quota_exceeded past midnight is thrown at once', {
    timeout: 60_000,
  }, async () => {
    const m = await createProcessMerchant(server);
    // 30 redeems without a key fill the burst window (the limit counts them; they hold nothing).
    // Sent at once: one after another they could take longer than the window on a loaded machine.
    const fill = await Promise.all(
      Array.from({ length: 30 }, () =>
        fetch(`${server.url}/v1/redeem`, { method: 'POST', headers: { authorization: `Bearer ${m.key}` } }),
      ),
    );
    expect(fill.map((res) => res.status)).toEqual(Array(30).fill(400));
    const { c, retries } = client({ key: m.key });
    const result = await c.redeem({ player_id: PLAYER, codes: [code()] });
    expect(result.ok).toBe(true);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries[0]!.error).toMatchObject({ status: 429, errorCode: 'rate_limited', retryable: true });
    expect(retries[0]!.delayMs).toBe(retries[0]!.error.retryAfterSec! * 1000);

    await adminHttp(server, 'PUT', `/admin/v1/customers/${m.customerId}/plan`, {
      label: 'tiny',
      daily_limit: 1,
      per_request_usd: '0.01',
      overage: false,
      active: true,
    });
    const over = client({ key: m.key });
    const err = await over.c.redeem({ player_id: PLAYER, codes: [code()] }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 429, errorCode: 'quota_exceeded', retryable: true });
    expect((err as RedeemGatewayError).retryAfterSec).toBeGreaterThan(30);
    expect(over.retries).toEqual([]);
  });
});

describe('jobs', () => {
  test('redeemAsync() + waitForJob(): polls no faster than Retry-After and returns the job result', async () => {
    const { c } = client();
    const seen = logFrom();
    const accepted = await c.redeemAsync({
      player_id: PLAYER,
      codes: [code('SLOW'), code()],
      reference: 'async-1',
    });
    expect(accepted).toMatchObject({ ok: true, status: 'queued' });
    const result = await c.waitForJob(accepted.job_id);
    expect(result).toMatchObject({
      ok: true,
      job_id: accepted.job_id,
      reference: 'async-1',
      billed_requests: 2,
    });
    const view = await c.getJob(accepted.job_id);
    expect(view).toMatchObject({ status: 'completed', progress: { total: 2, done: 2 } });
    expect(view.result).toEqual(result);
    const polls = seen().filter((e) => e.path.startsWith('/v1/jobs/'));
    // At least one poll found the job unfinished (a SLOW code takes 2 s) and said Retry-After: 1.
    const waiting = polls.filter((p) => p.headers?.['retry-after'] === '1');
    expect(waiting.length).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < polls.length - 1; i++)
      expect(polls[i]!.at - polls[i - 1]!.at).toBeGreaterThanOrEqual(990);
    // The 202 went out with the SDK's own key.
    expect(seen()[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
  });
});
