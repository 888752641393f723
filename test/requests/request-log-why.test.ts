// The request log says why a request failed, never loses a batch to one bad row, is shared fairly
// between the merchants and the unidentified callers, and keeps no key or code in a path or a log
// line, however the path was encoded.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRequestLogWriter } from '../../src/core/requests/log-writer.ts';
import type { RequestLogEntry } from '../../src/core/requests/request-log.ts';
import {
  ADMIN_TOKEN,
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  type TestApp,
} from '../helpers/app.ts';
import { addStock, redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
});
afterAll(() => t.close());

interface Row {
  customer_id: number | null;
  customer_name: string | null;
  key_label: string | null;
  status: number;
  error_code: string | null;
  message: string | null;
  request_id: string;
  player_id: string | null;
  job_id: string | null;
  outcomes: Record<string, number> | null;
  path: string;
  ip: string;
}
interface Page {
  day: string | null;
  counts: { total: number; by_error_code: { error_code: string | null; count: number }[]; complete: boolean };
  requests: Row[];
}

const list = async (query: string) => {
  await t.api.requestLog.flush();
  return adminCall<Page>(t, 'GET', `/admin/v1/requests?${query}`);
};
const listIn = async (app: TestApp, query: string) => {
  await app.api.requestLog.flush();
  return adminCall<Page>(app, 'GET', `/admin/v1/requests?${query}`);
};
const rowOf = async (requestId: string) => {
  const page = await list(`request_id=${requestId}`);
  expect(page.requests).toHaveLength(1);
  return page.requests[0]!;
};
const idOf = (res: { headers: Record<string, unknown> }) => res.headers['x-request-id'] as string;

describe('a row says why', () => {
  test('a 422 redeem names its player, its job and its outcomes; the key its label', async () => {
    const m = await createMerchant(t);
    const res = await redeem(t, m.key, { player_id: '00012345', codes: [uniqueCode()] });
    expect(res.statusCode).toBe(422);
    const job = await t.ctx.db.query<{ id: string }>('select id from jobs where request_id = $1', [
      idOf(res),
    ]);
    const row = await rowOf(idOf(res));
    expect(row).toMatchObject({
      customer_id: m.customerId,
      key_label: 'test',
      status: 422,
      error_code: null,
      player_id: '00012345',
      job_id: job.rows[0]!.id,
      outcomes: { bad_player: 1 },
      path: '/v1/redeem',
    });
  });

  test("an error's message is kept, caller text in it masked", async () => {
    const m = await createMerchant(t, { topup: { test: '10' } });
    await addStock(t, m.customerId, 'test', '60', [uniqueCode()]);
    const none = await redeem(t, m.key, { player_id: '5123456789', uc: 325 });
    expect(none.statusCode).toBe(409);
    const row = await rowOf(idOf(none));
    expect(row.message).toBe(none.json().message);
    expect(row).toMatchObject({ error_code: 'no_stock', player_id: '5123456789', job_id: null });

    const secret = 'SECRET-CODE-ABCD-1234';
    const odd = await redeem(t, m.key, { player_id: '5123456789', codes: [uniqueCode()], [secret]: 1 });
    expect(odd.statusCode).toBe(400);
    expect(odd.json().message).toContain(secret);
    const r = await rowOf(idOf(odd));
    expect(r.message).toBe('unknown field "…1234"');
    const raw = await t.ctx.db.query('select * from request_log where request_id = $1', [idOf(odd)]);
    expect(JSON.stringify(raw.rows)).not.toContain('SECRET-CODE');
  });

  test('filters: player, day and today, customer by name or id, error code; counts by error code', async () => {
    const m = await createMerchant(t, { topup: { test: '10' } });
    const named = await t.ctx.db.query<{ name: string }>('select name from customers where id = $1', [
      m.customerId,
    ]);
    const name = named.rows[0]!.name;
    const player = `9${Date.now().toString().slice(-8)}`;
    for (let i = 0; i < 3; i++)
      await t.api.inject({ method: 'GET', url: `/v1/jobs/job_missing${i}`, headers: bearer(m.key) });
    for (let i = 0; i < 2; i++) await redeem(t, m.key, { player_id: player, uc: 325 });
    await redeem(t, m.key, { player_id: '00099999', codes: [uniqueCode()] });

    const all = await list(`customer=${encodeURIComponent(name.toUpperCase())}`);
    expect(all.requests).toHaveLength(6);
    expect(all.counts).toEqual({
      total: 6,
      by_error_code: [
        { error_code: 'not_found', count: 3 },
        { error_code: 'no_stock', count: 2 },
        { error_code: null, count: 1 },
      ],
      complete: true,
    });
    expect((await list(`customer=${m.customerId}`)).requests).toHaveLength(6);
    const byPlayer = await list(`player_id=${player}`);
    expect(byPlayer.requests.map((r) => r.error_code)).toEqual(['no_stock', 'no_stock']);
    expect(byPlayer.counts.by_error_code).toEqual([{ error_code: 'no_stock', count: 2 }]);
    const today = await list(`customer=${m.customerId}&day=today&error_code=not_found`);
    expect(today.day).toBe('2026-11-22');
    expect(today.requests).toHaveLength(3);
    expect((await list(`customer=${m.customerId}&day=2026-11-22`)).requests).toHaveLength(6);
    const yesterday = await list(`customer=${m.customerId}&day=2026-11-21`);
    expect(yesterday.requests).toEqual([]);
    expect(yesterday.counts).toEqual({ total: 0, by_error_code: [], complete: true });
    expect((await list('customer=nobody%20by%20this%20name')).requests).toEqual([]);

    for (const bad of ['day=yesterday', 'day=2026-13-01', 'player_id=12', 'customer=']) {
      const res = await t.admin.inject({
        method: 'GET',
        url: `/admin/v1/requests?${bad}`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error_code).toBe('bad_request');
    }
  });
});

describe('one bad row is dropped alone', () => {
  const entry = (i: number, over: Partial<RequestLogEntry> = {}): RequestLogEntry => ({
    at: new Date('2031-04-01T10:00:00Z'),
    customerId: null,
    keyPrefix: null,
    mode: null,
    method: 'GET',
    path: '/v1/me',
    status: 401,
    errorCode: 'unauthorized',
    requestId: `req_batch${i}`,
    ip: '10.0.0.1',
    durationMs: 1,
    ...over,
  });

  test('a batch holding a row without an address, and one the database refuses, writes the others', async () => {
    const dropped: Record<string, number> = {};
    let written = 0;
    const w = startRequestLogWriter({
      db: t.ctx.db,
      logger: t.ctx.logger,
      caps: { perCustomer: 1000, unidentified: 24_000 },
      flushMs: 3_600_000,
      counters: {
        written: (n) => {
          written += n;
        },
        dropped: (why, n) => {
          dropped[why] = (dropped[why] ?? 0) + n;
        },
      },
    });
    for (let i = 0; i < 10; i++) w.record(entry(i));
    // The address of a request whose socket was gone before it was logged.
    w.record(entry(10, { ip: undefined as unknown as string }));
    // A time PostgreSQL cannot store: the row itself is refused.
    w.record(entry(11, { at: new Date(-8.64e15) }));
    await w.flush();
    const r = await t.ctx.db.query<{ requestId: string; ip: string }>(
      `select request_id as "requestId", ip from request_log where request_id like 'req_batch%' order by id`,
    );
    expect(r.rows.map((x) => x.requestId)).toEqual(Array.from({ length: 11 }, (_, i) => `req_batch${i}`));
    expect(r.rows.at(-1)!.ip).toBe('unknown');
    expect(written).toBe(11);
    expect(dropped).toEqual({ write_failed: 1 });
    expect(t.logs.join('')).toContain('request log rows dropped: the database refused them');
    await w.stop();
  });
});

describe('fair to every subject', () => {
  // The writer takes at most 1,000 rows a pass; a pass every 5 s makes any flood above 200 a
  // second more than it can take, however fast this machine is.
  let slow: TestApp;
  beforeAll(async () => {
    slow = await createTestApp({ jobWorker: false, env: { REQUEST_LOG_FLUSH_MS: '5000' } });
  });
  afterAll(() => slow.close());

  test("during an anonymous flood at full speed, a merchant's own refusals are all logged; the flood's are counted", async () => {
    const m = await createMerchant(slow);
    const droppedBefore = await droppedRows();
    const mine: string[] = [];
    let flood = 0;
    const started = Date.now();
    const anonymous = () => slow.api.inject({ method: 'GET', url: '/v1/stock' });
    const merchant = async (i: number) => {
      const res = await slow.api.inject({
        method: 'GET',
        url: `/v1/jobs/job_fair${i}`,
        headers: bearer(m.key),
      });
      expect(res.statusCode).toBe(404);
      mine.push(idOf(res));
    };
    // Anonymous refusals as fast as this process answers them, 50 at a time; one of the
    // merchant's own in every other batch, so most of them come after the buffer would be full.
    for (let batch = 0; mine.length < 20 || Date.now() - started < 3000; batch++) {
      const sends: Promise<unknown>[] = Array.from({ length: 50 }, anonymous);
      if (batch % 2 === 1 && mine.length < 20) sends.push(merchant(mine.length));
      await Promise.all(sends);
      flood += 50;
    }
    const page = await listIn(slow, `customer_id=${m.customerId}&limit=100`);
    expect(page.requests.map((r) => r.request_id).sort()).toEqual([...mine].sort());
    // More anonymous refusals than the writer takes in this time: the rest are counted.
    const dropped = (await droppedRows()) - droppedBefore;
    const kept = await slow.ctx.db.query<{ n: number }>(
      `select count(*)::int as n from request_log where customer_id is null and path = '/v1/stock'`,
    );
    // At least twice what the writer takes in a pass (the loop sends 40 batches of 50 at least).
    expect(flood).toBeGreaterThanOrEqual(2000);
    expect(dropped).toBeGreaterThan(0);
    expect(Number(kept.rows[0]!.n) + dropped).toBe(flood);
  }, 30_000);

  /** Rows not written for the sampling or a cap, as /metrics counts them. */
  async function droppedRows(): Promise<number> {
    await slow.api.requestLog.flush();
    const res = await slow.admin.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    let n = 0;
    for (const m of res.body.matchAll(/request_log_rows_dropped_total\{reason="(\w+)"\} (\d+)/g))
      if (m[1] !== 'write_failed') n += Number(m[2]);
    return n;
  }
});

describe('no key or code in a path or a log line', () => {
  test('/v1/rk%5Flive%5F…, /v1/jobs/<full key> and /v1/jobs/<code> store and log no key and no code', async () => {
    const m = await createMerchant(t, { key: { mode: 'live' } });
    const rest = m.key.slice('rk_live_'.length);
    const code = uniqueCode('SECRET');
    const cases = [
      { url: `/v1/rk%5Flive%5F${rest}/x`, stored: '/v1/rk_live_…/x' },
      { url: `/v1/rk%5flive_${rest}`, stored: '/v1/rk_live_…' },
      { url: `/v1/jobs/${m.key}`, stored: '/v1/jobs/rk_live_…' },
      { url: `/v1/jobs/${encodeURIComponent(m.key).replace(/_/g, '%5F')}`, stored: '/v1/jobs/rk_live_…' },
      { url: `/v1/jobs/${code}?code=${code}`, stored: `/v1/jobs/…${code.slice(-4)}` },
    ];
    for (const c of cases) {
      const before = t.logs.length;
      const res = await t.api.inject({ method: 'GET', url: c.url, headers: bearer(m.key) });
      expect(res.statusCode, c.url).toBeGreaterThanOrEqual(400);
      const row = await rowOf(idOf(res));
      expect(row.path, c.url).toBe(c.stored);
      const raw = JSON.stringify(
        (await t.ctx.db.query('select * from request_log where request_id = $1', [idOf(res)])).rows,
      );
      const lines = t.logs.slice(before).join('');
      expect(lines, c.url).toContain('incoming request');
      for (const secret of [rest, code, rest.slice(0, 12)]) {
        expect(raw, c.url).not.toContain(secret);
        expect(lines, c.url).not.toContain(secret);
      }
    }
  });
});
