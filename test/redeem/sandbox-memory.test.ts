// The sandbox's memory of activated codes (docs/reference/redeem.md#activators) goes with the outcome:
// an activation writes nothing itself and hands its memory row back, the outcome's commit writes
// it, and an outcome whose code is remembered already is recorded, billed and set in stock as
// code_used.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { codeHash } from '../../src/core/crypto/code-crypto.ts';
import { loadJobWithCodes } from '../../src/core/jobs/jobs.ts';
import { recordOutcome } from '../../src/core/redeem/outcome.ts';
import { countersNow } from '../../src/db/database.ts';
import { createMerchant, createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { addStock, me, redeem, uniqueCode, walletInvariants } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  // No job worker: the async jobs below are recorded by hand, two at once.
  // Statements counted below are the test's own: no request-log flush or read-budget settle
  // (each once a second by default) falls inside a count.
  t = await createTestApp({
    jobWorker: false,
    poolMax: 4,
    env: { REQUEST_LOG_FLUSH_MS: '3600000', READ_BUDGET_SETTLE_MS: '3600000' },
  });
});
afterAll(() => t.close());

const PLAYER = '5123456789';
const sandbox = () => t.ctx.activatorFor('test');
const remembered = async (code: string) =>
  (
    await t.ctx.db.query<{ player: string }>(
      `select player_id as player from sandbox_redemptions where mode = 'test' and code_hash = $1`,
      [codeHash(t.ctx.codeKey, code)],
    )
  ).rows.map((r) => r.player);
const paying = () =>
  createMerchant(t, { plan: { daily_limit: null, per_request_usd: '0.1' }, topup: { test: 1 } });

describe('the sandbox memory', () => {
  test('an activation writes nothing: it hands back the memory row for the outcome to write', async () => {
    const code = uniqueCode('OKAY');
    const before = countersNow(t.ctx.db).statements;
    const answer = await sandbox().activate({ mode: 'test', code, playerId: PLAYER });
    expect(answer).toMatchObject({
      status: 'activated',
      memory: { mode: 'test', codeHash: codeHash(t.ctx.codeKey, code), playerId: PLAYER },
    });
    expect(countersNow(t.ctx.db).statements).toBe(before);
    expect(await remembered(code)).toEqual([]);
    expect(await sandbox().status({ mode: 'test', code })).toEqual({ redeemed: false });
    // Answers that activate nothing carry no memory.
    for (const marker of ['USED', 'INVALID', 'FAIL', 'TIMEOUT'])
      expect(
        await sandbox().activate({ mode: 'test', code: uniqueCode(marker), playerId: PLAYER }),
      ).not.toHaveProperty('memory');
  });

  test('two outcomes of the same code recorded at once: one activated, the other code_used, each billed once', async () => {
    const code = uniqueCode('OKAY');
    const a = await paying();
    const b = await paying();
    const queue = async (m: Merchant, player: string) => {
      const res = await redeem(t, m.key, { player_id: player, codes: [code], async: true });
      expect(res.statusCode, res.body).toBe(202);
      return (await loadJobWithCodes(t.ctx.db, res.json().job_id, null))!;
    };
    const jobs = [await queue(a, '5100000001'), await queue(b, '5100000002')];
    // Both activations answered before either outcome is recorded.
    const answers = await Promise.all(
      jobs.map((j) => sandbox().activate({ mode: 'test', code, playerId: j.job.playerId })),
    );
    expect(answers.map((o) => o.status)).toEqual(['activated', 'activated']);
    const recorded = await Promise.all(
      jobs.map((j, i) => recordOutcome(t.ctx, j.job, j.codes[0]!, answers[i]!, 'pending')),
    );
    expect(recorded.map((r) => [r?.status, r?.billed]).sort()).toEqual([
      ['activated', true],
      ['code_used', true],
    ]);
    const rows = await Promise.all(
      jobs.map(async (j) => (await loadJobWithCodes(t.ctx.db, j.job.id, null))!.codes[0]!),
    );
    expect(rows.map((r) => [r.status, r.errorCode, r.disposition, r.billed]).sort()).toEqual([
      ['activated', '', 'consumed', true],
      ['code_used', 'CODE_USED', 'deleted', true],
    ]);
    // The memory holds the winner's player; each customer paid one request.
    const winner = jobs[rows.findIndex((r) => r.status === 'activated')]!;
    expect(await remembered(code)).toEqual([winner.job.playerId]);
    for (const m of [a, b]) {
      expect((await me(t, m.key)).balance_usd).toBe(0.9);
      expect(await walletInvariants(t, m.customerId, 'test')).toMatchObject({ held: 0, open: 0 });
    }
  });

  test('a stock code the sandbox remembers is deleted from stock and billed as code_used', async () => {
    const m = await paying();
    const code = uniqueCode('OKAY');
    await addStock(t, m.customerId, 'test', '60', [code]);
    // Activated before, elsewhere: the sandbox remembers it.
    await t.ctx.db.query(
      `insert into sandbox_redemptions (mode, code_hash, player_id, created_at) values ('test', $1, '5100000009', now())`,
      [codeHash(t.ctx.codeKey, code)],
    );
    const res = await redeem(t, m.key, { player_id: PLAYER, packs: { '60': 1 } });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().codes).toEqual([
      expect.objectContaining({
        status: 'code_used',
        error_code: 'CODE_USED',
        disposition: 'deleted',
        billed: true,
      }),
    ]);
    expect(res.headers['svc-cost']).toBe('1');
    const stock = await t.ctx.db.query<{ state: string }>(
      'select state from stock_codes where customer_id = $1',
      [m.customerId],
    );
    expect(stock.rows).toEqual([{ state: 'deleted' }]);
    expect(await remembered(code)).toEqual(['5100000009']);
    expect((await me(t, m.key)).balance_usd).toBe(0.9);
    expect(await walletInvariants(t, m.customerId, 'test')).toMatchObject({ held: 0, open: 0 });
  });

  test('a sync activation writes its memory with the outcome: the next redeem of the code is code_used', async () => {
    const m = await paying();
    const code = uniqueCode('OKAY');
    const first = await redeem(t, m.key, { player_id: PLAYER, codes: [code] });
    expect(first.json().codes[0]).toMatchObject({ status: 'activated', billed: true });
    expect(await remembered(code)).toEqual([PLAYER]);
    const again = await redeem(t, m.key, { player_id: PLAYER, codes: [code] });
    expect(again.statusCode).toBe(422);
    expect(again.json().codes[0]).toMatchObject({
      status: 'code_used',
      disposition: 'deleted',
      billed: true,
    });
  });
});

// The memory is keyed by the code's hash under the key that was first when the
// code was activated. After a rotation (a new first key) and a restart, it is found under every
// key of the ring, and the rotation rewrites it under the new first key, so it outlives the old
// key's removal.
describe('the sandbox memory across an encryption-key rotation', () => {
  test('activate, rotate the key, restart: the code is code_used, activated once', async () => {
    const { randomBytes } = await import('node:crypto');
    const { installKeyring } = await import('../../src/core/crypto/keyring.ts');
    const { createSandboxActivator } = await import('../../src/activators/sandbox.ts');
    const { rotateOnce, startRotation } = await import('../../src/core/sweeper/rotation.ts');
    const { ROOT_OPERATOR } = await import('../../src/core/operators/actor.ts');
    const u = await createTestApp({ jobWorker: false });
    try {
      const key1 = u.ctx.codeKey;
      const m = await createMerchant(u, {
        plan: { daily_limit: null, per_request_usd: '0.1' },
        topup: { test: 1 },
      });
      const code = uniqueCode('OKAY');
      const code2 = uniqueCode('OKAY');
      for (const c of [code, code2]) {
        const first = await redeem(u, m.key, { player_id: PLAYER, codes: [c] });
        expect(first.json().codes[0]).toMatchObject({ status: 'activated', billed: true });
      }
      // A restart with a new first key: the process's sandbox and key are the ring's.
      const key2 = randomBytes(32);
      const restart = (ring: Buffer) => {
        const sandbox = createSandboxActivator({ db: u.ctx.db, codeKey: ring });
        Object.assign(u.ctx, { codeKey: ring, activatorFor: () => sandbox });
        return sandbox;
      };
      const ring = installKeyring([key2, key1]);
      const sandbox = restart(ring);
      expect(await sandbox.status({ mode: 'test', code })).toEqual({ redeemed: true, playerId: PLAYER });
      const again = await redeem(u, m.key, { player_id: PLAYER, codes: [code] });
      expect(again.statusCode, again.body).toBe(422);
      expect(again.json().codes[0]).toMatchObject({
        status: 'code_used',
        disposition: 'deleted',
        billed: true,
      });
      // The rotation rewrites the memory under the new first key: the old key can then go.
      await startRotation(u.ctx, { ...ROOT_OPERATOR, requestId: 'req_test', ip: '127.0.0.1' });
      while ((await rotateOnce({ ...u.ctx, logger: u.ctx.logger }, 7)) > 0);
      const memory = await u.ctx.db.query<{ hash: string }>(
        `select code_hash as hash from sandbox_redemptions where mode = 'test' and code_hash = any($1)`,
        [[code, code2].flatMap((c) => [codeHash(key1, c), codeHash(key2, c)])],
      );
      expect(memory.rows.map((r) => r.hash).sort()).toEqual(
        [codeHash(key2, code), codeHash(key2, code2)].sort(),
      );
      restart(installKeyring([key2]));
      const third = await redeem(u, m.key, { player_id: PLAYER, codes: [code2] });
      expect(third.statusCode, third.body).toBe(422);
      expect(third.json().codes[0]).toMatchObject({ status: 'code_used', billed: true });
      // Each code was activated once: two activations and two code_used, 4 requests of $0.1.
      const outcomes = await u.ctx.db.query<{ status: string; n: number }>(
        `select c.status, count(*)::int as n from job_codes c join jobs j on j.customer_id = c.customer_id and j.id = c.job_id
          where j.customer_id = $1 group by c.status order by c.status`,
        [m.customerId],
      );
      expect(outcomes.rows).toEqual([
        { status: 'activated', n: 2 },
        { status: 'code_used', n: 2 },
      ]);
      expect((await me(u, m.key)).balance_usd).toBe(0.6);
    } finally {
      await u.close();
    }
  });
});
