// A server process killed (SIGKILL) while a code is out with the upstream: after a restart the
// same Idempotency-Key resumes without re-sending any code and bills no code twice. The code
// that was out is failed, quarantined and refunded (docs/reference/jobs.md#interrupted-jobs) until a status check
// settles it; the codes answered before the kill keep their outcomes and their single charge.
import { expect, test } from 'vitest';
import { onPostgres } from '../helpers/db.ts';
import { adminHttp, createProcessMerchant, type ServerProcess, serverProcesses } from '../helpers/process.ts';

const processes = serverProcesses();
const dataDir = processes.dataDir();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The test-mode charges in a customer's ledger, as the server's admin API lists them. */
async function chargesOf(server: ServerProcess, customerId: number): Promise<number> {
  const ledger = await adminHttp<{ entries: { kind: string }[] }>(
    server,
    'GET',
    `/admin/v1/customers/${customerId}/ledger?mode=test`,
  );
  return ledger.entries.filter((e) => e.kind === 'charge').length;
}
test('SIGKILL between sending a code and recording it: the retry does not resend it and bills nothing twice', {
  timeout: 120_000,
}, async () => {
  const first = await processes.start(dataDir, { SANDBOX_SLOW_MS: '15000' });
  // Every request from the wallet at $0.01: each recorded outcome shows as a charge.
  const m = await createProcessMerchant(first, { daily_limit: null, per_request_usd: '0.01' });
  const tag = Date.now().toString(36).toUpperCase();
  const codes = [`FAST-A-${tag}`, `SLOW-B-${tag}`, `FAST-C-${tag}`];
  const charges = (server: ServerProcess) => chargesOf(server, m.customerId);
  const send = (server: ServerProcess) =>
    fetch(`${server.url}/v1/redeem`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${m.key}`,
        'idempotency-key': `crash-${tag}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ player_id: '5123456789', codes }),
    });

  // The sandbox decides the SLOW code at once and answers it 15 s later (its memory of the code
  // is written only with the outcome): once the two fast codes are recorded (two charges), kill
  // inside that gap.
  const pending = send(first).catch((err: unknown) => err);
  for (let i = 0; i < 100 && (await charges(first)) < 2; i++) await sleep(100);
  expect(await charges(first)).toBe(2);
  await first.kill('SIGKILL');
  expect(await pending).toBeInstanceOf(Error); // the connection died with the process

  const second = await processes.start(dataDir);
  // On PGlite the restart settles the job at once; on PostgreSQL after the 30 s lease and a sweep.
  let res = await send(second);
  const deadline = Date.now() + 60_000;
  while (res.status === 409 && Date.now() < deadline) {
    expect(onPostgres).toBe(true);
    await sleep(1000);
    res = await send(second);
  }
  expect(res.status).toBe(200);
  const body = (await res.json()) as {
    codes: { code: string; status: string; disposition: string; billed: boolean }[];
    billed_requests: number;
  };
  // Re-sending a fast one would have answered code_used: the sandbox remembers its activations.
  // The code that was out is failed, quarantined and refunded: it may have been consumed.
  expect(body.codes.map((c) => [c.code, c.status, c.disposition, c.billed])).toEqual([
    [codes[0], 'activated', 'consumed', true],
    [codes[1], 'failed', 'quarantined', false],
    [codes[2], 'activated', 'consumed', true],
  ]);
  expect(body.billed_requests).toBe(2);
  expect(res.headers.get('svc-cost')).toBe('0'); // both were billed by the first process, not again

  const me = (await (
    await fetch(`${second.url}/v1/me`, { headers: { authorization: `Bearer ${m.key}` } })
  ).json()) as {
    quota: { used_today: number; remaining_today: number; overage_today: number };
    balance_usd: number;
  };
  expect(me.quota).toMatchObject({ used_today: 2, remaining_today: 0, overage_today: 2 });
  expect(me.balance_usd).toBe(4.98);

  // A replay now is the stored answer.
  const replay = await send(second);
  expect(replay.status).toBe(200);
  expect(replay.headers.get('svc-idempotent-replay')).toBe('true');
});

test('SIGKILL between the sandbox answer and the outcome commit: no sandbox memory, the code is released unbilled', {
  timeout: 120_000,
}, async () => {
  const dir = processes.dataDir();
  const first = await processes.start(dir, { SANDBOX_SLOW_MS: '15000' });
  const m = await createProcessMerchant(first, { daily_limit: null, per_request_usd: '0.01' });
  const code = `SLOW-MEM-${Date.now().toString(36).toUpperCase()}`;
  const charges = (server: ServerProcess) => chargesOf(server, m.customerId);
  const send = (server: ServerProcess, key: string) =>
    fetch(`${server.url}/v1/redeem`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${m.key}`,
        'idempotency-key': key,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ player_id: '5123456789', codes: [code] }),
    });
  const running = async (server: ServerProcess) =>
    (
      await adminHttp<{ jobs: unknown[] }>(
        server,
        'GET',
        `/admin/v1/jobs?customer_id=${m.customerId}&status=running`,
      )
    ).jobs.length;

  // Phase 1 committed the code `sending`, and the sandbox decided it at once ("activated", with
  // the memory row for the outcome's commit to write): it only answers 15 s later. Kill now.
  const pending = send(first, 'mem-1').catch((err: unknown) => err);
  for (let i = 0; i < 100 && (await running(first)) === 0; i++) await sleep(100);
  expect(await running(first)).toBe(1);
  await sleep(300);
  await first.kill('SIGKILL');
  expect(await pending).toBeInstanceOf(Error);

  // Recovery quarantines the code that was out and refunds its hold (on PostgreSQL once the dead
  // process's 30 s lease has run out and a sweep came).
  const second = await processes.start(dir);
  const quarantined = async () =>
    (
      await adminHttp<{ codes: { job_id: string; code_last4: string }[] }>(
        second,
        'GET',
        `/admin/v1/quarantine?customer_id=${m.customerId}`,
      )
    ).codes;
  const deadline = Date.now() + 60_000;
  while ((await quarantined()).length === 0 && Date.now() < deadline) await sleep(500);
  const [out] = await quarantined();
  expect(out?.code_last4).toBe(code.slice(-4));
  expect(await charges(second)).toBe(0);

  // The quarantine check asks the sandbox, which reads its memory: the row was never written, so
  // the code is not redeemed and is released, billing nothing. (The check takes every
  // quarantined code of the database: on PostgreSQL this file's first test's too, also unused.)
  const check = await adminHttp(second, 'POST', '/admin/v1/quarantine/check');
  expect(check).toMatchObject({ used: 0, unknown: 0 });
  expect(await quarantined()).toEqual([]);
  const view = await adminHttp<{ attempts: { status: string; billed: boolean; settlement: string }[] }>(
    second,
    'GET',
    `/admin/v1/jobs/${out!.job_id}`,
  );
  expect(view.attempts).toEqual([
    expect.objectContaining({ status: 'failed', billed: false, settlement: 'unused' }),
  ]);
  expect(await charges(second)).toBe(0);

  // The code is still good: a new request activates it (billed once), and its outcome's commit
  // wrote the memory, so the next one answers code_used (billed as code_used).
  const again = await send(second, 'mem-2');
  expect(again.status).toBe(200);
  expect(((await again.json()) as { codes: unknown[] }).codes).toEqual([
    expect.objectContaining({ code, status: 'activated', disposition: 'consumed', billed: true }),
  ]);
  const used = await send(second, 'mem-3');
  expect(used.status).toBe(422);
  expect(((await used.json()) as { codes: unknown[] }).codes).toEqual([
    expect.objectContaining({ code, status: 'code_used', disposition: 'deleted', billed: true }),
  ]);
  expect(await charges(second)).toBe(2);
});
