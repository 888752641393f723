// Stock codes are never shown in full (docs/reference/redeem.md#stock-codes-are-masked): in sync results, replays, GET /v1/jobs/{id},
// webhook payloads (redeem.completed and redeem.failed's error.codes, through a real HTTPS
// receiver) and the admin job view, a stock code is `*` but its last 4 characters, same length.
// Caller codes are echoed as sent. A packs redeem for a player that does not exist (every code
// returned to stock) reveals no code.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { maskCode } from '../../src/core/crypto/code-crypto.ts';
import { newRequestId } from '../../src/core/ids.ts';
import { INSTANCE_ID, LEASE_MS } from '../../src/core/instance.ts';
import { loadJobWithCodes } from '../../src/core/jobs/jobs.ts';
import { finishAsyncJob } from '../../src/core/jobs/states.ts';
import { recordOutcome } from '../../src/core/redeem/outcome.ts';
import { parseRedeemRequest, requestFingerprint } from '../../src/core/redeem/request.ts';
import { executeJob } from '../../src/core/redeem/run.ts';
import { settleStoppedJob } from '../../src/core/redeem/settle.ts';
import { startRedeem } from '../../src/core/redeem/start.ts';
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
import {
  createTestCa,
  type Receiver,
  startReceiver,
  TEST_HOST_NAME,
  type TestCa,
} from '../helpers/https-receiver.ts';
import { addStock, redeem, uniqueCode } from '../helpers/redeem.ts';

const PLAYER = '5123456789';
const NO_PLAYER = '0001234567'; // the sandbox answers bad_player (CHARACTER_NOT_FOUND)
const masked = (code: string) => maskCode(code.slice(-4), code.length);

let t: TestApp;
let clock: ManualClock;
let ca: TestCa;
let receiver: Receiver;
beforeAll(async () => {
  // A day ahead: on a shared PostgreSQL no other process (real clock) finds these events due.
  clock = new ManualClock(new Date(Date.now() + 86_400_000));
  t = await createTestApp({ clock, jobWorker: false, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  ca = createTestCa();
  receiver = await startReceiver(ca);
  receiver.nowSec = () => Math.floor(clock.now().getTime() / 1000);
});
afterAll(async () => {
  await receiver?.close();
  ca?.remove();
  await t?.close();
});

/** Stock codes with long distinct prefixes, so a leak of any part before the last 4 is visible. */
const stockCodes = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => uniqueCode('OK', `-SECRETPART-${tag}${i}`));

/** Asserts no code appears in `text`, nor any 8 characters of it other than its last 4. */
function expectNoCodeIn(text: string, codes: string[]) {
  for (const code of codes) {
    expect(text).not.toContain(code);
    expect(text).not.toContain(code.slice(0, -4));
    expect(text).not.toContain(code.slice(-8));
  }
}

async function adminJob(id: string) {
  const res = await t.admin.inject({
    method: 'GET',
    url: `/admin/v1/jobs/${id}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(res.statusCode).toBe(200);
  return res;
}

async function latestJob(customerId: number): Promise<string> {
  const r = await t.ctx.db.query<{ id: string }>(
    'select id from jobs where customer_id = $1 order by created_at desc, id desc limit 1',
    [customerId],
  );
  return r.rows[0]!.id;
}

/** Starts an async job, then runs it as the worker does (claim, run), leaving it to `finish`. */
/**
 * Queues an async redeem and runs it as the worker does (`finish`: the commit of its last outcome
 * finishes it), or records every code's outcome without finishing the job (`finish: false`: a
 * run whose last two outcomes were recorded at the same moment, and that died before finishing).
 */
async function runAsync(m: Merchant, body: Record<string, unknown>, opts = { finish: true }) {
  const request = { player_id: PLAYER, async: true, ...body };
  const started = await startRedeem(
    t.ctx,
    { customerId: m.customerId, mode: 'test' },
    {
      idempotencyKey: `mask-${Math.random().toString(36).slice(2)}`,
      fingerprint: requestFingerprint('POST', '/v1/redeem', request),
      request: parseRedeemRequest(request),
      requestId: newRequestId(),
    },
  );
  const jobId = (started as { jobId: string }).jobId;
  // The worker's claim: running under this process's lease.
  await t.ctx.db.query(
    `update jobs set status = 'running', lease_owner = $2, lease_expires_at = $3, started_at = $4 where id = $1`,
    [jobId, INSTANCE_ID, new Date(clock.now().getTime() + LEASE_MS), clock.now()],
  );
  if (opts.finish) {
    expect((await executeJob(t.ctx, jobId)).finished).toBe(true);
    // Nothing left to finish.
    expect(await finishAsyncJob(t.ctx, { id: jobId, customerId: m.customerId })).toBe(false);
  } else {
    const loaded = (await loadJobWithCodes(t.ctx.db, jobId, null))!;
    for (const row of loaded.codes) {
      await recordOutcome(t.ctx, loaded.job, row, { status: 'activated', category: '60', uc: 60 }, 'pending');
    }
  }
  return jobId;
}

describe('sync results and replays', () => {
  test('a packs redeem answers its stock codes masked; the replay is byte-identical', async () => {
    const m = await createMerchant(t, { topup: { test: 5 } });
    const codes = stockCodes(3, 'SYNC');
    await addStock(t, m.customerId, 'test', '60', codes);
    const first = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 3 } }, 'mask-sync-1');
    expect(first.statusCode).toBe(200);
    expect(first.json().codes).toEqual(
      codes.map((code) => ({
        code: masked(code),
        category: '60',
        uc: 60,
        status: 'activated',
        error_code: '',
        disposition: 'consumed',
        billed: true,
      })),
    );
    expect(first.json().codes[0].code).toMatch(/^\*+[A-Z0-9-]{4}$/);
    expectNoCodeIn(first.body, codes);

    const replay = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 3 } }, 'mask-sync-1');
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['svc-idempotent-replay']).toBe('true');
    expect(replay.body).toBe(first.body);

    const admin = await adminJob(await latestJob(m.customerId));
    expectNoCodeIn(admin.body, codes);
    expect(admin.json().attempts.map((a: { code_last4: string }) => a.code_last4)).toEqual(
      codes.map((c) => c.slice(-4)),
    );
  });

  test('a uc redeem masks too', async () => {
    const m = await createMerchant(t, { topup: { test: 5 } });
    const small = stockCodes(1, 'UC60');
    const big = stockCodes(1, 'UC325');
    await addStock(t, m.customerId, 'test', '60', small);
    await addStock(t, m.customerId, 'test', '325', big);
    const res = await redeem(t, m.key, { player_id: PLAYER, uc: 385 });
    expect(res.statusCode).toBe(200);
    expect(res.json().codes.map((c: { code: string }) => c.code)).toEqual([
      masked(big[0]!),
      masked(small[0]!),
    ]);
    expectNoCodeIn(res.body, [...small, ...big]);
  });

  test('caller codes are echoed as sent, in the result and its replay', async () => {
    const m = await createMerchant(t, { topup: { test: 5 } });
    const codes = [uniqueCode('OK'), uniqueCode('FAIL')];
    const first = await redeem(t, m.key, { player_id: PLAYER, codes }, 'mask-caller-1');
    expect(first.statusCode).toBe(200);
    expect(first.json().codes.map((c: { code: string }) => c.code)).toEqual(codes);
    const replay = await redeem(t, m.key, { player_id: PLAYER, codes }, 'mask-caller-1');
    expect(replay.body).toBe(first.body);
    // The admin view shows caller codes by their last 4 characters only, as ever.
    expectNoCodeIn((await adminJob(await latestJob(m.customerId))).body, codes);
  });

  test('a packs redeem for a player that does not exist returns every code to stock and reveals none', async () => {
    const m = await createMerchant(t, { topup: { test: 5 } });
    const codes = stockCodes(50, 'BADP');
    await addStock(t, m.customerId, 'test', '60', codes);
    const res = await redeem(t, m.key, { player_id: NO_PLAYER, packs: { '60': 50 } });
    expect(res.statusCode).toBe(422);
    const body = res.json();
    expect(body).toMatchObject({ ok: false, billed_requests: 0, refunded_requests: 50 });
    expect(body.codes).toHaveLength(50);
    for (const [i, c] of (body.codes as { code: string; status: string; disposition: string }[]).entries()) {
      expect(c).toMatchObject({ code: masked(codes[i]!), status: 'bad_player', disposition: 'returned' });
    }
    expectNoCodeIn(res.body, codes);
    // Back in stock, still unusable to whoever holds the key: the next try shows the same masks.
    const stock = await t.api.inject({ method: 'GET', url: '/v1/stock', headers: bearer(m.key) });
    expect(stock.json().total_available).toBe(50);
    const again = await redeem(t, m.key, { player_id: NO_PLAYER, packs: { '60': 50 } });
    expectNoCodeIn(again.body, codes);
    expectNoCodeIn(t.logs.join(''), codes);
  });
});

describe('jobs and webhooks', () => {
  const lookup: LookupFn = async () => [{ address: '127.0.0.1', family: 4 }];

  async function merchantWithWebhook(path: string) {
    const m = await createMerchant(t, { topup: { test: 5 } });
    const { secret } = await registerWebhook(
      { db: t.ctx.db, clock, codeKey: t.ctx.codeKey, allowPrivate: true, lookup },
      { customerId: m.customerId, mode: 'test' },
      { url: `https://${TEST_HOST_NAME}:${receiver.port}${path}` },
    );
    return { ...m, secret };
  }

  async function deliverTo(path: string, secret: string) {
    receiver.secret = secret;
    await deliverDueEvents(t.ctx, { lookup, ca: ca.ca });
    const got = receiver.at(path);
    expect(got).toHaveLength(1);
    expect(got[0]!.verdict).toBeNull();
    return got[0]!;
  }

  test('a completed stock job: GET /v1/jobs/{id} and the redeem.completed payload show the codes masked', async () => {
    const m = await merchantWithWebhook('/completed');
    const codes = stockCodes(2, 'JOB');
    await addStock(t, m.customerId, 'test', '60', codes);
    const jobId = await runAsync(m, { packs: { '60': 2 } });

    const view = await t.api.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(m.key) });
    expect(view.statusCode).toBe(200);
    expect(view.json().result.codes.map((c: { code: string }) => c.code)).toEqual(codes.map(masked));
    expectNoCodeIn(view.body, codes);

    const delivery = await deliverTo('/completed', m.secret);
    const envelope = JSON.parse(delivery.raw.toString('utf8'));
    expect(envelope.event).toBe('redeem.completed');
    // The payload is the job's result: the same masked codes as the job view.
    expect(envelope.data).toEqual(view.json().result);
    expectNoCodeIn(delivery.raw.toString('utf8'), codes);
    expectNoCodeIn((await adminJob(jobId)).body, codes);
  });

  test('an interrupted stock job: error.codes in the job view and the redeem.failed payload are masked', async () => {
    const m = await merchantWithWebhook('/failed');
    const codes = stockCodes(2, 'INT');
    await addStock(t, m.customerId, 'test', '60', codes);
    const jobId = await runAsync(m, { packs: { '60': 2 } }, { finish: false });
    // Its process "died" after recording both outcomes: recovery marks it interrupted.
    await settleStoppedJob(t.ctx, { id: jobId, customerId: m.customerId }, 'interrupted');

    const view = await t.api.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(m.key) });
    expect(view.json()).toMatchObject({ status: 'interrupted', error: { error_code: 'job_interrupted' } });
    expect(view.json().error.codes.map((c: { code: string }) => c.code)).toEqual(codes.map(masked));
    expectNoCodeIn(view.body, codes);

    const delivery = await deliverTo('/failed', m.secret);
    const envelope = JSON.parse(delivery.raw.toString('utf8'));
    expect(envelope.event).toBe('redeem.failed');
    expect(envelope.data).toEqual(view.json().error);
    expectNoCodeIn(delivery.raw.toString('utf8'), codes);
  });

  test('an async caller-codes job echoes its codes in full in the job view and the webhook', async () => {
    const m = await merchantWithWebhook('/caller');
    const codes = [uniqueCode('OK'), uniqueCode('INVALID')];
    const jobId = await runAsync(m, { codes });
    const view = await t.api.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(m.key) });
    expect(view.json().result.codes.map((c: { code: string }) => c.code)).toEqual(codes);
    const delivery = await deliverTo('/caller', m.secret);
    expect(JSON.parse(delivery.raw.toString('utf8')).data.codes.map((c: { code: string }) => c.code)).toEqual(
      codes,
    );
  });
});
