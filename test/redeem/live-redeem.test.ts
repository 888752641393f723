// Live keys end to end through the http activator: a real server process (ACTIVATOR=http) talking
// to the upstream simulator running in this test process, over real sockets. Sync and async
// redeems, caller codes and stock, faults that leave the outcome unknown (quarantined), an
// upstream that is down (kept, refunded), and a test key on the same server using the sandbox.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { maskCode } from '../../src/core/crypto/code-crypto.ts';
import { createUpstreamSim, type UpstreamSim } from '../../src/dev/upstream-sim.ts';
import { adminHttp, type ServerProcess, startServerProcess } from '../helpers/process.ts';

const SIM_KEY = 'live-sim-key-0123456789abcdef';
const PLAYER = '5123456789';
const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();
let seq = 0;
const issued: string[] = [];
const code = (suffix = '-660') => {
  const c = `LIVE-${tag}-${seq++}${suffix}`;
  issued.push(c);
  return c;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const dataDir = mkdtempSync(join(tmpdir(), 'rg-live-'));
let sim: UpstreamSim;
let server: ServerProcess;

beforeAll(async () => {
  sim = createUpstreamSim({ key: SIM_KEY });
  const url = await sim.listen();
  server = await startServerProcess({
    dataDir,
    env: { ACTIVATOR: 'http', ACTIVATOR_URL: url, ACTIVATOR_KEY: SIM_KEY },
  });
});
afterAll(async () => {
  await server?.kill();
  await sim?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A customer with an uncapped plan, funded live and test wallets, and one key of each mode. */
async function createLiveMerchant(s: ServerProcess) {
  const { customer_id: customerId } = await adminHttp<{ customer_id: number }>(
    s,
    'POST',
    '/admin/v1/customers',
    {
      name: 'live merchant',
    },
  );
  await adminHttp(s, 'PUT', `/admin/v1/customers/${customerId}/plan`, {
    label: 'live',
    daily_limit: null,
    per_request_usd: '0.01',
    overage: true,
    active: true,
  });
  for (const mode of ['live', 'test']) {
    await adminHttp(s, 'POST', `/admin/v1/customers/${customerId}/wallet/topup`, { mode, usd: 5 });
  }
  const issue = async (mode: string) =>
    (await adminHttp<{ key: string }>(s, 'POST', `/admin/v1/customers/${customerId}/keys`, { mode })).key;
  return { customerId, liveKey: await issue('live'), testKey: await issue('test') };
}

function redeem(key: string, body: unknown) {
  return fetch(`${server.url}/v1/redeem`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'idempotency-key': `live-${tag}-${seq++}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
}

async function waitForJob(key: string, jobId: string) {
  for (let i = 0; i < 300; i++) {
    const res = await fetch(`${server.url}/v1/jobs/${jobId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const body = (await res.json()) as { status: string; result: Record<string, unknown> | null };
    if (body.status !== 'queued' && body.status !== 'running') return body;
    await sleep(50);
  }
  throw new Error(`job ${jobId} did not finish`);
}

const outcome = (
  c: string,
  status: string,
  disposition: string,
  extra: { uc?: number | null; category?: string | null } = {},
) => ({
  code: c,
  category: extra.category ?? null,
  uc: extra.uc ?? null,
  status,
  error_code: {
    activated: '',
    code_used: 'CODE_USED',
    invalid_code: 'INVALID_CODE',
    bad_player: 'CHARACTER_NOT_FOUND',
    failed: 'ACTIVATION_FAILED',
  }[status],
  disposition,
  billed: ['activated', 'code_used', 'invalid_code'].includes(status),
});

describe('live keys use the upstream', () => {
  test('a sync redeem: every answer of the protocol, and a reset after processing is quarantined', async () => {
    const m = await createLiveMerchant(server);
    const activated = code('-660');
    const used = code('-60');
    const invalid = code('');
    const failed = code('-FAIL-60');
    const lost = code('-RST-325');
    const odd = code('-ODD');
    sim.addCodes({ [odd]: 100 });
    sim.setFaults([{ kind: 'reset', stage: 'after', match: '-RST-' }]);
    // `used` was redeemed at the upstream before, by someone else.
    await simActivate(used, '5000000001');

    const codes = [activated, used, invalid, failed, lost, odd];
    const res = await redeem(m.liveKey, { player_id: PLAYER, codes, reference: 'live-1' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      ok: true,
      player_id: PLAYER,
      mode: 'live',
      source: 'codes',
      reference: 'live-1',
      summary: { activated: 2, code_used: 1, invalid_code: 1, bad_player: 0, failed: 2 },
      uc_delivered: 760,
      billed_requests: 4,
      refunded_requests: 2,
    });
    expect(body.codes).toEqual([
      outcome(activated, 'activated', 'consumed', { uc: 660, category: '660' }),
      outcome(used, 'code_used', 'deleted'),
      outcome(invalid, 'invalid_code', 'deleted'),
      outcome(failed, 'failed', 'kept'),
      outcome(lost, 'failed', 'quarantined'),
      outcome(odd, 'activated', 'consumed', { uc: 100 }),
    ]);
    // The upstream really did it: the activated codes and the lost one are consumed there.
    expect(sim.redemption(activated)).toMatchObject({ playerId: PLAYER, uc: 660 });
    expect(sim.redemption(lost)).toMatchObject({ playerId: PLAYER, uc: 325 });
    expect(sim.redemption(failed)).toBeUndefined();
    sim.setFaults([]);
  });

  test('a player the upstream does not know: bad_player, kept, refunded, nothing consumed', async () => {
    const m = await createLiveMerchant(server);
    const c = code('-60');
    const res = await redeem(m.liveKey, { player_id: '0001234567', codes: [c] });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { codes: unknown[]; billed_requests: number };
    expect(body.codes).toEqual([outcome(c, 'bad_player', 'kept')]);
    expect(body.billed_requests).toBe(0);
    expect(sim.redemption(c)).toBeUndefined();
  });

  test('an async redeem: 202, then the job completes with the upstream outcomes', async () => {
    const m = await createLiveMerchant(server);
    const codes = [code('-1800'), code('-8100')];
    sim.setFaults([{ kind: 'latency', ms: 300 }]);
    const res = await redeem(m.liveKey, { player_id: PLAYER, codes, async: true });
    expect(res.status).toBe(202);
    const accepted = (await res.json()) as { job_id: string; status: string };
    expect(accepted.status).toBe('queued');
    expect(res.headers.get('location')).toBe(`/v1/jobs/${accepted.job_id}`);
    const job = await waitForJob(m.liveKey, accepted.job_id);
    sim.setFaults([]);
    expect(job.status).toBe('completed');
    expect(job.result).toMatchObject({
      ok: true,
      job_id: accepted.job_id,
      mode: 'live',
      uc_delivered: 9900,
      billed_requests: 2,
      refunded_requests: 0,
    });
    expect(job.result!.codes).toEqual([
      outcome(codes[0]!, 'activated', 'consumed', { uc: 1800, category: '1800' }),
      outcome(codes[1]!, 'activated', 'consumed', { uc: 8100, category: '8100' }),
    ]);
    for (const c of codes) expect(sim.redemption(c)?.playerId).toBe(PLAYER);
  });

  test('live stock: consumed, returned on a sure failure, quarantined on an unknown one', async () => {
    const m = await createLiveMerchant(server);
    const stock = [code('-OK-60'), code('-FAIL-60'), code('-HANG5XX-60')];
    const added = await adminHttp<{ added: number }>(
      server,
      'POST',
      `/admin/v1/customers/${m.customerId}/stock`,
      {
        mode: 'live',
        category: '60',
        codes: stock,
      },
    );
    expect(added.added).toBe(3);
    sim.setFaults([{ kind: 'error', stage: 'after', status: 502, match: '-HANG5XX-' }]);
    const res = await redeem(m.liveKey, { player_id: PLAYER, packs: { '60': 3 } });
    sim.setFaults([]);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { codes: { code: string; status: string; disposition: string }[] };
    // Stock codes are answered masked (docs/reference/redeem.md#stock-codes-are-masked); their last 4 characters differ here.
    const byCode = new Map(body.codes.map((c) => [c.code, c]));
    const shown = stock.map((c) => maskCode(c.slice(-4), c.length));
    expect(byCode.get(shown[0]!)).toMatchObject({ status: 'activated', disposition: 'consumed', uc: 60 });
    expect(byCode.get(shown[1]!)).toMatchObject({ status: 'failed', disposition: 'returned' });
    expect(byCode.get(shown[2]!)).toMatchObject({ status: 'failed', disposition: 'quarantined' });
    const counts = await fetch(`${server.url}/v1/stock`, {
      headers: { authorization: `Bearer ${m.liveKey}` },
    });
    const sixty = ((await counts.json()) as { categories: { category: string }[] }).categories.find(
      (c) => c.category === '60',
    );
    expect(sixty).toMatchObject({ available: 1, reserved: 0, quarantined: 1 });
  });

  test('a test key on the same server uses the sandbox, never the upstream', async () => {
    const m = await createLiveMerchant(server);
    sim.resetStats();
    // The upstream would call this code invalid (no size suffix); the sandbox activates it.
    const c = code('-SANDBOX');
    const timeout = code('-TIMEOUT');
    const res = await redeem(m.testKey, { player_id: PLAYER, codes: [c, timeout] });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { mode: string; codes: unknown[] };
    expect(body.mode).toBe('test');
    expect(body.codes).toEqual([
      outcome(c, 'activated', 'consumed'),
      outcome(timeout, 'failed', 'quarantined'),
    ]);
    expect(sim.stats().requests).toEqual({ activate: 0, status: 0, check: 0 });
    expect(sim.redemption(c)).toBeUndefined();
  });
});

describe('an upstream that is down', () => {
  test('failed, kept and refunded: never lost, never quarantined', async () => {
    const m = await createLiveMerchant(server);
    await sim.close();
    const c = code('-60');
    const res = await redeem(m.liveKey, { player_id: PLAYER, codes: [c] });
    expect(res.status).toBe(422);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ ok: false, billed_requests: 0, refunded_requests: 1 });
    expect(body.codes).toEqual([outcome(c, 'failed', 'kept')]);
    const me = await fetch(`${server.url}/v1/me`, { headers: { authorization: `Bearer ${m.liveKey}` } });
    expect(((await me.json()) as { balance_usd: number }).balance_usd).toBe(5);
  });
});

test('the server logged the upstream failures without a whole code or the upstream key', () => {
  const out = server.output();
  expect(out).toContain('upstream activation failed');
  for (const c of issued) expect(out).not.toContain(c);
  expect(out).not.toContain(SIM_KEY);
});

/** Redeems a code at the simulator directly, as another gateway would. */
async function simActivate(c: string, playerId: string) {
  const address = sim.server.address() as { port: number };
  const res = await fetch(`http://127.0.0.1:${address.port}/v1/activate`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SIM_KEY}` },
    body: JSON.stringify({ code: c, player_id: playerId }),
  });
  expect(await res.json()).toMatchObject({ result: 'activated' });
}
