// waitForJob() across a SIGKILL of the server and its restart on the same address and database:
// polling waits out the dead process, then the interrupted job surfaces as JobInterruptedError
// with the outcomes recorded before the stop; replaying the job's key is not retried.
import { expect, test } from 'vitest';
import { JobInterruptedError, RedeemGateway, type RetryInfo } from '../../sdk/src/index.ts';
import { adminHttp, createProcessMerchant, serverProcesses } from '../helpers/process.ts';
import { startFaultProxy } from './fault-proxy.ts';

const processes = serverProcesses();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGKILL mid-job and restart: waitForJob throws JobInterruptedError with the recorded outcomes', {
  timeout: 150_000,
}, async () => {
  const dataDir = processes.dataDir();
  const first = await processes.start(dataDir);
  const m = await createProcessMerchant(first);
  const tag = Date.now().toString(36).toUpperCase();
  const codes = Array.from({ length: 8 }, (_, i) => `SLOW-SDKJ-${tag}-${i}`);
  await adminHttp(first, 'POST', `/admin/v1/customers/${m.customerId}/stock`, {
    mode: 'test',
    category: '60',
    codes,
  });
  // The client talks to one address throughout; behind it, the first process, then the second.
  const proxy = await startFaultProxy(first.url);
  const retries: RetryInfo[] = [];
  const client = new RedeemGateway({
    apiKey: m.key,
    baseUrl: proxy.url,
    retryBaseMs: 100,
    onRetry: (r) => retries.push(r),
  });
  const request = { player_id: '5123456789', packs: { '60': 8 } };
  const accepted = await client.redeemAsync(request, { idempotencyKey: `sdk-job-${tag}` });
  const waiting = client.waitForJob(accepted.job_id, { timeoutMs: 120_000 }).catch((e: unknown) => e);
  while ((await client.getJob(accepted.job_id)).status !== 'running') await sleep(50);
  await sleep(800); // five codes are out with the sandbox now
  await first.kill('SIGKILL');
  // The same database: the poller keeps going through the refused connections meanwhile.
  const second = await processes.start(dataDir);
  proxy.setUpstream(second.url);

  const err = await waiting;
  expect(err).toBeInstanceOf(JobInterruptedError);
  const interrupted = err as JobInterruptedError;
  expect(interrupted).toMatchObject({ status: 503, errorCode: 'job_interrupted', retryable: false });
  expect(interrupted.jobId).toBe(accepted.job_id);
  expect(interrupted.codes).toHaveLength(5);
  for (const c of interrupted.codes) {
    expect(c).toMatchObject({ status: 'failed', disposition: 'quarantined', billed: false });
    // A stock code keeps its last 4 characters whether shown in full or masked (docs/reference/redeem.md#stock-codes-are-masked).
    expect(codes.some((x) => x.length === c.code.length && x.endsWith(c.code.slice(-4)))).toBe(true);
  }

  // The job's key is not replayed: 503 job_interrupted, thrown at once (a new key is needed).
  retries.length = 0;
  const again = await client
    .redeemAsync(request, { idempotencyKey: `sdk-job-${tag}` })
    .catch((e: unknown) => e);
  expect(again).toBeInstanceOf(JobInterruptedError);
  expect(again).toMatchObject({
    status: 503,
    errorCode: 'job_interrupted',
    jobId: accepted.job_id,
    codes: [],
  });
  expect(retries).toEqual([]);
  await proxy.close();
});
