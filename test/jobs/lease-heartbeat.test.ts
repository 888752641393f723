// A running job's lease heartbeat (docs/reference/jobs.md#interrupted-jobs): it moves the lease of
// a job this process holds, and ends the run's lease when the job was taken over. The statement
// names the job's customer (on Citus it goes to that customer's worker alone;
// test/db/citus-routing.test.ts checks its plan).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { newRequestId } from '../../src/core/ids.ts';
import { INSTANCE_ID, LEASE_MS } from '../../src/core/instance.ts';
import { extendLease } from '../../src/core/jobs/states.ts';
import { parseRedeemRequest, requestFingerprint } from '../../src/core/redeem/request.ts';
import { startRedeem } from '../../src/core/redeem/start.ts';
import { createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
let clock: ManualClock;
beforeAll(async () => {
  clock = new ManualClock(new Date(Date.now() + 86_400_000));
  t = await createTestApp({ clock, jobWorker: false });
});
afterAll(async () => {
  await t?.close();
});

/** An async job of a new merchant, claimed by `owner` with a lease until now + LEASE_MS. */
async function runningJob(owner: string) {
  const m = await createMerchant(t);
  const request = { player_id: '5123456789', async: true, codes: [uniqueCode('OK')] };
  const started = await startRedeem(
    t.ctx,
    { customerId: m.customerId, mode: 'test' },
    {
      idempotencyKey: `lease-${Math.random().toString(36).slice(2)}`,
      fingerprint: requestFingerprint('POST', '/v1/redeem', request),
      request: parseRedeemRequest(request),
      requestId: newRequestId(),
    },
  );
  const id = (started as { jobId: string }).jobId;
  await t.ctx.db.query(
    `update jobs set status = 'running', lease_owner = $2, lease_expires_at = $3, started_at = $4 where id = $1`,
    [id, owner, new Date(clock.now().getTime() + LEASE_MS), clock.now()],
  );
  return { id, customerId: m.customerId };
}

const leaseOf = async (id: string) =>
  (
    await t.ctx.db.query<{ until: Date }>('select lease_expires_at as until from jobs where id = $1', [id])
  ).rows[0]!.until.getTime();

test("the heartbeat moves this process's lease on", async () => {
  const job = await runningJob(INSTANCE_ID);
  const lease = { until: await leaseOf(job.id) };
  clock.advance(10_000);
  await extendLease(t.ctx, job, lease);
  const expected = clock.now().getTime() + LEASE_MS;
  expect(await leaseOf(job.id)).toBe(expected);
  expect(lease.until).toBe(expected);
});

test('a job taken over by another process ends the run’s lease and keeps the new owner’s', async () => {
  const job = await runningJob('another-process');
  const theirs = await leaseOf(job.id);
  const lease = { until: theirs };
  clock.advance(10_000);
  await extendLease(t.ctx, job, lease);
  expect(lease.until).toBe(0);
  expect(await leaseOf(job.id)).toBe(theirs);
});
