// A phase 1 whose commit could not be confirmed (the connection died under it): if it committed
// after all, its job holds codes marked `sending` that this process never sent. They go back to
// pending and the job is settled as failed (holds released, key released), so the retry with the
// same key sends them; nothing is quarantined, nothing billed.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { newRequestId } from '../../src/core/ids.ts';
import { parseRedeemRequest, requestFingerprint } from '../../src/core/redeem/request.ts';
import { settleUnconfirmedStart } from '../../src/core/redeem/settle.ts';
import { startRedeem } from '../../src/core/redeem/start.ts';
import { createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { me, redeem, uniqueCode, walletInvariants } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
});
afterAll(() => t.close());

test('a committed start whose answer was lost: codes back to pending, job failed, the retry sends them once', async () => {
  const m = await createMerchant(t, { plan: { daily_limit: 1, per_request_usd: '0.5' }, topup: { test: 3 } });
  const body = { player_id: '5123456789', codes: [`${uniqueCode('OKAY')}-60`, `${uniqueCode('OKAY')}-325`] };
  // Phase 1 committed (as its lost answer would have left it): both codes marked sending.
  const started = await startRedeem(
    t.ctx,
    { customerId: m.customerId, mode: 'test' },
    {
      idempotencyKey: 'lost-answer',
      fingerprint: requestFingerprint('POST', '/v1/redeem', body),
      request: parseRedeemRequest(body),
      requestId: newRequestId(),
    },
  );
  expect(started.kind).toBe('started');
  const jobId = (started as { jobId: string }).jobId;
  const states = async () =>
    (
      await t.ctx.db.query<{ state: string }>(
        'select state from job_codes where job_id = $1 order by position',
        [jobId],
      )
    ).rows.map((r) => r.state);
  expect(await states()).toEqual(['sending', 'sending']);
  expect((await me(t, m.key)).quota).toMatchObject({ used_today: 2, overage_today: 1 });

  await settleUnconfirmedStart(t.ctx, { customerId: m.customerId, id: jobId });
  expect(await states()).toEqual(['pending', 'pending']);
  const job = await t.ctx.db.query<{ status: string }>('select status from jobs where id = $1', [jobId]);
  expect(job.rows[0]!.status).toBe('failed');
  expect((await me(t, m.key)).quota).toMatchObject({ used_today: 0, overage_today: 0 });
  expect(await walletInvariants(t, m.customerId, 'test')).toMatchObject({ held: 0, open: 0 });
  const quarantined = await t.ctx.db.query(
    `select 1 from job_codes where job_id = $1 and disposition = 'quarantined'`,
    [jobId],
  );
  expect(quarantined.rows).toEqual([]);

  // The retry with the same key: the key was released, both codes are sent now and billed once.
  const retry = await redeem(t, m.key, body, 'lost-answer');
  expect(retry.statusCode, retry.body).toBe(200);
  expect(retry.json().codes.map((c: { status: string }) => c.status)).toEqual(['activated', 'activated']);
  expect(retry.headers['svc-cost']).toBe('2');
  expect((await me(t, m.key)).quota).toMatchObject({ used_today: 2, overage_today: 1 });
  expect(await walletInvariants(t, m.customerId, 'test')).toEqual({
    balance: 2_500_000,
    held: 0,
    ledger: 2_500_000,
    open: 0,
  });
});

test('a start that did not commit: nothing to settle, nothing written', async () => {
  const before = await t.ctx.db.query<{ n: number }>('select count(*)::int as n from jobs');
  await settleUnconfirmedStart(t.ctx, { customerId: 1, id: 'job_neverWrittenAtAll00000' });
  const after = await t.ctx.db.query<{ n: number }>('select count(*)::int as n from jobs');
  expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
});
