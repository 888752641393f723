// A server process killed (SIGKILL) while a code is out with the upstream: after a restart the
// same Idempotency-Key resumes without re-sending any code, and bills each code once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { onPostgres } from './helpers/db.ts';
import { createProcessMerchant, type ServerProcess, startServerProcess } from './helpers/process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'rg-crash-'));
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGKILL between sending a code and recording it: the retry does not resend it and bills it once', {
  timeout: 120_000,
}, async () => {
  const first = await startServerProcess({ dataDir });
  servers.push(first);
  const m = await createProcessMerchant(first);
  const tag = Date.now().toString(36).toUpperCase();
  const codes = [`FAST-A-${tag}`, `SLOW-B-${tag}`, `FAST-C-${tag}`];
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

  // The SLOW code is consumed by the sandbox at once and answered 2 s later: kill inside that gap.
  const pending = send(first).catch((err: unknown) => err);
  await sleep(1000);
  await first.kill('SIGKILL');
  expect(await pending).toBeInstanceOf(Error); // the connection died with the process

  const second = await startServerProcess({ dataDir });
  servers.push(second);
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
    codes: { code: string; status: string; billed: boolean }[];
    billed_requests: number;
  };
  // Re-sending any of them would have answered code_used: the sandbox remembers activations.
  expect(body.codes.map((c) => [c.code, c.status, c.billed])).toEqual([
    [codes[0], 'activated', true],
    [codes[1], 'activated', true],
    [codes[2], 'activated', true],
  ]);
  expect(body.billed_requests).toBe(3);
  expect(res.headers.get('svc-cost')).toBe('0'); // all three were billed before or during recovery

  const me = (await (
    await fetch(`${second.url}/v1/me`, { headers: { authorization: `Bearer ${m.key}` } })
  ).json()) as {
    quota: { used_today: number; remaining_today: number };
    balance_usd: number;
  };
  expect(me.quota).toMatchObject({ used_today: 3, remaining_today: 97 });
  expect(me.balance_usd).toBe(5);

  // A replay now is the stored answer.
  const replay = await send(second);
  expect(replay.status).toBe(200);
  expect(replay.headers.get('svc-idempotent-replay')).toBe('true');
});
