// A short seeded run of the project's fuzzer (helpers/fuzz/) against real listeners and a real
// database: requests generated from the public OpenAPI document, the admin app's route table and
// Telegram's update shapes, every answer checked (no 5xx, a request id, the error body, the
// document). The long run is `npm run bench:fuzz` (bench/README.md). What a run once found is
// replayed in test/fuzz/fuzz-regressions.test.ts, one request each, so it stays fixed.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { type BotTestApp, createBotTestApp } from '../helpers/bot.ts';
import {
  adminRouteTable,
  checkAnswer,
  describeFinding,
  type FuzzCase,
  type FuzzWorld,
  prepareWorld,
  runFuzz,
} from '../helpers/fuzz/index.ts';

const SECRET = 'fuzz-webhook-secret-0123456789';
let t: BotTestApp;
let world: FuzzWorld;

beforeAll(async () => {
  t = await createBotTestApp({
    jobWorker: true,
    env: { BOT_UPDATES: 'webhook', BOT_WEBHOOK_SECRET: SECRET, READ_RATE_LIMIT: '1000000' },
  });
  const publicUrl = await t.api.listen({ host: '127.0.0.1', port: 0 });
  const adminUrl = await t.admin.listen({ host: '127.0.0.1', port: 0 });
  world = await prepareWorld({
    publicUrl,
    adminUrl,
    rootToken: ADMIN_TOKEN,
    adminRoutes: await adminRouteTable(),
    botSecret: SECRET,
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('the fuzzer, seeded', () => {
  test('3,000 generated requests: no 5xx, every answer with a request id, the error body and the document', async () => {
    const totals = await runFuzz({ world, seed: 20261128, requests: 3000, concurrency: 16 });
    console.log('[fuzz] answers', totals.byAnswer);
    expect(totals.findings.map(describeFinding)).toEqual([]);
    expect(totals.requests).toBe(3000);
    // The run reaches the routes' happy paths and their refusals, not only one of them.
    const statuses = Object.keys(totals.byStatus).map(Number);
    expect(statuses.filter((s) => s < 300).length).toBeGreaterThan(1);
    expect(statuses).toEqual(expect.arrayContaining([400, 401, 403, 404]));
    // This run keeps the admin lockout (the long run raises it): its 429s are met and checked
    // (error body, Retry-After equal to retry_after_sec), so a malformed 429 is a finding above.
    expect(totals.byAnswer['admin 429 rate_limited']).toBeGreaterThan(0);
    expect(totals.rateLimited.admin).toBeGreaterThanOrEqual(totals.byAnswer['admin 429 rate_limited']!);
  }, 90_000);
});

// bench/README.md "Fuzzing", the decision on 503: a `503 unavailable` is a documented answer (not
// a finding) only where the public document lists 503 for the operation, answered as documented.
describe('a 503 is a finding unless the document lists it and it is answered as documented', () => {
  /** A real answer's headers (GET /v1/health's 200) with the body and headers of a 503 instead. */
  async function answer503(
    listener: 'public' | 'admin',
    url: string,
    error_code = 'unavailable',
    retryAfter: string | null = '5',
  ) {
    const res = await fetch(`${world.publicUrl}/v1/health`);
    const headers: Record<string, string> = Object.fromEntries(res.headers);
    if (retryAfter !== null) headers['retry-after'] = retryAfter;
    const id = headers['x-request-id']!;
    const body = JSON.stringify({ ok: false, error_code, message: 'database unavailable', request_id: id });
    const c: FuzzCase = { listener, method: 'GET', url, headers: {} };
    return checkAnswer(c, 503, headers, body);
  }

  test('GET /v1/health and GET /v1/me: 503 unavailable with the error body, request id and Retry-After is an answer', async () => {
    expect(await answer503('public', '/v1/health')).toEqual([]);
    expect(await answer503('public', '/v1/me')).toEqual([]);
  });

  test('without Retry-After, as job_interrupted, off the document or on the admin API it is still a finding', async () => {
    expect(await answer503('public', '/v1/health', 'unavailable', null)).toContain('5xx: 503');
    expect(await answer503('public', '/v1/health', 'job_interrupted')).toContain('5xx: 503');
    expect(await answer503('public', '/v1/nowhere')).toContain('5xx: 503');
    expect(await answer503('admin', '/admin/v1/customers')).toContain('5xx: 503');
  });
});

describe('a 429 must say when to come back', () => {
  async function answer429(retryAfter: string | null, retryAfterSec: unknown) {
    const res = await fetch(`${world.publicUrl}/v1/health`);
    const headers: Record<string, string> = Object.fromEntries(res.headers);
    if (retryAfter !== null) headers['retry-after'] = retryAfter;
    const id = headers['x-request-id']!;
    const body = JSON.stringify({
      ok: false,
      error_code: 'rate_limited',
      message: 'too many failed admin authentications from this address; try again in 60 s',
      request_id: id,
      retry_after_sec: retryAfterSec,
    });
    return checkAnswer(
      { listener: 'admin', method: 'GET', url: '/admin/v1/customers', headers: {} },
      429,
      headers,
      body,
    );
  }

  test('Retry-After and the same retry_after_sec: an answer; either missing or unequal: a finding', async () => {
    expect(await answer429('60', 60)).toEqual([]);
    expect(await answer429(null, 60)).toEqual(['429 without Retry-After']);
    expect(await answer429('60', 59)).toEqual(['429 whose retry_after_sec is not its Retry-After']);
    expect(await answer429('soon', 60)).toEqual(['429 without Retry-After']);
  });
});
