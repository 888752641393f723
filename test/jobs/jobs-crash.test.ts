// A real server process killed with SIGKILL in the middle of an async job, restarted on the same
// database: the job is interrupted, stock and quota are restored exactly, and its key answers
// 503 job_interrupted (docs/reference/jobs.md#interrupted-jobs, docs/reference/idempotency.md#answers). On PostgreSQL the restarted process finds the
// job only once the dead worker's 30 s lease has run out (the sweep), as two processes would.
import { expect, test } from 'vitest';
import { adminHttp, createProcessMerchant, type ServerProcess, serverProcesses } from '../helpers/process.ts';

const processes = serverProcesses();
const dataDir = processes.dataDir();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGKILL mid-job: interrupted, unattempted stock and holds restored, key answers 503', {
  timeout: 150_000,
}, async () => {
  const first = await processes.start(dataDir);
  const m = await createProcessMerchant(first, { daily_limit: 2, per_request_usd: '0.5' });
  const tag = Date.now().toString(36).toUpperCase();
  // 8 slow codes: 5 go out at once (2 s each), 3 wait their turn.
  const codes = Array.from({ length: 8 }, (_, i) => `SLOW-${tag}-${i}`);
  const imported = await adminHttp(first, 'POST', `/admin/v1/customers/${m.customerId}/stock`, {
    mode: 'test',
    category: '60',
    codes,
  });
  expect(imported).toMatchObject({ added: 8 });
  const headers = { authorization: `Bearer ${m.key}`, 'content-type': 'application/json' };
  const body = JSON.stringify({ player_id: '5123456789', packs: { '60': 8 }, async: true });
  const accepted = await fetch(`${first.url}/v1/redeem`, {
    method: 'POST',
    headers: { ...headers, 'idempotency-key': `j-${tag}` },
    body,
  });
  expect(accepted.status).toBe(202);
  const { job_id: jobId } = (await accepted.json()) as { job_id: string };
  const me = async (s: ServerProcess) =>
    (await (await fetch(`${s.url}/v1/me`, { headers })).json()) as {
      quota: Record<string, number>;
      balance_usd: number;
    };
  // 8 held: 2 from the include, 6 from the wallet at $0.5.
  expect((await me(first)).quota).toMatchObject({ used_today: 8, overage_today: 6 });
  expect((await me(first)).balance_usd).toBe(2);

  for (let i = 0; i < 100; i++) {
    const job = (await (await fetch(`${first.url}/v1/jobs/${jobId}`, { headers })).json()) as {
      status: string;
    };
    if (job.status === 'running') break;
    await sleep(50);
  }
  await sleep(800); // five codes are out with the sandbox now
  await first.kill('SIGKILL');

  const second = await processes.start(dataDir);
  let job: {
    status: string;
    progress: { total: number; done: number };
    error: {
      error_code: string;
      job_id: string;
      codes: { status: string; disposition: string; billed: boolean }[];
    } | null;
  } = { status: 'running', progress: { total: 0, done: 0 }, error: null };
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    job = await (await fetch(`${second.url}/v1/jobs/${jobId}`, { headers })).json();
    if (job.status !== 'running' && job.status !== 'queued') break;
    await sleep(1000);
  }
  expect(job.status).toBe('interrupted');
  expect(job.error?.error_code).toBe('job_interrupted');
  expect(job.error?.job_id).toBe(jobId);
  // The five that were out: failed, quarantined, refunded. The three never sent: not listed.
  expect(job.error?.codes).toHaveLength(5);
  for (const c of job.error!.codes)
    expect(c).toMatchObject({ status: 'failed', disposition: 'quarantined', billed: false });
  expect(job.progress).toEqual({ total: 8, done: 5 });

  // Quota and wallet restored exactly; the unattempted stock is available again.
  const after = await me(second);
  expect(after.quota).toMatchObject({ used_today: 0, overage_today: 0, remaining_today: 2 });
  expect(after.balance_usd).toBe(5);
  const stock = (await (await fetch(`${second.url}/v1/stock`, { headers })).json()) as {
    categories: { category: string; available: number; reserved: number; quarantined: number }[];
  };
  expect(stock.categories.find((c) => c.category === '60')).toMatchObject({
    available: 3,
    reserved: 0,
    quarantined: 5,
  });

  // The job's key is not replayed: 503 job_interrupted, with job_id.
  const again = await fetch(`${second.url}/v1/redeem`, {
    method: 'POST',
    headers: { ...headers, 'idempotency-key': `j-${tag}` },
    body,
  });
  expect(again.status).toBe(503);
  expect(again.headers.get('svc-idempotent-replay')).toBe('false');
  expect(again.headers.get('retry-after')).toBe('1');
  expect(await again.json()).toMatchObject({ ok: false, error_code: 'job_interrupted', job_id: jobId });
});
