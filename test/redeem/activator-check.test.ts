// The activator's check (docs/reference/bot.md#commands): what a redeem would answer, without activating. The
// sandbox answers from its magic words and its memory per mode, writing nothing; the http
// activator asks the upstream simulator over real sockets, and anything but an answer is `unknown`;
// the metrics decorator counts checks by state.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  createHttpActivator,
  type HttpActivator,
  type HttpActivatorOptions,
} from '../../src/activators/http.ts';
import type { CodeCheckState } from '../../src/core/activator.ts';
import { codeHash } from '../../src/core/crypto/code-crypto.ts';
import type { ActivationStatus } from '../../src/core/vocabulary.ts';
import { createUpstreamSim, type UpstreamSim } from '../../src/dev/upstream-sim.ts';
import { instrumentActivator } from '../../src/metrics/activator-metrics.ts';
import { createMetrics } from '../../src/metrics/registry.ts';
import { createMerchant, createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { me, redeem, uniqueCode } from '../helpers/redeem.ts';

const PLAYER = '5123456789';

describe('the sandbox', () => {
  let t: TestApp;
  beforeAll(async () => {
    // SLOW codes would activate after 5 s: a check must not wait for that.
    t = await createTestApp({ jobWorker: false, sandboxSlowMs: 5000 });
  });
  afterAll(() => t.close());
  const sandbox = () => t.ctx.activatorFor('test');

  /** What the sandbox left behind for a code and a customer: memory rows, jobs, ledger entries. */
  const traces = async (code: string, customerId: number) =>
    (
      await t.ctx.db.query<{ memory: number; jobs: number; ledger: number }>(
        `select (select count(*) from sandbox_redemptions where code_hash = $1)::int as memory,
                (select count(*) from jobs where customer_id = $2)::int as jobs,
                (select count(*) from wallet_ledger where customer_id = $2)::int as ledger`,
        [codeHash(t.ctx.codeKey, code), customerId],
      )
    ).rows[0]!;
  const merchant = (mode: 'live' | 'test') =>
    createMerchant(t, {
      plan: { daily_limit: null, per_request_usd: '0.1' },
      topup: { [mode]: 1 },
      key: { mode },
    });

  test('every rule, in the order activate applies them; the player rule does not apply', async () => {
    const cases: [string, CodeCheckState][] = [
      [uniqueCode('USED'), 'used'],
      [uniqueCode('INVALID'), 'invalid'],
      [uniqueCode('FAIL'), 'unknown'],
      [uniqueCode('TIMEOUT'), 'unknown'],
      [uniqueCode('OKAY'), 'valid'],
      [uniqueCode('OKAY', '-660'), 'valid'],
      // Substrings, with activate's precedence: USED before INVALID before FAIL and TIMEOUT.
      [`X${uniqueCode('INVALID')}USED`, 'used'],
      [`${uniqueCode('FAIL')}INVALID`, 'invalid'],
      [`${uniqueCode('TIMEOUT')}USED`, 'used'],
    ];
    for (const [code, state] of cases) {
      for (const mode of ['test', 'live'] as const)
        expect(await sandbox().check({ mode, code, customerId: 1 }), `${mode} ${code}`).toBe(state);
      // The same verdict as the redeem's answer (whose memory row, not written here, is the
      // outcome commit's business), for a player the redeem would accept.
      const answer = await sandbox().activate({ mode: 'test', code, playerId: PLAYER });
      const asCheck: Record<ActivationStatus, CodeCheckState> = {
        activated: 'valid',
        code_used: 'used',
        invalid_code: 'invalid',
        failed: 'unknown',
        bad_player: 'unknown',
      };
      expect(asCheck[answer.status], code).toBe(state);
    }
  });

  test('a SLOW code is answered at once, as valid', async () => {
    const started = performance.now();
    expect(await sandbox().check({ mode: 'test', code: uniqueCode('SLOW') })).toBe('valid');
    expect(performance.now() - started).toBeLessThan(2000);
  });

  for (const mode of ['test', 'live'] as const) {
    const other = mode === 'test' ? 'live' : 'test';
    test(`${mode}: checked valid changes nothing, then redeemed → activated, then checked → used (${other} memory apart)`, async () => {
      const m: Merchant = await merchant(mode);
      const code = uniqueCode('OKAY');
      const before = await traces(code, m.customerId);
      const account = async () => {
        const { quota, balance_usd } = await me(t, m.key);
        return { quota, balance_usd };
      };
      const accountBefore = await account();
      for (let i = 0; i < 3; i++)
        expect(await sandbox().check({ mode, code, customerId: m.customerId })).toBe('valid');
      // Nothing remembered, no job, no ledger entry, no quota used.
      expect(await traces(code, m.customerId)).toEqual(before);
      expect(before.memory).toBe(0);
      expect(await account()).toEqual(accountBefore);
      expect(accountBefore.quota.used_today).toBe(0);

      const res = await redeem(t, m.key, { player_id: PLAYER, codes: [code] });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().codes[0]).toMatchObject({ status: 'activated', billed: true });
      expect(await sandbox().check({ mode, code })).toBe('used');
      // Activated in one mode is unknown to the other's memory.
      expect(await sandbox().check({ mode: other, code })).toBe('valid');
      const after = await traces(code, m.customerId);
      expect(after).toEqual({ memory: 1, jobs: before.jobs + 1, ledger: after.ledger });
      // A check after the redeem changes nothing either.
      await sandbox().check({ mode, code, customerId: m.customerId });
      expect(await traces(code, m.customerId)).toEqual(after);
    });
  }

  test('a code remembered by hand (activated elsewhere) is used in its mode only', async () => {
    const code = uniqueCode('OKAY');
    await t.ctx.db.query(
      `insert into sandbox_redemptions (mode, code_hash, player_id, created_at) values ('live', $1, '5100000009', now())`,
      [codeHash(t.ctx.codeKey, code)],
    );
    expect(await sandbox().check({ mode: 'live', code })).toBe('used');
    expect(await sandbox().check({ mode: 'test', code })).toBe('valid');
  });

  test('the metrics decorator passes check through and counts it by state', async () => {
    const metrics = createMetrics({ db: t.ctx.db, processMetrics: false });
    const counted = instrumentActivator(metrics, sandbox());
    const codes = [
      uniqueCode('OKAY'),
      uniqueCode('OKAY'),
      uniqueCode('USED'),
      uniqueCode('INVALID'),
      uniqueCode('FAIL'),
    ];
    const states = [];
    for (const code of codes) states.push(await counted.check({ mode: 'test', code }));
    expect(states).toEqual(['valid', 'valid', 'used', 'invalid', 'unknown']);
    const text = await metrics.registry.metrics();
    const calls = (result: string) =>
      new RegExp(
        `^redeem_gateway_activator_calls_total\\{activator="sandbox",operation="check",result="${result}"\\} (\\d+)$`,
        'm',
      ).exec(text)?.[1];
    expect([calls('valid'), calls('used'), calls('invalid'), calls('unknown')]).toEqual(['2', '1', '1', '1']);
    expect(text).toMatch(
      /^redeem_gateway_activator_call_duration_seconds_count\{activator="sandbox",operation="check"\} 5$/m,
    );
  });
});

describe('the http activator against the upstream simulator', () => {
  const KEY = 'check-test-key-0123456789';
  let sim: UpstreamSim;
  let url: string;
  let seq = 0;
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();
  const code = (suffix = '-660') => `CHK-${tag}-${seq++}${suffix}`;
  const activators: HttpActivator[] = [];
  function activator(opts: Partial<HttpActivatorOptions> = {}): HttpActivator {
    const a = createHttpActivator({ url, key: KEY, timeoutMs: 1000, retryDelaysMs: [10, 20], ...opts });
    activators.push(a);
    return a;
  }
  const check = (a: HttpActivator, c: string) => a.check({ mode: 'live', code: c, customerId: 7 });

  beforeAll(async () => {
    sim = createUpstreamSim({ key: KEY });
    url = await sim.listen();
  });
  afterEach(() => sim.setFaults([]));
  afterAll(async () => {
    await Promise.all(activators.map((a) => a.close()));
    await sim.close();
  });

  test('valid, then activated; then used; invalid; a FAIL code unknown; nothing consumed by a check', async () => {
    const a = activator();
    const c = code('-660');
    const seeded = code('-ODD');
    sim.addCodes({ [seeded]: 100 });
    const before = sim.stats();
    expect(await check(a, c)).toBe('valid');
    expect(await check(a, seeded)).toBe('valid');
    expect(await check(a, code(''))).toBe('invalid');
    expect(await check(a, code('-FAIL-60'))).toBe('unknown');
    expect(sim.redemption(c)).toBeUndefined();
    expect(sim.stats()).toMatchObject({
      redeemed: before.redeemed,
      requests: { check: before.requests.check + 4 },
    });
    expect(await a.activate({ mode: 'live', code: c, playerId: PLAYER })).toMatchObject({
      status: 'activated',
    });
    expect(await check(a, c)).toBe('used');
    expect(await a.status({ mode: 'live', code: c })).toEqual({ redeemed: true, playerId: PLAYER });
    // The upstream's own `unknown` is an answer: the breaker stays closed.
    expect(a.breakerState()).toBe('closed');
  });

  test('a 5xx, a garbage 200, a reset: unknown, and the code is not consumed', async () => {
    const a = activator();
    for (const fault of [
      { kind: 'error', status: 503 },
      { kind: 'garbage' },
      { kind: 'reset', stage: 'before' },
    ] as const) {
      sim.setFaults([{ ...fault, path: 'check' }]);
      const c = code('-60');
      expect(await check(a, c), fault.kind).toBe('unknown');
      expect(sim.redemption(c)).toBeUndefined();
    }
    // A fault on the check path leaves activations alone.
    expect(await a.activate({ mode: 'live', code: code('-60'), playerId: PLAYER })).toMatchObject({
      status: 'activated',
    });
  });

  test('a timeout: unknown', async () => {
    sim.setFaults([{ kind: 'hang', path: 'check' }]);
    const started = performance.now();
    expect(await check(activator({ timeoutMs: 200 }), code('-60'))).toBe('unknown');
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test('a wrong key or a rejected request (4xx): unknown, and the breaker stays closed', async () => {
    const wrong = activator({ key: 'wrong-key', breaker: { failureThreshold: 1 } });
    expect(await check(wrong, code('-60'))).toBe('unknown');
    expect(wrong.breakerState()).toBe('closed');
    const a = activator({ breaker: { failureThreshold: 1 } });
    // The simulator answers 400 for a code longer than 128 characters.
    expect(await check(a, `L${'X'.repeat(128)}-60`)).toBe('unknown');
    expect(a.breakerState()).toBe('closed');
  });

  test('failed checks open the breaker; while open a check is unknown without a request; logs show last 4 only', async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _enc, cb) {
          lines.push(String(chunk));
          cb();
        },
      }),
    );
    const a = activator({ logger, breaker: { failureThreshold: 2, openMs: 10_000 } });
    sim.setFaults([{ kind: 'error', path: 'check' }]);
    const codes = [code('-AB60'), code('-CD60'), code('-EF60')];
    expect(await check(a, codes[0]!)).toBe('unknown');
    expect(await check(a, codes[1]!)).toBe('unknown');
    expect(a.breakerState()).toBe('open');
    sim.setFaults([]);
    const sent = sim.stats().requests.check;
    expect(await check(a, codes[2]!)).toBe('unknown');
    expect(sim.stats().requests.check).toBe(sent);
    // The breaker is the activator's: activations are refused too.
    expect(await a.activate({ mode: 'live', code: code('-60'), playerId: PLAYER })).toEqual({
      status: 'failed',
      unknown: false,
    });
    const text = lines.join('');
    for (const c of codes) expect(text).not.toContain(c);
    expect(text).not.toContain(KEY);
    expect(text).toContain('"last4":"AB60"');
    expect(text).toContain('"httpStatus":500');
    expect(text).toContain('"reason":"circuit open"');
    expect(text).toContain('upstream code check failed');
  });

  test('a healthy check closes a half-open breaker', async () => {
    const a = activator({ breaker: { failureThreshold: 1, openMs: 100 } });
    sim.setFaults([{ kind: 'error', path: 'check', count: 1 }]);
    expect(await check(a, code('-60'))).toBe('unknown');
    expect(a.breakerState()).toBe('open');
    await new Promise((r) => setTimeout(r, 150));
    expect(a.breakerState()).toBe('half_open');
    expect(await check(a, code('-60'))).toBe('valid');
    expect(a.breakerState()).toBe('closed');
  });
});
