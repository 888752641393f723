// One rule says whether an outcome is billed (isBilled, core/redeem/outcomes.ts): what
// redeem_record_outcome records and what a run counts both come from it. A bot redeem is outside
// the API quota (docs/reference/bot.md#commands), so no outcome of it is billed, on every path of a run.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Activator } from '../../src/core/activator.ts';
import { newRequestId } from '../../src/core/ids.ts';
import { INSTANCE_ID, LEASE_MS } from '../../src/core/instance.ts';
import { loadJobWithCodes } from '../../src/core/jobs/jobs.ts';
import { recordOutcome } from '../../src/core/redeem/outcome.ts';
import { BILLED_STATUSES, isBilled } from '../../src/core/redeem/outcomes.ts';
import { parseRedeemRequest, requestFingerprint } from '../../src/core/redeem/request.ts';
import { executeJob } from '../../src/core/redeem/run.ts';
import { startRedeem } from '../../src/core/redeem/start.ts';
import { CODE_STATUSES } from '../../src/core/vocabulary.ts';
import { createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { uniqueCode } from '../helpers/redeem.ts';

// No job worker: the test claims and runs its jobs itself.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
});
afterAll(() => t.close());

const PLAYER = '5123456789';

describe('one billed rule, whatever the channel', () => {
  test('an outcome of a bot redeem is never billed; of an API redeem, when its status is billed', () => {
    for (const status of CODE_STATUSES) {
      expect(isBilled(status, 'api')).toBe(BILLED_STATUSES.has(status));
      expect(isBilled(status, 'bot')).toBe(false);
    }
  });

  /** An async job of one code, claimed by this process as the worker would, on the channel given. */
  async function claimedJob(channel: 'api' | 'bot'): Promise<string> {
    const m = await createMerchant(t, { plan: { daily_limit: 10, per_request_usd: '0.5' } });
    const request = { player_id: PLAYER, async: true, codes: [uniqueCode()] };
    const started = await startRedeem(
      t.ctx,
      { customerId: m.customerId, mode: 'test' },
      {
        idempotencyKey: `billed-rule-${channel}`,
        fingerprint: requestFingerprint('POST', '/v1/redeem', request),
        request: parseRedeemRequest(request),
        requestId: newRequestId(),
      },
    );
    const jobId = (started as { jobId: string }).jobId;
    await t.ctx.db.query(
      `update jobs set status = 'running', lease_owner = $2, lease_expires_at = $3, started_at = $4, channel = $5
        where id = $1`,
      [jobId, INSTANCE_ID, new Date(t.clock.now().getTime() + LEASE_MS), t.clock.now(), channel],
    );
    return jobId;
  }

  // A run whose outcome was recorded already (its commit landed, the answer was lost) counts the
  // outcome by the rule it was recorded with: a bot redeem counts nothing, as its row says.
  test.each(['api', 'bot'] as const)(
    'a %s run counts what was recorded when the answer was lost',
    async (channel) => {
      const jobId = await claimedJob(channel);
      const sandbox = t.ctx.activatorFor('test');
      // The outcome's commit lands while the activator answers; the run's own recording finds it done.
      const recordingFirst: Activator = {
        name: 'records-first',
        async activate() {
          const { job, codes } = (await loadJobWithCodes(t.ctx.db, jobId, null))!;
          await recordOutcome(t.ctx, job, codes[0]!, { status: 'activated' }, 'sending');
          return { status: 'activated' };
        },
        status: (input) => sandbox.status(input),
        check: (input) => sandbox.check(input),
      };
      const run = await executeJob({ ...t.ctx, activatorFor: () => recordingFirst }, jobId);
      const rows = await t.ctx.db.query<{ billed: boolean }>(
        'select billed from job_codes where job_id = $1',
        [jobId],
      );
      expect(rows.rows).toEqual([{ billed: channel === 'api' }]);
      // Not finished here: the recording that landed first was not the run's own (finish: none).
      expect(run).toEqual({ billed: channel === 'api' ? 1 : 0, finished: false });
    },
  );

  test.each(['api', 'bot'] as const)('a %s run counts what it recorded', async (channel) => {
    const jobId = await claimedJob(channel);
    const run = await executeJob(t.ctx, jobId);
    const rows = await t.ctx.db.query<{ billed: boolean }>('select billed from job_codes where job_id = $1', [
      jobId,
    ]);
    expect(rows.rows).toEqual([{ billed: channel === 'api' }]);
    expect(run).toEqual({ billed: channel === 'api' ? 1 : 0, finished: true });
  });
});
