// Settling quarantined codes: a status check or the operator decides; used codes are billed once
// as code_used, unused stock goes back to stock, and the caller's recorded answer never changes.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createHttpActivator } from '../../src/activators/http.ts';
import { codeHash } from '../../src/core/crypto/code-crypto.ts';
import { checkQuarantined } from '../../src/core/sweeper/quarantine-check.ts';
import { createUpstreamSim } from '../../src/dev/upstream-sim.ts';
import { buildPublicApp } from '../../src/http/public-app.ts';
import { registerPublicRoutes } from '../../src/routes/public.ts';
import { ADMIN_TOKEN, bearer, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { addStock, me, redeem, uniqueCode, walletInvariants } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const PLAYER = '5123456789';
const admin = (method: 'GET' | 'POST', url: string, payload?: object) =>
  t.admin.inject({
    method,
    url,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    ...(payload ? { payload } : {}),
  });
const stock60 = async (key: string) =>
  (await t.api.inject({ method: 'GET', url: '/v1/stock', headers: bearer(key) })).json().categories[0];
const quarantinedOf = async (customerId: number) =>
  (await admin('GET', `/admin/v1/quarantine?customer_id=${customerId}`)).json().codes as {
    job_id: string;
    position: number;
    code_last4: string;
  }[];
/** What the upstream would say: the sandbox consumed the code after all. */
const consumeInSandbox = (code: string) =>
  t.ctx.db.query(
    `insert into sandbox_redemptions (mode, code_hash, player_id, created_at) values ('test', $1, $2, now())`,
    [codeHash(t.ctx.codeKey, code), PLAYER],
  );

describe('quarantine settlement', () => {
  test('a status check that finds a stock code unused returns it to stock, billing nothing', async () => {
    const m = await createMerchant(t, {
      plan: { daily_limit: null, per_request_usd: '0.1' },
      topup: { test: 1 },
    });
    const code = uniqueCode('TIMEOUT');
    await addStock(t, m.customerId, 'test', '60', [code]);
    const r = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 1 } });
    expect(r.json().codes[0]).toMatchObject({ status: 'failed', disposition: 'quarantined', billed: false });
    expect(await stock60(m.key)).toMatchObject({ available: 0, quarantined: 1 });
    const listed = await quarantinedOf(m.customerId);
    expect(listed).toEqual([
      expect.objectContaining({ position: 0, code_last4: code.slice(-4), source: 'stock', mode: 'test' }),
    ]);

    // Not due before a minute has passed: a slow upstream may still be working on it.
    expect(await checkQuarantined(t.ctx)).toMatchObject({ checked: 0 });
    t.clock.advance(61_000);
    expect(await checkQuarantined(t.ctx)).toEqual({ checked: 1, used: 0, unused: 1, unknown: 0 });
    expect(await stock60(m.key)).toMatchObject({ available: 1, quarantined: 0 });
    expect(await quarantinedOf(m.customerId)).toEqual([]);
    expect((await me(t, m.key)).balance_usd).toBe(1);
    expect(await checkQuarantined(t.ctx, { all: true })).toMatchObject({ used: 0, unused: 0 });
  });

  test('a code found used is deleted from stock and billed once as code_used; the replay is unchanged', async () => {
    const m = await createMerchant(t, {
      plan: { daily_limit: null, per_request_usd: '0.1' },
      topup: { test: 1 },
    });
    const code = uniqueCode('TIMEOUT');
    await addStock(t, m.customerId, 'test', '60', [code]);
    const first = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 1 } }, 'q-used');
    await consumeInSandbox(code);
    const check = await admin('POST', '/admin/v1/quarantine/check');
    expect(check.statusCode).toBe(200);
    expect(check.json()).toMatchObject({ ok: true, used: 1 });
    expect(await stock60(m.key)).toMatchObject({ available: 0, quarantined: 0 });
    const after = await me(t, m.key);
    expect(after.balance_usd).toBe(0.9);
    expect(after.quota).toMatchObject({ used_today: 1, overage_today: 1 });
    expect(await walletInvariants(t, m.customerId, 'test')).toEqual({
      balance: 900_000,
      held: 0,
      ledger: 900_000,
      open: 0,
    });
    // Settling again bills nothing more.
    expect((await admin('POST', '/admin/v1/quarantine/check')).json()).toMatchObject({ checked: 0 });
    const job = first.json();
    const replay = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 1 } }, 'q-used');
    expect(replay.body).toBe(first.body);
    expect(job.codes[0].disposition).toBe('quarantined');
  });

  test('the operator settles by hand; an unknown or settled code is 404; a used include-plan code uses the include', async () => {
    const m = await createMerchant(t, { plan: { daily_limit: 5, per_request_usd: '0.1' } });
    const code = uniqueCode('TIMEOUT');
    await redeem(t, m.key, { player_id: PLAYER, codes: [code] });
    const [q] = await quarantinedOf(m.customerId);
    expect(q).toBeDefined();
    const bad = await admin('POST', `/admin/v1/jobs/${q!.job_id}/codes/${q!.position}/settle`, {
      outcome: 'maybe',
    });
    expect(bad.statusCode).toBe(400);
    const ok = await admin('POST', `/admin/v1/jobs/${q!.job_id}/codes/${q!.position}/settle`, {
      outcome: 'used',
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ settlement: 'used' });
    expect((await me(t, m.key)).quota).toMatchObject({ used_today: 1, remaining_today: 4, overage_today: 0 });
    const again = await admin('POST', `/admin/v1/jobs/${q!.job_id}/codes/${q!.position}/settle`, {
      outcome: 'used',
    });
    expect(again.statusCode).toBe(404);
    expect(
      (await admin('POST', '/admin/v1/jobs/job_nope/codes/0/settle', { outcome: 'unused' })).statusCode,
    ).toBe(404);
    const view = (await admin('GET', `/admin/v1/jobs/${q!.job_id}`)).json();
    expect(view.attempts[0]).toMatchObject({ disposition: 'quarantined', settlement: 'used' });
  });

  test('the list keeps settled codes for 7 days with how they settled, by what and whom, and when', async () => {
    const m = await createMerchant(t, { plan: { daily_limit: 5, per_request_usd: '0.1' } });
    const byHand = uniqueCode('TIMEOUT');
    const byCheck = uniqueCode('TIMEOUT');
    const automatic = uniqueCode('TIMEOUT');
    await redeem(t, m.key, { player_id: PLAYER, codes: [byHand, byCheck, automatic] });
    const held = await quarantinedOf(m.customerId);
    expect(held.map((c) => c.position)).toEqual([0, 1, 2]);
    const listOf = async () =>
      (await admin('GET', `/admin/v1/quarantine?customer_id=${m.customerId}`)).json();
    expect(await listOf()).toMatchObject({ codes: held, settled_days: 7, settled: [] });

    // root settles the first by hand; an hour later the automatic checker settles the third; two
    // minutes later the check root runs settles the second.
    const iso = () =>
      t.clock
        .now()
        .toISOString()
        .replace(/\.\d{3}Z$/, 'Z');
    const jobId = held[0]!.job_id;
    const settledAt = iso();
    expect(
      (await admin('POST', `/admin/v1/jobs/${jobId}/codes/0/settle`, { outcome: 'used' })).statusCode,
    ).toBe(200);
    t.clock.advance(3_600_000);
    // The second is not due yet for the automatic checker (its next check is later).
    await t.ctx.db.query('update job_codes set next_check_at = $2 where job_id = $1 and position = 1', [
      jobId,
      new Date(t.clock.now().getTime() + 86_400_000),
    ]);
    const automaticAt = iso();
    await checkQuarantined(t.ctx);
    t.clock.advance(120_000);
    await consumeInSandbox(byCheck);
    const checkedAt = iso();
    const check = await admin('POST', '/admin/v1/quarantine/check');
    expect(check.statusCode, check.body).toBe(200);

    const listed = await listOf();
    expect(listed.codes).toEqual([]);
    const common = { job_id: jobId, customer_id: m.customerId, mode: 'test', source: 'codes' };
    expect(listed.settled).toEqual([
      expect.objectContaining({
        ...common,
        position: 1,
        code_last4: byCheck.slice(-4),
        settlement: 'used',
        settled_at: checkedAt,
        settled_by: 'check',
        settled_actor: 'root',
      }),
      expect.objectContaining({
        ...common,
        position: 2,
        code_last4: automatic.slice(-4),
        settlement: 'unused',
        settled_at: automaticAt,
        settled_by: 'check',
        settled_actor: null,
      }),
      expect.objectContaining({
        ...common,
        position: 0,
        code_last4: byHand.slice(-4),
        settlement: 'used',
        settled_at: settledAt,
        settled_by: 'operator',
        settled_actor: 'root',
      }),
    ]);

    // Each is listed for 7 days after its settlement, then no more (the job still shows it).
    const positions = async () => (await listOf()).settled.map((c: { position: number }) => c.position);
    t.clock.advance(7 * 86_400_000 - 3_720_000);
    expect(await positions()).toEqual([1, 2, 0]);
    t.clock.advance(1);
    expect(await positions()).toEqual([1, 2]);
    t.clock.advance(3_720_000);
    expect(await positions()).toEqual([]);
    const view = (await admin('GET', `/admin/v1/jobs/${jobId}`)).json();
    expect(view.attempts.map((a: { settlement: string }) => a.settlement)).toEqual([
      'used',
      'used',
      'unused',
    ]);
  });

  test('live codes through the http activator: a status check the upstream cannot answer waits and tries again', async () => {
    const sim = createUpstreamSim({
      key: 'sim-key',
      // The activation is processed (the code consumed), then the answer never comes.
      faults: [{ kind: 'hang', stage: 'after', path: 'activate', match: 'HANG' }],
    });
    const url = await sim.listen();
    const http = createHttpActivator({ url, key: 'sim-key', timeoutMs: 300 });
    const sandbox = t.ctx.activatorFor('test');
    const ctx = { ...t.ctx, activatorFor: (mode: 'live' | 'test') => (mode === 'live' ? http : sandbox) };
    const api = await buildPublicApp(ctx, registerPublicRoutes);
    try {
      const m = await createMerchant(t, {
        plan: { daily_limit: null, per_request_usd: '0.25' },
        topup: { live: 1 },
        key: { mode: 'live' },
      });
      const code = `${uniqueCode('HANG')}-660`;
      const res = await api.inject({
        method: 'POST',
        url: '/v1/redeem',
        headers: { ...bearer(m.key), 'idempotency-key': 'live-hang', 'content-type': 'application/json' },
        payload: { player_id: PLAYER, codes: [code] },
      });
      expect(res.json().codes[0]).toMatchObject({
        status: 'failed',
        disposition: 'quarantined',
        billed: false,
      });
      expect(sim.redemption(code)).toBeDefined(); // the upstream did consume it

      sim.setFaults([{ kind: 'error', path: 'status', status: 503 }]);
      expect(await checkQuarantined(ctx, { all: true })).toMatchObject({ checked: 1, unknown: 1 });
      expect(await quarantinedOf(m.customerId)).toHaveLength(1);
      sim.setFaults([]);
      expect(await checkQuarantined(ctx)).toMatchObject({ checked: 0 }); // backed off for a minute
      t.clock.advance(61_000);
      expect(await checkQuarantined(ctx)).toMatchObject({ checked: 1, used: 1 });
      const after = await api.inject({ method: 'GET', url: '/v1/me', headers: bearer(m.key) });
      expect(after.json()).toMatchObject({
        mode: 'live',
        balance_usd: 0.75,
        quota: { used_today: 1, overage_today: 1 },
      });
    } finally {
      await api.close();
      await http.close();
      await sim.close();
    }
  });
});
