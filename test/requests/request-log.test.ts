// The request log: every refused or failed public API answer is written, off the
// request path, with what the request was and nothing it carried; the daily caps and retention
// bound it; the operator lists it (GET /admin/v1/requests) and looks ids up (GET /admin/v1/lookup).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { startRequestLogWriter } from '../../src/core/requests/log-writer.ts';
import { type RequestLogEntry, sweepRequestLog } from '../../src/core/requests/request-log.ts';
import { SWEEP_PASSES, sweepOnce } from '../../src/core/sweeper/passes.ts';
import { buildPublicApp } from '../../src/http/public-app.ts';
import { loggedPath } from '../../src/logged-path.ts';
import { registerPublicRoutes } from '../../src/routes/public.ts';
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

const PLAYER = '5123456789';
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const unknownKey = () => `rk_test_${Array.from(randomBytes(32), (b) => BASE62[b % 62]).join('')}`;

interface Row {
  at: string;
  customer_id: number | null;
  customer_name: string | null;
  key_prefix: string | null;
  mode: string | null;
  method: string;
  path: string;
  status: number;
  error_code: string | null;
  request_id: string;
  ip: string;
  duration_ms: number;
  key_label: string | null;
  message: string | null;
  player_id: string | null;
  job_id: string | null;
  outcomes: Record<string, number> | null;
}

async function rowOf(requestId: string): Promise<Row> {
  await t.api.requestLog.flush();
  const page = await adminCall<{ requests: Row[] }>(t, 'GET', `/admin/v1/requests?request_id=${requestId}`);
  expect(page.requests).toHaveLength(1);
  return page.requests[0]!;
}

/** The stored row in full, as text: nothing secret may be in it. */
async function rawRow(requestId: string): Promise<string> {
  const r = await t.ctx.db.query('select * from request_log where request_id = $1', [requestId]);
  return JSON.stringify(r.rows);
}

describe('every refusal is logged with what it was, never what it carried', () => {
  test('401 without a key and with an unknown key: unidentified rows', async () => {
    const none = await t.api.inject({ method: 'GET', url: '/v1/me?secret=hunter2' });
    expect(none.statusCode).toBe(401);
    const row = await rowOf(none.headers['x-request-id'] as string);
    expect(row).toEqual({
      at: expect.any(String),
      customer_id: null,
      customer_name: null,
      key_prefix: null,
      mode: null,
      method: 'GET',
      path: '/v1/me',
      status: 401,
      error_code: 'unauthorized',
      request_id: none.headers['x-request-id'],
      ip: '127.0.0.1',
      duration_ms: expect.any(Number),
      key_label: null,
      message: expect.stringContaining('key'),
      player_id: null,
      job_id: null,
      outcomes: null,
    });
    expect(await rawRow(row.request_id)).not.toContain('hunter2');

    const key = unknownKey();
    const unknown = await t.api.inject({ method: 'GET', url: '/v1/stock', headers: bearer(key) });
    expect(unknown.statusCode).toBe(401);
    const u = await rowOf(unknown.headers['x-request-id'] as string);
    expect(u).toMatchObject({ customer_id: null, key_prefix: null, path: '/v1/stock', status: 401 });
    expect(u.error_code).toBe(unknown.json().error_code);
    expect(await rawRow(u.request_id)).not.toContain(key.slice(8));
  });

  test('400 bad body, 402, 409 no_stock: the customer, key prefix and mode; no body, no code', async () => {
    const m = await createMerchant(t, {
      plan: { daily_limit: 1, per_request_usd: '0.5' },
      topup: { test: '0.4' },
    });
    const bad = await redeem(t, m.key, '{"player_id": "51234', 'bad-body');
    expect(bad.statusCode).toBe(400);
    const b = await rowOf(bad.headers['x-request-id'] as string);
    expect(b).toMatchObject({
      customer_id: m.customerId,
      key_prefix: m.keyPrefix,
      mode: 'test',
      method: 'POST',
      path: '/v1/redeem',
      status: 400,
      error_code: 'bad_request',
    });

    const codes = [uniqueCode(), uniqueCode()];
    const poor = await redeem(t, m.key, { player_id: PLAYER, codes }, 'funds-key');
    expect(poor.statusCode).toBe(402);
    const p = await rowOf(poor.headers['x-request-id'] as string);
    expect(p).toMatchObject({ customer_id: m.customerId, status: 402, error_code: 'insufficient_funds' });
    const raw = await rawRow(p.request_id);
    for (const secret of [...codes, m.key, 'funds-key']) expect(raw).not.toContain(secret);
    // The player is not a secret: the operator looks a player's refusals up by it.
    expect(p.player_id).toBe(PLAYER);

    const rich = await createMerchant(t, { topup: { test: '10' } });
    await addStock(t, rich.customerId, 'test', '60', [uniqueCode()]);
    const none = await redeem(t, rich.key, { player_id: PLAYER, uc: 325 });
    expect(none.statusCode).toBe(409);
    const n = await rowOf(none.headers['x-request-id'] as string);
    expect(n).toMatchObject({
      customer_id: rich.customerId,
      status: 409,
      error_code: 'no_stock',
      mode: 'test',
    });
  });

  test('429 of the burst limit, and a 404 of an unknown path (its path kept, its query not)', async () => {
    const m = await createMerchant(t);
    let limited: Awaited<ReturnType<typeof redeem>> | undefined;
    for (let i = 0; i < 31; i++) {
      const r = await redeem(t, m.key, {});
      if (r.statusCode === 429) limited = r;
    }
    expect(limited).toBeDefined();
    const l = await rowOf(limited!.headers['x-request-id'] as string);
    expect(l).toMatchObject({ customer_id: m.customerId, status: 429, error_code: 'rate_limited' });

    const lost = await t.api.inject({
      method: 'GET',
      url: `/v1/nowhere/${m.key}?token=abc`,
      headers: bearer(m.key),
    });
    expect(lost.statusCode).toBe(404);
    const r = await rowOf(lost.headers['x-request-id'] as string);
    // A segment no route names (a typo, or a code) shows its last 4 characters.
    expect(r.path).toBe('/v1/…here/rk_test_…');
    expect(await rawRow(r.request_id)).not.toContain(m.key.slice(8));
  });

  test('a 500 is logged too (a statement failing for a reason that is not the database away)', async () => {
    // Every query of this app fails; its request log still writes through transactions.
    const broken = new Proxy(t.ctx.db, {
      get(target, prop) {
        if (prop === 'query')
          return async () => {
            throw new Error('broken on purpose');
          };
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const app = await buildPublicApp({ ...t.ctx, db: broken }, registerPublicRoutes);
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/me', headers: bearer(unknownKey()) });
      expect(res.statusCode).toBe(500);
      await app.requestLog.flush();
      const row = await rowOf(res.headers['x-request-id'] as string);
      expect(row).toMatchObject({ status: 500, error_code: 'internal', path: '/v1/me', customer_id: null });
    } finally {
      await app.close();
    }
  });

  test('a success is not logged; the answers themselves are unchanged', async () => {
    const m = await createMerchant(t);
    const ok = await t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(m.key) });
    expect(ok.statusCode).toBe(200);
    await t.api.requestLog.flush();
    const page = await adminCall<{ requests: Row[] }>(
      t,
      'GET',
      `/admin/v1/requests?request_id=${ok.headers['x-request-id']}`,
    );
    expect(page.requests).toEqual([]);
  });

  test('loggedPath: no query, no fragment, keys masked, at most 200 characters', () => {
    expect(loggedPath('/v1/jobs/job_1?x=1#y')).toBe('/v1/jobs/job_1');
    expect(loggedPath(`/v1${'/jobs'.repeat(60)}`)).toHaveLength(200);
    expect(loggedPath(`/a/${'x'.repeat(300)}`)).toBe('/a/…xxxx');
    expect(loggedPath('/v1/rk_live_ABCDEF/x')).toBe('/v1/rk_live_…/x');
    expect(loggedPath('/v1/rk%5Flive%5FABCDEF/x')).toBe('/v1/rk_live_…/x');
    expect(loggedPath('/v1/jobs/ABCD-EFGH-1234-WXYZ')).toBe('/v1/jobs/…WXYZ');
    expect(loggedPath('/v1/jobs/%41BCD-EFGH-1234-WXYZ%zz')).toBe('/v1/jobs/…Z%zz');
  });
});

describe('GET /admin/v1/requests', () => {
  test('filters by customer, status class, error code and since; pages newest first; unknown params are 400', async () => {
    const m = await createMerchant(t);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      t.clock.advance(1000);
      const r = await t.api.inject({
        method: 'GET',
        url: `/v1/jobs/job_missing${i}`,
        headers: bearer(m.key),
      });
      expect(r.statusCode).toBe(404);
      ids.push(r.headers['x-request-id'] as string);
    }
    await t.api.requestLog.flush();
    const first = await adminCall<{ requests: Row[]; next_cursor: string | null }>(
      t,
      'GET',
      `/admin/v1/requests?customer_id=${m.customerId}&status=4xx&error_code=not_found&limit=3`,
    );
    expect(first.requests.map((r) => r.request_id)).toEqual(ids.slice(2).reverse());
    expect(first.requests[0]).toMatchObject({
      path: '/v1/jobs/job_missing4',
      customer_name: expect.any(String),
    });
    const second = await adminCall<{ requests: Row[]; next_cursor: string | null }>(
      t,
      'GET',
      `/admin/v1/requests?customer_id=${m.customerId}&limit=3&cursor=${first.next_cursor}`,
    );
    expect(second.requests.map((r) => r.request_id)).toEqual(ids.slice(0, 2).reverse());
    expect(second.next_cursor).toBeNull();
    const since = new Date(Date.parse(first.requests[1]!.at)).toISOString();
    const recent = await adminCall<{ requests: Row[] }>(
      t,
      'GET',
      `/admin/v1/requests?customer_id=${m.customerId}&since=${since}`,
    );
    expect(recent.requests.map((r) => r.request_id)).toEqual(ids.slice(3).reverse());
    const fives = await adminCall<{ requests: Row[] }>(
      t,
      'GET',
      `/admin/v1/requests?customer_id=${m.customerId}&status=5xx`,
    );
    expect(fives.requests).toEqual([]);
    const exact = await adminCall<{ requests: Row[] }>(
      t,
      'GET',
      `/admin/v1/requests?customer_id=${m.customerId}&status=404`,
    );
    expect(exact.requests).toHaveLength(5);

    for (const bad of [
      'foo=1',
      'status=200',
      'status=4x',
      'limit=0',
      'limit=501',
      'cursor=zz',
      'request_id=job_1',
      'since=yesterday',
    ]) {
      const res = await t.admin.inject({
        method: 'GET',
        url: `/admin/v1/requests?${bad}`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error_code).toBe('bad_request');
    }
    const anon = await t.admin.inject({ method: 'GET', url: '/admin/v1/requests' });
    expect(anon.statusCode).toBe(401);
  });

  test('a viewer may read it', async () => {
    const op = await adminCall<{ token: string }>(
      t,
      'POST',
      '/admin/v1/operators',
      { name: `v${Date.now()}`, role: 'viewer' },
      201,
    );
    const res = await t.admin.inject({
      method: 'GET',
      url: '/admin/v1/requests?limit=1',
      headers: { authorization: `Bearer ${op.token}` },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      request_id: expect.any(String),
      day: null,
      counts: { total: expect.any(Number), by_error_code: expect.any(Array), complete: true },
      requests: expect.any(Array),
      next_cursor: expect.anything(),
    });
  });
});

describe('lookup by id', () => {
  test('GET /admin/v1/jobs?player_id= and GET /admin/v1/lookup for a request, job, event and player id', async () => {
    const m = await createMerchant(t);
    const player = `7${Date.now().toString().slice(-9)}`;
    const r = await redeem(t, m.key, { player_id: player, codes: [uniqueCode()] });
    expect(r.statusCode).toBe(200);
    // A sync answer names no job: the job is the one this request created.
    const created = await t.ctx.db.query<{ id: string }>('select id from jobs where request_id = $1', [
      r.headers['x-request-id'],
    ]);
    const jobId = created.rows[0]!.id;
    const jobs = await adminCall<{ jobs: { job_id: string; player_id: string }[] }>(
      t,
      'GET',
      `/admin/v1/jobs?player_id=${player}`,
    );
    expect(jobs.jobs.map((j) => [j.job_id, j.player_id])).toEqual([[jobId, player]]);
    const badPlayer = await t.admin.inject({
      method: 'GET',
      url: '/admin/v1/jobs?player_id=abc',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(badPlayer.statusCode).toBe(400);

    const look = (q: string) =>
      adminCall<Record<string, unknown>>(t, 'GET', `/admin/v1/lookup?q=${encodeURIComponent(q)}`);
    expect(await look(r.headers['x-request-id'] as string)).toMatchObject({
      kind: 'request',
      found: true,
      job_id: jobId,
      customer_id: m.customerId,
      logged: 0,
    });
    expect(await look(jobId)).toMatchObject({
      kind: 'job',
      found: true,
      job_id: jobId,
      customer_id: m.customerId,
    });
    expect(await look(player)).toMatchObject({ kind: 'player', found: true, player_id: player, jobs: 1 });
    expect(await look('job_doesNotExist000000000000')).toMatchObject({ kind: 'job', found: false });
    expect(await look('evt_doesNotExist000000000000')).toMatchObject({ kind: 'event', found: false });
    expect(await look('hello world')).toMatchObject({ kind: null, found: false });

    const refused = await t.api.inject({ method: 'GET', url: '/v1/me' });
    await t.api.requestLog.flush();
    expect(await look(refused.headers['x-request-id'] as string)).toMatchObject({
      kind: 'request',
      found: true,
      job_id: null,
      logged: 1,
    });
  });
});

describe('bounded', () => {
  const entry = (customerId: number | null, at: Date, i: number): RequestLogEntry => ({
    at,
    customerId,
    keyPrefix: null,
    mode: null,
    method: 'GET',
    path: '/v1/me',
    status: 401,
    errorCode: 'unauthorized',
    requestId: `req_cap${customerId ?? 'anon'}${at.getTime()}x${i}`,
    ip: '10.0.0.1',
    durationMs: 1,
  });
  const count = async (where: string, params: unknown[]) =>
    Number(
      (
        await t.ctx.db.query<{ n: number }>(
          `select count(*)::int as n from request_log where ${where}`,
          params,
        )
      ).rows[0]!.n,
    );

  test('the daily caps hold across writers; the next UTC day starts again', async () => {
    const m = await createMerchant(t);
    const dropped: Record<string, number> = {};
    // Two writers, as two processes: the database's count is shared.
    const writers = [0, 1].map(() =>
      startRequestLogWriter({
        db: t.ctx.db,
        logger: t.ctx.logger,
        // The unidentified callers' cap is spent a 24th an hour: 20 rows in this hour.
        caps: { perCustomer: 30, unidentified: 20 * 24 },
        batchRows: 7,
        counters: {
          written: () => undefined,
          dropped: (why, n) => {
            dropped[why] = (dropped[why] ?? 0) + n;
          },
        },
      }),
    );
    const day = new Date('2031-01-05T23:59:00Z');
    for (let i = 0; i < 50; i++) {
      writers[i % 2]!.record(entry(m.customerId, day, i));
      writers[i % 2]!.record(entry(null, day, i));
    }
    await Promise.all(writers.map((w) => w.flush()));
    expect(await count('customer_id = $1 and at = $2', [m.customerId, day])).toBe(30);
    expect(await count('customer_id is null and at = $1', [day])).toBe(20);
    expect(dropped.cap).toBe(100 - 50);
    const next = new Date('2031-01-06T00:00:01Z');
    writers[0]!.record(entry(m.customerId, next, 0));
    await writers[0]!.flush();
    expect(await count('customer_id = $1 and at = $2', [m.customerId, next])).toBe(1);
    await Promise.all(writers.map((w) => w.stop()));
  });

  test('a full buffer drops and counts; the database away drops the batch with a log line (no retry of each row)', async () => {
    const dropped: Record<string, number> = {};
    const counters = {
      written: () => undefined,
      dropped: (why: string, n: number) => {
        dropped[why] = (dropped[why] ?? 0) + n;
      },
    };
    const failing = {
      ...t.ctx.db,
      transaction: async () => {
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      },
    } as typeof t.ctx.db;
    const w = startRequestLogWriter({
      db: failing,
      logger: t.ctx.logger,
      caps: { perCustomer: 1000, unidentified: 1000 },
      maxBuffered: 5,
      subjectShare: 5,
      flushMs: 3_600_000,
      counters,
    });
    for (let i = 0; i < 8; i++) w.record(entry(null, new Date('2031-02-01T00:00:00Z'), i));
    expect(w.buffered()).toBe(5);
    expect(dropped.buffer_full).toBe(3);
    await w.flush();
    expect(dropped.write_failed).toBe(5);
    expect(t.logs.join('')).toContain('request log batch dropped');
    await w.stop();
  });

  test('the writes are bounded: rows that come while a pass writes wait for the next pass', async () => {
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let entered = () => {};
    const inFirstWrite = new Promise<void>((r) => {
      entered = r;
    });
    let calls = 0;
    // The first write waits until the test lets it go.
    const db = {
      ...t.ctx.db,
      transaction: async (fn: Parameters<typeof t.ctx.db.transaction>[0]) => {
        calls += 1;
        if (calls === 1) {
          entered();
          await gate;
        }
        return t.ctx.db.transaction(fn);
      },
    } as typeof t.ctx.db;
    let full = 0;
    const w = startRequestLogWriter({
      db,
      logger: t.ctx.logger,
      caps: { perCustomer: 1000, unidentified: 1000 },
      maxBuffered: 3,
      subjectShare: 3,
      flushMs: 50,
      counters: {
        written: () => undefined,
        dropped: (why, n) => {
          if (why === 'buffer_full') full += n;
        },
      },
    });
    const at = new Date('2031-03-01T00:00:00Z');
    for (let i = 0; i < 3; i++) w.record(entry(null, at, i));
    await inFirstWrite;
    // The pass took its 3 rows; what comes now waits, up to the buffer's bound.
    expect(w.buffered()).toBe(0);
    for (let i = 3; i < 7; i++) w.record(entry(null, at, i));
    expect(w.buffered()).toBe(3);
    expect(full).toBe(1);
    release();
    await vi.waitFor(async () => expect(await count('at = $1', [at])).toBe(6), { timeout: 5000 });
    expect(calls).toBe(2);
    await w.stop();
  });

  test("the sweeper's request log pass deletes what is older than REQUEST_LOG_RETENTION_DAYS", async () => {
    const now = t.clock.now();
    const old = new Date(now.getTime() - 8 * 86_400_000);
    const recent = new Date(now.getTime() - 6 * 86_400_000);
    const w = startRequestLogWriter({
      db: t.ctx.db,
      logger: t.ctx.logger,
      caps: { perCustomer: 10, unidentified: 10 },
    });
    w.record(entry(null, old, 9));
    w.record(entry(null, recent, 9));
    await w.stop();
    await sweepOnce(
      t.ctx,
      SWEEP_PASSES.filter((p) => p.name === 'request log retention'),
    );
    expect(await count('at = $1', [old])).toBe(0);
    expect(await count('at = $1', [recent])).toBe(1);
  });

  test('retention deletes rows and daily counts older than the setting', async () => {
    const old = new Date('2030-03-01T12:00:00Z');
    const w = startRequestLogWriter({
      db: t.ctx.db,
      logger: t.ctx.logger,
      caps: { perCustomer: 10, unidentified: 10 },
    });
    w.record(entry(null, old, 1));
    w.record(entry(null, new Date('2030-03-07T12:00:00Z'), 2));
    await w.stop();
    const swept = await sweepRequestLog(t.ctx.db, new Date('2030-03-09T00:00:00Z'), 7);
    expect(swept.rows).toBeGreaterThanOrEqual(1);
    expect(await count('at = $1', [old])).toBe(0);
    expect(await count('at = $1', [new Date('2030-03-07T12:00:00Z')])).toBe(1);
    const days = await t.ctx.db.query(`select 1 from request_log_days where day = '2030-03-01'`);
    expect(days.rows).toEqual([]);
    expect(t.ctx.config.REQUEST_LOG_RETENTION_DAYS).toBe(7);
    expect(t.ctx.config.REQUEST_LOG_DAILY_CAP).toBe(10_000);
  });
});
