// A short seeded run of the project's fuzzer (helpers/fuzz.ts) against real listeners and a real
// database: requests generated from the public OpenAPI document, the admin app's route table and
// Telegram's update shapes, every answer checked (no 5xx, a request id, the error body, the
// document). The long run is `npm run bench:fuzz` (bench/README.md). What a run once found is
// replayed below, one request each, so it stays fixed.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN } from './helpers/app.ts';
import { type BotTestApp, createBotTestApp } from './helpers/bot.ts';
import {
  adminRouteTable,
  checkAnswer,
  describeFinding,
  type FuzzCase,
  type FuzzWorld,
  prepareWorld,
  runFuzz,
} from './helpers/fuzz.ts';

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
  }, 90_000);
});

// Requests a fuzz run once answered wrongly (5xx: text PostgreSQL cannot hold reached it), kept
// as they were sent. The root token stands for the operator's.
const root = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
const FOUND: FuzzCase[] = [
  { listener: 'admin', method: 'GET', url: '/admin/v1/jobs/%00', headers: root },
  { listener: 'admin', method: 'GET', url: '/admin/v1/customers?q=%00', headers: root },
  { listener: 'admin', method: 'POST', url: '/admin/v1/keys/%00/revoke', headers: root, body: '{}' },
  { listener: 'admin', method: 'POST', url: '/admin/v1/operators/%00/revoke', headers: root, body: '{}' },
  { listener: 'admin', method: 'POST', url: '/admin/v1/jobs/%00/codes/2/settle', headers: root, body: '{}' },
  {
    listener: 'admin',
    method: 'POST',
    url: '/admin/v1/customers',
    headers: root,
    body: '{"name":"\\u0000"}',
  },
  {
    listener: 'admin',
    method: 'POST',
    url: '/admin/v1/customers',
    headers: root,
    body: '{"name":"\\ud800"}',
  },
  {
    listener: 'admin',
    method: 'POST',
    url: '/admin/v1/customers/1/wallet/topup',
    headers: { ...root, 'idempotency-key': 'found-1' },
    body: '{"mode":"test","usd":"1","note":"\\u0000"}',
  },
  {
    listener: 'admin',
    method: 'PUT',
    url: '/admin/v1/customers/1/plan',
    headers: root,
    body: '{"label":"\\ud800","daily_limit":1,"per_request_usd":"0","overage":true,"active":true}',
  },
];

describe('what fuzz runs found, replayed', () => {
  test.each(FOUND.map((c) => [`${c.listener} ${c.method} ${c.url}`, c] as const))('%s', async (_name, c) => {
    const base = c.listener === 'public' ? world.publicUrl : world.adminUrl;
    const res = await fetch(`${base}${c.url}`, { method: c.method, headers: c.headers, body: c.body });
    const body = await res.text();
    expect(checkAnswer(c, res.status, Object.fromEntries(res.headers), body)).toEqual([]);
    expect(res.status).toBe(400);
  });
});
