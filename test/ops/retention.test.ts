// Retention (docs/reference/running.md#retention) with an injected clock: a sweep drops the code ciphertexts of finished
// jobs older than RETENTION_DAYS (their caller codes are shown masked from then on), deletes old
// webhook events and attempts, works in bounded batches, and leaves young jobs, unfinished jobs,
// unsettled quarantine, the ledger, daily usage and billing counters alone.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { isoUtc, ManualClock } from '../../src/core/clock.ts';
import { maskCode } from '../../src/core/crypto/code-crypto.ts';
import { parseRedeemRequest, requestFingerprint } from '../../src/core/redeem/request.ts';
import { startRedeem } from '../../src/core/redeem/start.ts';
import { sweepRetention } from '../../src/core/sweeper/retention.ts';
import { deliverDueEvents } from '../../src/core/webhooks/delivery.ts';
import { registerWebhook } from '../../src/core/webhooks/registration.ts';
import type { LookupFn } from '../../src/core/webhooks/url-guard.ts';
import {
  ADMIN_TOKEN,
  bearer,
  createMerchant,
  createTestApp,
  type Merchant,
  type TestApp,
} from '../helpers/app.ts';
import { addStock, redeem, uniqueCode } from '../helpers/redeem.ts';

const PLAYER = '5123456789';
const DAY = 86_400_000;
const T0 = '2026-03-01T12:00:00Z';
const masked = (code: string) => maskCode(code.slice(-4), code.length);

let t: TestApp;
let clock: ManualClock;
beforeAll(async () => {
  clock = new ManualClock(T0);
  t = await createTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
});
afterAll(() => t?.close());

const getJob = (key: string, id: string) =>
  t.api.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: bearer(key) });
const adminJob = async (id: string) =>
  (
    await t.admin.inject({
      method: 'GET',
      url: `/admin/v1/jobs/${id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    })
  ).json();

async function asyncJob(m: Merchant, codes: string[]): Promise<string> {
  const res = await redeem(t, m.key, { player_id: PLAYER, codes, async: true });
  expect(res.statusCode, res.body).toBe(202);
  const id = res.json().job_id as string;
  for (let i = 0; i < 400; i++) {
    const status = (await getJob(m.key, id)).json().status;
    if (status !== 'queued' && status !== 'running') return id;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`job ${id} did not finish`);
}

async function lastJobId(customerId: number): Promise<string> {
  const r = await t.ctx.db.query<{ id: string }>(
    'select id from jobs where customer_id = $1 order by created_at desc, id desc limit 1',
    [customerId],
  );
  return r.rows[0]!.id;
}

async function codeRows(jobId: string) {
  const r = await t.ctx.db.query<{ code_encrypted: string | null; code_length: number | null }>(
    'select code_encrypted, code_length from job_codes where job_id = $1 order by position',
    [jobId],
  );
  return r.rows;
}

/** Everything retention must never change: ledger, daily usage, the jobs' billing counters. */
async function moneySnapshot(customerId: number) {
  const q = (sql: string) => t.ctx.db.query(sql, [customerId]).then((r) => r.rows);
  return {
    ledger: await q('select * from wallet_ledger where customer_id = $1 order by id'),
    usage: await q('select * from daily_usage where customer_id = $1 order by 1, 2, 3'),
    accounts: await q('select * from accounts where customer_id = $1 order by mode'),
    billing: await q(
      `select id, hold_day, rate_micros, hold_included, hold_wallet, captured_included, captured_wallet,
              released_included, released_wallet from jobs where customer_id = $1 order by id`,
    ),
  };
}

test('RETENTION_DAYS: default 30, at least 1, one clear line otherwise', () => {
  expect(loadConfig({}).RETENTION_DAYS).toBe(30);
  expect(loadConfig({ RETENTION_DAYS: '1' }).RETENTION_DAYS).toBe(1);
  expect(loadConfig({ RETENTION_DAYS: '365' }).RETENTION_DAYS).toBe(365);
  for (const bad of ['0', '-1', '1.5', 'abc', '30d', '9999999']) {
    expect(() => loadConfig({ RETENTION_DAYS: bad }), bad).toThrow(
      /^invalid configuration: RETENTION_DAYS must be a whole number of days, at least 1$/,
    );
  }
});

describe('the retention sweep', () => {
  test('old finished jobs lose their ciphertexts and show caller codes masked; young, unfinished and quarantined ones keep them; webhooks of the period deleted; money untouched', async () => {
    const m = await createMerchant(t, { topup: { test: 10 } });
    const lookup: LookupFn = async () => [{ address: '127.0.0.1', family: 4 }];
    // Port 1 refuses: each delivery attempt fails and is recorded (an attempt row).
    await registerWebhook(
      { db: t.ctx.db, clock, codeKey: t.ctx.codeKey, allowPrivate: true, lookup },
      { customerId: m.customerId, mode: 'test' },
      { url: 'https://webhook-receiver.test:1/hook' },
    );

    // Day 0: an async caller-codes job (with a webhook event and one failed attempt), a sync stock
    // job, a sync job whose code is quarantined, and a job left running.
    const okCode = uniqueCode('OK', '-OLD');
    const failCode = uniqueCode('FAIL', '-OLD');
    const oldJob = await asyncJob(m, [okCode, failCode]);
    await deliverDueEvents(t.ctx, { lookup });
    const before = (await getJob(m.key, oldJob)).json();
    expect(before.result.codes.map((c: { code: string }) => c.code)).toEqual([okCode, failCode]);

    // A second apart, so "the customer's latest job" is one job.
    clock.advance(1000);
    const stockCode = uniqueCode('OK', '-STK');
    await addStock(t, m.customerId, 'test', '60', [stockCode]);
    expect((await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 1 } })).statusCode).toBe(200);
    const stockJob = await lastJobId(m.customerId);

    clock.advance(1000);
    expect((await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode('TIMEOUT')] })).statusCode).toBe(
      422,
    );
    const quarantinedJob = await lastJobId(m.customerId);

    const body = { player_id: PLAYER, codes: [uniqueCode('OK', '-RUN')] };
    const running = await startRedeem(
      t.ctx,
      { customerId: m.customerId, mode: 'test' },
      {
        idempotencyKey: 'left-running',
        fingerprint: requestFingerprint('POST', '/v1/redeem', body),
        request: parseRedeemRequest(body),
        requestId: 'req_left_running',
      },
    );
    expect(running.kind).toBe('started');
    const runningJob = (running as { jobId: string }).jobId;

    // Day 29: a young job (and its event). A sweep now drops nothing.
    clock.advance(29 * DAY);
    const youngCode = uniqueCode('OK', '-YOUNG');
    const youngJob = await asyncJob(m, [youngCode]);
    expect(await sweepRetention(t.ctx.db, clock, 30)).toEqual({
      jobs: 0,
      codes: 0,
      webhookEvents: 0,
      webhookAttempts: 0,
      batches: 0,
    });

    // Day 31: the day-0 jobs are old, the day-29 one is not.
    clock.advance(2 * DAY);
    const money = await moneySnapshot(m.customerId);
    const sweep = await sweepRetention(t.ctx.db, clock, 30);
    expect(sweep).toEqual({
      jobs: 2, // the async job and the stock job; not the quarantined, running or young ones
      codes: 2 + 1 + 1, // two caller codes, the stock job's code and its consumed stock row
      webhookEvents: 1,
      webhookAttempts: 1,
      batches: 2,
    });
    expect(await moneySnapshot(m.customerId)).toEqual(money);

    expect(await codeRows(oldJob)).toEqual([
      { code_encrypted: null, code_length: okCode.length },
      { code_encrypted: null, code_length: failCode.length },
    ]);
    expect(await codeRows(stockJob)).toEqual([{ code_encrypted: null, code_length: stockCode.length }]);
    const stockRow = await t.ctx.db.query<{ state: string; code_encrypted: string | null }>(
      'select state, code_encrypted from stock_codes where customer_id = $1',
      [m.customerId],
    );
    expect(stockRow.rows).toEqual([{ state: 'consumed', code_encrypted: null }]);
    for (const kept of [quarantinedJob, runningJob, youngJob]) {
      for (const row of await codeRows(kept)) expect(row.code_encrypted, kept).toMatch(/^v2:/);
    }

    // The job view: the same body as before, only the caller codes masked now.
    const after = (await getJob(m.key, oldJob)).json();
    const maskedCodes = before.result.codes.map((c: { code: string }) => ({ ...c, code: masked(c.code) }));
    expect(after).toEqual({
      ...before,
      request_id: after.request_id,
      result: { ...before.result, codes: maskedCodes },
    });
    expect(JSON.stringify(after)).not.toContain(okCode);
    expect((await getJob(m.key, youngJob)).json().result.codes[0].code).toBe(youngCode);

    // Admin: the job and its attempts stay, the webhook history of the period is gone.
    const admin = await adminJob(oldJob);
    expect(admin.job.codes_dropped_at).toBe(isoUtc(clock.now()));
    expect(admin.attempts.map((a: { code_last4: string }) => a.code_last4)).toEqual([
      okCode.slice(-4),
      failCode.slice(-4),
    ]);
    expect(admin.webhooks).toEqual([]);
    expect((await adminJob(youngJob)).webhooks).toHaveLength(1);
    expect((await adminJob(youngJob)).job.codes_dropped_at).toBeNull();
    const events = await t.ctx.db.query<{ job_id: string }>(
      'select job_id from webhook_events where customer_id = $1',
      [m.customerId],
    );
    expect(events.rows).toEqual([{ job_id: youngJob }]);

    // A second sweep finds nothing more; once the quarantined code is settled, its job is swept.
    expect((await sweepRetention(t.ctx.db, clock, 30)).jobs).toBe(0);
    const settle = await t.admin.inject({
      method: 'POST',
      url: `/admin/v1/jobs/${quarantinedJob}/codes/0/settle`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { outcome: 'unused' },
    });
    expect(settle.statusCode, settle.body).toBe(200);
    expect(await sweepRetention(t.ctx.db, clock, 30)).toMatchObject({ jobs: 1, codes: 1 });
    for (const row of await codeRows(runningJob)) expect(row.code_encrypted).toMatch(/^v2:/);
  });

  test('batches are bounded: at most `batch` jobs per transaction and `maxBatches` per call; the next call goes on', async () => {
    // Whatever the first test left is swept first, so this test counts only its own jobs.
    clock.advance(10 * DAY);
    await sweepRetention(t.ctx.db, clock, 1, { maxBatches: 1000 });
    const m = await createMerchant(t, { topup: { test: 10 } });
    const jobs: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      const res = await redeem(t, m.key, {
        player_id: PLAYER,
        codes: [uniqueCode('OK'), uniqueCode('FAIL')],
      });
      expect(res.statusCode).toBe(200);
      jobs.push(await lastJobId(m.customerId));
    }
    clock.advance(3 * DAY);
    const dropped = async () =>
      (
        await t.ctx.db.query<{ id: string }>(
          'select id from jobs where customer_id = $1 and codes_dropped_at is not null order by id',
          [m.customerId],
        )
      ).rows.map((r) => r.id);

    // One transaction of two jobs: the two oldest.
    expect(await sweepRetention(t.ctx.db, clock, 2, { batch: 2, maxBatches: 1 })).toEqual({
      jobs: 2,
      codes: 4,
      webhookEvents: 0,
      webhookAttempts: 0,
      batches: 1,
    });
    expect(await dropped()).toEqual(jobs.slice(0, 2).sort());
    // The next call goes on: two more transactions (2 + 1 jobs), then it stops by itself.
    expect(await sweepRetention(t.ctx.db, clock, 2, { batch: 2, maxBatches: 10 })).toMatchObject({
      jobs: 3,
      codes: 6,
      batches: 2,
    });
    expect(await dropped()).toEqual([...jobs].sort());
  });

  test('a retention below one day is refused', async () => {
    await expect(sweepRetention(t.ctx.db, clock, 0)).rejects.toThrow(/at least 1 day/);
  });
});
