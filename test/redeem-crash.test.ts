// A server process killed (SIGKILL) while a code is out with the upstream: after a restart the
// same Idempotency-Key resumes without re-sending any code and bills no code twice. The code
// that was out is failed, quarantined and refunded (contract section 4) until a status check
// settles it; the codes answered before the kill keep their outcomes and their single charge.
import { expect, test } from 'vitest';
import { onPostgres } from './helpers/db.ts';
import { adminHttp, createProcessMerchant, type ServerProcess, serverProcesses } from './helpers/process.ts';

const processes = serverProcesses();
const dataDir = processes.dataDir();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGKILL between sending a code and recording it: the retry does not resend it and bills nothing twice', {
  timeout: 120_000,
}, async () => {
  const first = await processes.start(dataDir, { SANDBOX_SLOW_MS: '15000' });
  // Every request from the wallet at $0.01: each recorded outcome shows as a charge.
  const m = await createProcessMerchant(first, { daily_limit: null, per_request_usd: '0.01' });
  const tag = Date.now().toString(36).toUpperCase();
  const codes = [`FAST-A-${tag}`, `SLOW-B-${tag}`, `FAST-C-${tag}`];
  const charges = async (server: ServerProcess) =>
    (
      await adminHttp<{ entries: { kind: string }[] }>(
        server,
        'GET',
        `/admin/v1/customers/${m.customerId}/ledger?mode=test`,
      )
    ).entries.filter((e) => e.kind === 'charge').length;
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

  // The SLOW code is consumed by the sandbox at once and answered 15 s later: once the two fast
  // codes are recorded (two charges), kill inside that gap.
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
  // Re-sending any of them would have answered code_used: the sandbox remembers activations.
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
