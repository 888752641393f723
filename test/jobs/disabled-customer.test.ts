// A disabled customer's async jobs (docs/reference/jobs.md#disabled-customers): a queued job ends `failed` with
// `unknown_customer`, its holds released and its stock available again, nothing sent to the
// upstream and no webhook event; a running job finishes the codes already out and sends no more;
// the delivery worker sends none of the customer's pending events.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Activator } from '../../src/core/activator.ts';
import { claimJob } from '../../src/core/jobs/states.ts';
import { runJob } from '../../src/core/jobs/worker.ts';
import { redeemJobRunner } from '../../src/core/redeem/job-runner.ts';
import { deliverDueEvents } from '../../src/core/webhooks/delivery.ts';
import { adminCall, bearer, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { addStock, redeem, uniqueCode, walletInvariants } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
    jobWorker: false,
    sandboxSlowMs: 600,
  });
});
afterAll(() => t.close());

const PLAYER = '5123456789';

/** The test app's context with an activator that records which codes reached it (then the sandbox). */
function recordingDeps() {
  const sent: string[] = [];
  const activatorFor = (mode: 'live' | 'test'): Activator => {
    const real = t.ctx.activatorFor(mode);
    return {
      ...real,
      activate: (req) => {
        sent.push(req.code);
        return real.activate(req);
      },
    };
  };
  return { deps: { ...t.ctx, activatorFor }, sent };
}

async function merchantWithWebhook() {
  const m = await createMerchant(t, { plan: { daily_limit: 1, per_request_usd: '0.5' }, topup: { test: 5 } });
  const res = await t.api.inject({
    method: 'POST',
    url: '/v1/webhook',
    headers: bearer(m.key),
    payload: { url: 'https://127.0.0.1:9/hook' },
  });
  expect(res.statusCode, res.body).toBe(200);
  return m;
}

async function jobRows(jobId: string) {
  const job = await t.ctx.db.query<{ status: string; error: unknown }>(
    'select status, error from jobs where id = $1',
    [jobId],
  );
  const codes = await t.ctx.db.query<{ state: string; status: string | null }>(
    'select state, status from job_codes where job_id = $1 order by position',
    [jobId],
  );
  const events = await t.ctx.db.query('select id from webhook_events where job_id = $1', [jobId]);
  return { job: job.rows[0], codes: codes.rows, events: events.rows.length };
}

const disable = (customerId: number) => adminCall(t, 'POST', `/admin/v1/customers/${customerId}/disable`);

describe('a disabled customer', () => {
  test('its queued job ends failed unknown_customer: holds released, stock back, nothing sent, no event', async () => {
    const m = await merchantWithWebhook();
    const stock = [uniqueCode('OK'), uniqueCode('OK')];
    await addStock(t, m.customerId, 'test', '60', stock);
    const res = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 2 }, async: true });
    expect(res.statusCode, res.body).toBe(202);
    const jobId = res.json().job_id as string;
    expect((await walletInvariants(t, m.customerId, 'test')).held).toBe(500_000);

    await disable(m.customerId);
    const { deps, sent } = recordingDeps();
    const claimed = await claimJob(deps);
    expect(claimed?.job.id).toBe(jobId);
    await runJob(deps, redeemJobRunner, jobId, {}, claimed!);

    expect(sent).toEqual([]);
    expect(await jobRows(jobId)).toEqual({
      job: {
        status: 'failed',
        error: {
          error_code: 'unknown_customer',
          message:
            'the customer was disabled; codes not yet sent were not sent and their holds were released',
        },
      },
      codes: [
        { state: 'pending', status: null },
        { state: 'pending', status: null },
      ],
      events: 0,
    });
    expect(await walletInvariants(t, m.customerId, 'test')).toEqual({
      balance: 5_000_000,
      held: 0,
      ledger: 5_000_000,
      open: 0,
    });
    const states = await t.ctx.db.query<{ state: string }>(
      `select state from stock_codes where customer_id = $1 and mode = 'test'`,
      [m.customerId],
    );
    expect(states.rows).toEqual([{ state: 'available' }, { state: 'available' }]);
  });

  test('its running job finishes the code already out and sends no other', async () => {
    const m = await merchantWithWebhook();
    const codes = [`${uniqueCode('SLOW')}-60`, `${uniqueCode('OK')}-60`, `${uniqueCode('OK')}-60`];
    const res = await redeem(t, m.key, { player_id: PLAYER, codes, async: true });
    expect(res.statusCode, res.body).toBe(202);
    const jobId = res.json().job_id as string;
    const { deps, sent } = recordingDeps();
    const claimed = await claimJob(deps);
    expect(claimed?.job.id).toBe(jobId);
    const run = runJob(deps, redeemJobRunner, jobId, { codeConcurrency: 1 }, claimed!);
    // The SLOW code is out with the upstream (answered 600 ms later): disable the customer now.
    for (let i = 0; i < 100 && sent.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(sent).toEqual([codes[0]]);
    await disable(m.customerId);
    await run;

    expect(sent).toEqual([codes[0]]);
    const rows = await jobRows(jobId);
    expect(rows).toMatchObject({
      job: { status: 'failed', error: { error_code: 'unknown_customer' } },
      codes: [
        { state: 'done', status: 'activated' },
        { state: 'pending', status: null },
        { state: 'pending', status: null },
      ],
      events: 0,
    });
    // The code out was billed (the include); the other two holds were released.
    expect(await walletInvariants(t, m.customerId, 'test')).toEqual({
      balance: 5_000_000,
      held: 0,
      ledger: 5_000_000,
      open: 0,
    });
    const billed = await t.ctx.db.query<{ included: number; wallet: number }>(
      'select captured_included::int as included, captured_wallet::int as wallet from jobs where id = $1',
      [jobId],
    );
    expect(billed.rows).toEqual([{ included: 1, wallet: 0 }]);
  });

  test('its pending webhook events are not sent', async () => {
    const m = await merchantWithWebhook();
    const res = await redeem(t, m.key, { player_id: PLAYER, codes: [uniqueCode('OK')], async: true });
    const jobId = res.json().job_id as string;
    const claimed = await claimJob(t.ctx);
    expect(claimed?.job.id).toBe(jobId);
    await runJob(t.ctx, redeemJobRunner, jobId, {}, claimed!);
    // The job completed while the customer was active: its event waits in the outbox.
    expect(await jobRows(jobId)).toMatchObject({ job: { status: 'completed' }, events: 1 });
    await disable(m.customerId);
    // One pass of the webhook worker: nothing of the disabled customer is claimed.
    expect(await deliverDueEvents(t.ctx, {})).toBe(0);
    const evt = await t.ctx.db.query('select state, attempts from webhook_events where job_id = $1', [jobId]);
    expect(evt.rows).toEqual([{ state: 'pending', attempts: 0 }]);
  });
});
