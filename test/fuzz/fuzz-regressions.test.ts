// Every request a fuzz run found answered wrongly (test/helpers/fuzz/, bench/README.md "Fuzzing"),
// kept as it was sent and replayed against real listeners: each must now get the answer named
// here, and pass the fuzzer's own checks (no 5xx, a request id, the error body, the document).
// Add a finding here when it is fixed. Found elsewhere and kept there: a body that never arrives
// (408 whatever the key, a keyless one too) and a request without Host (400 with the error body)
// are test/api/early-answers.test.ts; text PostgreSQL cannot hold in the public API's fields is
// test/api/storable-input.test.ts and test/redeem/redeem-validation.test.ts.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { type BotTestApp, createBotTestApp } from '../helpers/bot.ts';
import { onPostgres } from '../helpers/db.ts';
import { checkAnswer, type FuzzCase } from '../helpers/fuzz/index.ts';

const SECRET = 'fuzz-regressions-secret-0123456789';
let t: BotTestApp;
const base = { public: '', admin: '' };
let customer = 0;

beforeAll(async () => {
  t = await createBotTestApp({
    jobWorker: false,
    env: { BOT_UPDATES: 'webhook', BOT_WEBHOOK_SECRET: SECRET },
  });
  base.public = await t.api.listen({ host: '127.0.0.1', port: 0 });
  base.admin = await t.admin.listen({ host: '127.0.0.1', port: 0 });
  const res = await fetch(`${base.admin}/admin/v1/customers`, {
    method: 'POST',
    headers: root,
    body: JSON.stringify({ name: 'fuzz regressions' }),
  });
  customer = ((await res.json()) as { customer_id: number }).customer_id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const root = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
const bot = { 'x-telegram-bot-api-secret-token': SECRET, 'content-type': 'application/json' };

interface Found {
  /** When and where it was found, and what it got then. */
  found: string;
  case: FuzzCase;
  status: number;
  error_code?: string;
}

const admin = (
  method: string,
  url: string,
  body?: string,
  headers: Record<string, string> = root,
): FuzzCase => ({
  listener: 'admin',
  method,
  url,
  headers,
  body,
});
const update = (body: string): FuzzCase => ({
  listener: 'public',
  method: 'POST',
  url: '/bot/updates',
  headers: bot,
  body,
});

const NUL_500 = '2026-11-28, PGlite and PostgreSQL: 500 (text PostgreSQL cannot hold reached it)';
const BOT_500 = '2026-11-28 22:50, PostgreSQL seed 8: 500 (TypeError in the bot door)';

const FOUND: Found[] = [
  // U+0000 and lone surrogates in admin path ids, queries and text fields.
  { found: NUL_500, case: admin('GET', '/admin/v1/jobs/%00'), status: 400 },
  { found: NUL_500, case: admin('GET', '/admin/v1/customers?q=%00'), status: 400 },
  { found: NUL_500, case: admin('POST', '/admin/v1/keys/%00/revoke', '{}'), status: 400 },
  { found: NUL_500, case: admin('POST', '/admin/v1/operators/%00/revoke', '{}'), status: 400 },
  { found: NUL_500, case: admin('POST', '/admin/v1/jobs/%00/codes/2/settle', '{}'), status: 400 },
  { found: NUL_500, case: admin('POST', '/admin/v1/customers', '{"name":"\\u0000"}'), status: 400 },
  { found: NUL_500, case: admin('POST', '/admin/v1/customers', '{"name":"\\ud800"}'), status: 400 },
  {
    found: NUL_500,
    case: admin('POST', '/admin/v1/customers/1/wallet/topup', '{"mode":"test","usd":"1","note":"\\u0000"}', {
      ...root,
      'idempotency-key': 'found-1',
    }),
    status: 400,
  },
  {
    found: NUL_500,
    case: admin(
      'PUT',
      '/admin/v1/customers/1/plan',
      '{"label":"\\ud800","daily_limit":1,"per_request_usd":"0","overage":true,"active":true}',
    ),
    status: 400,
  },
  // Webhook updates with the right secret whose parts the bot reads are not of their shape.
  { found: BOT_500, case: update('{"update_id":500100030,"message":2147483648}'), status: 400 },
  { found: BOT_500, case: update('{"update_id":-1,"message":true}'), status: 400 },
  { found: BOT_500, case: update('{"update_id":500100031,"message":{}}'), status: 400 },
  { found: BOT_500, case: update('{"update_id":500100032,"message":[null]}'), status: 400 },
  { found: BOT_500, case: update('{"update_id":500100033,"message":{"a":1}}'), status: 400 },
  { found: BOT_500, case: update('{"update_id":500100034,"callback_query":5}'), status: 400 },
  {
    found: BOT_500,
    case: update('{"update_id":500100035,"callback_query":{"id":"1","data":"x","chat_instance":"1"}}'),
    status: 400,
  },
  {
    found: BOT_500,
    case: update(
      '{"update_id":500100036,"message":{"message_id":1,"date":1,"chat":{"id":1,"type":"private"},"from":{"id":1,"is_bot":false,"first_name":"x"},"text":5}}',
    ),
    status: 400,
  },
];

describe('what fuzz runs found, replayed', () => {
  test.each(
    FOUND.map((f) => [`${f.case.listener} ${f.case.method} ${f.case.url} ${f.case.body ?? ''}`, f] as const),
  )('%s', async (_name, f) => {
    const url = f.case.url.replace('/customers/1/', `/customers/${customer}/`);
    const res = await fetch(`${base[f.case.listener]}${url}`, {
      method: f.case.method,
      headers: f.case.headers,
      body: f.case.body,
    });
    const body = await res.text();
    expect(checkAnswer(f.case, res.status, Object.fromEntries(res.headers), body)).toEqual([]);
    expect(res.status, body).toBe(f.status);
  });

  test('a well-formed update with the same secret is still acted on (200)', async () => {
    const res = await fetch(`${base.public}/bot/updates`, {
      method: 'POST',
      headers: bot,
      body: JSON.stringify({
        update_id: 500100099,
        message: {
          message_id: 1,
          date: 1795000000,
          chat: { id: 80000001, type: 'private' },
          from: { id: 80000001, is_bot: false, first_name: 'fuzz' },
          text: '/help',
        },
      }),
    });
    expect(res.status, await res.text()).toBe(200);
  });
});

// Found 2026-11-29 on PostgreSQL (seed 8, the gateway's pool at 1 connection and a 400-ms wait for
// it): a 200 of GET /v1/stock and a 404 of POST /v1/events/{id}/redeliver without SVC-Quota-Used,
// SVC-Quota-Remaining and SVC-Balance-Usd, which the document requires on every answer whose key
// was identified: the answer's own work was done, the account read for its headers timed out,
// and the answer went out without them (likely the "4 schema mismatches" of 2026-11-28's
// overloaded PostgreSQL run). Replayed by holding the one table only that read needs
// (daily_usage) locked from another connection: the read waits out its statement deadline.
// On PostgreSQL only: PGlite's one connection would wait behind the lock for everything.
describe.skipIf(!onPostgres)('an answer whose quota headers cannot be read', () => {
  test('a read or a refusal is 503 unavailable with Retry-After; once the database answers, the headers are back', async () => {
    const made = await fetch(`${base.admin}/admin/v1/customers/${customer}/keys`, {
      method: 'POST',
      headers: root,
      body: JSON.stringify({ mode: 'test' }),
    });
    const { key } = (await made.json()) as { key: string };
    const keyed = { authorization: `Bearer ${key}` };
    const cases: FuzzCase[] = [
      { listener: 'public', method: 'GET', url: '/v1/stock', headers: keyed },
      { listener: 'public', method: 'POST', url: '/v1/events/evt_nothing/redeliver', headers: keyed },
    ];
    const send = async (c: FuzzCase) => {
      const res = await fetch(`${base.public}${c.url}`, { method: c.method, headers: c.headers });
      const body = await res.text();
      return { status: res.status, headers: Object.fromEntries(res.headers), body };
    };
    // Once with the database answering: authenticated, so the key's facts are this process's.
    for (const c of cases) expect((await send(c)).headers['svc-quota-used']).toBeDefined();
    const locker = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table daily_usage in access exclusive mode');
      for (const c of cases) {
        const a = await send(c);
        expect(checkAnswer(c, a.status, a.headers, a.body), a.body).toEqual([]);
        expect([a.status, JSON.parse(a.body).error_code, a.headers['retry-after']]).toEqual([
          503,
          'unavailable',
          '2',
        ]);
      }
    } finally {
      await locker.query('rollback');
      await locker.end();
    }
    const stock = await send(cases[0]!);
    expect(checkAnswer(cases[0]!, stock.status, stock.headers, stock.body)).toEqual([]);
    expect([stock.status, typeof stock.headers['svc-quota-used']]).toEqual([200, 'string']);
  }, 60_000);
});
