// Async redeems and GET /v1/jobs/{id} (docs/reference/redeem.md#async-redeems "Async", 4 and 5).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { claimJob } from '../../src/core/jobs/states.ts';
import { runJob } from '../../src/core/jobs/worker.ts';
import { redeemJobRunner } from '../../src/core/redeem/job-runner.ts';
import {
  ADMIN_TOKEN,
  bearer,
  createMerchant,
  createTestApp,
  issueTestKey,
  type TestApp,
} from '../helpers/app.ts';
import { addStock, me, redeem, uniqueCode, walletInvariants } from '../helpers/redeem.ts';

let t: TestApp;
let closed: Promise<void> | undefined;
const closeShared = () => {
  closed ??= t.close();
  return closed;
};
beforeAll(async () => {
  t = await createTestApp({ sandboxSlowMs: 400 });
});
afterAll(closeShared);

const PLAYER = '5123456789';
const getJob = (key: string, id: string) =>
  t.api.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: bearer(key) });

async function waitForJob(key: string, id: string, until = (s: string) => s !== 'queued' && s !== 'running') {
  for (let i = 0; i < 200; i++) {
    const res = await getJob(key, id);
    if (until(res.json().status)) return res;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`job ${id} did not finish`);
}

describe('async redeem', () => {
  test('202 at once, then the job completes with the full result; the key replays the 202', async () => {
    const m = await createMerchant(t, {
      plan: { daily_limit: 1, per_request_usd: '0.5' },
      topup: { test: 2 },
    });
    const body = {
      player_id: PLAYER,
      codes: [`${uniqueCode('SLOW')}-325`, uniqueCode('FAIL')],
      async: true,
      reference: 'ord-7',
    };
    const res = await redeem(t, m.key, body, 'async-1');
    expect(res.statusCode).toBe(202);
    const accepted = res.json();
    expect(accepted).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      job_id: expect.stringMatching(/^job_[A-Za-z0-9]{20,}$/),
      status: 'queued',
    });
    expect(res.headers.location).toBe(`/v1/jobs/${accepted.job_id}`);
    expect(res.headers['svc-cost']).toBe('0');

    const running = await waitForJob(m.key, accepted.job_id, (s) => s === 'running');
    expect(running.headers['retry-after']).toBe('1');
    expect(running.json()).toMatchObject({
      status: 'running',
      result: null,
      error: null,
      progress: { total: 2 },
    });

    const replay = await redeem(t, m.key, body, 'async-1');
    expect(replay.statusCode).toBe(202);
    expect(replay.body).toBe(res.body);
    expect(replay.headers['svc-idempotent-replay']).toBe('true');
    expect(replay.headers.location).toBe(res.headers.location);

    const done = await waitForJob(m.key, accepted.job_id);
    expect(done.statusCode).toBe(200);
    expect(done.headers['retry-after']).toBeUndefined();
    const job = done.json();
    expect(job).toEqual({
      ok: true,
      request_id: done.headers['x-request-id'],
      job_id: accepted.job_id,
      status: 'completed',
      created_at: expect.stringMatching(/Z$/),
      started_at: expect.stringMatching(/Z$/),
      finished_at: expect.stringMatching(/Z$/),
      player_id: PLAYER,
      source: 'codes',
      reference: 'ord-7',
      progress: { total: 2, done: 2 },
      result: {
        ok: true,
        request_id: accepted.request_id,
        job_id: accepted.job_id,
        player_id: PLAYER,
        mode: 'test',
        source: 'codes',
        reference: 'ord-7',
        codes: [
          {
            code: body.codes[0],
            category: '325',
            uc: 325,
            status: 'activated',
            error_code: '',
            disposition: 'consumed',
            billed: true,
          },
          {
            code: body.codes[1],
            category: null,
            uc: null,
            status: 'failed',
            error_code: 'ACTIVATION_FAILED',
            disposition: 'kept',
            billed: false,
          },
        ],
        summary: { activated: 1, code_used: 0, invalid_code: 0, bad_player: 0, failed: 1 },
        uc_delivered: 325,
        billed_requests: 1,
        refunded_requests: 1,
      },
      error: null,
    });
    // 1 included + 1 wallet held; one billed (include), one refunded (wallet first).
    expect((await me(t, m.key)).quota).toEqual({
      daily_limit: 1,
      used_today: 1,
      remaining_today: 0,
      overage_today: 0,
    });
    expect(await walletInvariants(t, m.customerId, 'test')).toEqual({
      balance: 2_000_000,
      held: 0,
      ledger: 2_000_000,
      open: 0,
    });
    // Still the 202 after completion.
    expect((await redeem(t, m.key, body, 'async-1')).statusCode).toBe(202);
  });

  test('a job where every code failed is completed, not failed', async () => {
    const m = await createMerchant(t);
    await addStock(t, m.customerId, 'test', '60', [uniqueCode('USED')]);
    const res = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 1 }, async: true });
    const done = (await waitForJob(m.key, res.json().job_id)).json();
    expect(done.status).toBe('completed');
    expect(done.result.ok).toBe(false);
    expect(done.result.codes[0]).toMatchObject({ status: 'code_used', disposition: 'deleted', billed: true });
  });

  test('refusals of an async redeem are the sync ones (no job, no key)', async () => {
    const m = await createMerchant(t, { plan: null });
    const res = await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode()], async: true });
    expect(res.statusCode).toBe(402);
    expect(res.json().error_code).toBe('no_plan');
  });
});

describe('GET /v1/jobs/{id}', () => {
  test('only the owner, in the same mode, sees a job; everything else is 404', async () => {
    const m = await createMerchant(t, { topup: { live: 1 } });
    const res = await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode()], async: true });
    const id = res.json().job_id as string;
    await waitForJob(m.key, id);

    const readOnly = await issueTestKey(t, m.customerId, { scopes: ['read'] });
    expect((await getJob(readOnly.key, id)).statusCode).toBe(200);
    const noScope = await issueTestKey(t, m.customerId, { scopes: [] });
    expect((await getJob(noScope.key, id)).json().error_code).toBe('scope_denied');

    const live = await issueTestKey(t, m.customerId, { mode: 'live' });
    const other = await createMerchant(t);
    for (const [key, jobId] of [
      [live.key, id],
      [other.key, id],
      [m.key, 'job_doesnotexistdoesnotexist'],
      [m.key, 'nonsense'],
    ] as const) {
      const r = await getJob(key, jobId);
      expect(r.statusCode).toBe(404);
      expect(r.json()).toEqual({
        ok: false,
        error_code: 'not_found',
        message: expect.any(String),
        request_id: r.headers['x-request-id'],
      });
    }
    // A sync redeem's internal job is not a job of the API.
    await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode()] });
    const sync = await t.ctx.db.query<{ id: string }>(
      'select id from jobs where customer_id = $1 and not is_async order by created_at desc limit 1',
      [m.customerId],
    );
    expect((await getJob(m.key, sync.rows[0]!.id)).statusCode).toBe(404);
  });
});

describe('GET /admin/v1/jobs/{id}', () => {
  test('the job with its billing and per-code attempts, codes shown by their last 4 characters only', async () => {
    const m = await createMerchant(t);
    const code = uniqueCode();
    const res = await redeem(t, m.key, { player_id: PLAYER, codes: [code], async: true });
    const id = res.json().job_id as string;
    await waitForJob(m.key, id);
    const admin = await t.admin.inject({
      method: 'GET',
      url: `/admin/v1/jobs/${id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(admin.statusCode).toBe(200);
    expect(admin.body).not.toContain(code);
    const body = admin.json();
    expect(body.job).toMatchObject({
      job_id: id,
      customer_id: m.customerId,
      mode: 'test',
      async: true,
      status: 'completed',
    });
    expect(body.billing).toMatchObject({
      hold_included: 1,
      hold_wallet: 0,
      captured_included: 1,
      released_wallet: 0,
    });
    expect(body.attempts).toEqual([
      expect.objectContaining({
        position: 0,
        code_last4: code.slice(-4),
        state: 'done',
        status: 'activated',
        billed: true,
      }),
    ]);
    expect(body.webhooks).toEqual([]);
    const unknown = await t.admin.inject({
      method: 'GET',
      url: '/admin/v1/jobs/job_nope',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error_code).toBe('not_found');
  });
});

describe('a job that crashes', () => {
  // On PostgreSQL every app of this file shares one database: the shared app's worker would
  // claim the job this test wants to run by hand.
  beforeAll(closeShared);
  test('becomes failed with internal, every hold released, redeem.failed in the outbox', async () => {
    const paused = await createTestApp({ jobWorker: false });
    try {
      const m = await createMerchant(paused, {
        plan: { daily_limit: 1, per_request_usd: '0.5' },
        topup: { test: 3 },
      });
      const hook = await paused.api.inject({
        method: 'POST',
        url: '/v1/webhook',
        headers: { ...bearer(m.key), 'content-type': 'application/json' },
        payload: { url: 'https://8.8.8.8/hook' },
      });
      expect(hook.statusCode).toBe(200);
      const body = { player_id: PLAYER, codes: [uniqueCode(), uniqueCode(), uniqueCode()], async: true };
      const res = await redeem(paused, m.key, body, 'crash-key');
      const id = res.json().job_id as string;
      expect((await me(paused, m.key)).quota).toMatchObject({ used_today: 3, overage_today: 2 });
      // A row the job cannot read (its stored code does not decrypt): running it throws.
      await paused.ctx.db.query(
        `update job_codes set code_encrypted = 'v1:AAAA' where job_id = $1 and position = 1`,
        [id],
      );
      const claimed = await claimJob(paused.ctx);
      expect(claimed?.job.id).toBe(id);
      // The claim hands the run the job with its codes, the unreadable one among them.
      expect(claimed?.codes.map((c) => c.position)).toEqual([0, 1, 2]);
      await runJob(paused.ctx, redeemJobRunner, id, {}, claimed!);

      const job = (await getJobOn(paused, m.key, id)).json();
      expect(job.status).toBe('failed');
      expect(job.error).toMatchObject({
        ok: false,
        error_code: 'internal',
        job_id: id,
        request_id: res.json().request_id,
      });
      expect(job.result).toBeNull();
      // The other two codes went out together with it (5 at once) and were billed: one from the
      // include, one from the wallet; the unreadable one was released.
      expect(job.progress).toEqual({ total: 3, done: 2 });
      expect((await me(paused, m.key)).quota).toMatchObject({ used_today: 2, overage_today: 1 });
      expect(await walletInvariants(paused, m.customerId, 'test')).toEqual({
        balance: 2_500_000,
        held: 0,
        ledger: 2_500_000,
        open: 0,
      });
      const events = await paused.ctx.db.query<{ event: string }>(
        'select event from webhook_events where job_id = $1',
        [id],
      );
      expect(events.rows).toEqual([{ event: 'redeem.failed' }]);
      // The key still replays the 202 for a failed job.
      const replay = await redeem(paused, m.key, body, 'crash-key');
      expect(replay.statusCode).toBe(202);
      expect(replay.headers['svc-idempotent-replay']).toBe('true');
    } finally {
      await paused.close();
    }
  });
});

const getJobOn = (app: TestApp, key: string, id: string) =>
  app.api.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: bearer(key) });
