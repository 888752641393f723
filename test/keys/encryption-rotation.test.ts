// Key rotation (docs/reference/operators-and-audit.md#encryption-key-rotation), in one process on the test database: a keyring whose first key
// encrypts and whose every key decrypts, duplicate detection across keys, the re-encryption in
// batches to the first key (stock codes, job codes, webhook secrets, v1 values rewritten bound),
// the start check naming a missing key id, and the admin endpoints.

import { createCipheriv, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { keyId } from '../../src/core/crypto/code-crypto.ts';
import { installKeyring, parseKeyring } from '../../src/core/crypto/keyring.ts';
import { ROOT_OPERATOR } from '../../src/core/operators/actor.ts';
import { importStock, reserveStock } from '../../src/core/stock/stock.ts';
import {
  checkKeyringCoversRows,
  encryptionStatus,
  rotateOnce,
  rowsByKeyId,
  startRotation,
} from '../../src/core/sweeper/rotation.ts';
import { loadRegistration, registerWebhook } from '../../src/core/webhooks/registration.ts';
import { adminCall, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
});
afterAll(() => t.close());

const key1 = () => t.ctx.codeKey;
const key2 = randomBytes(32);
const audit = { ...ROOT_OPERATOR, requestId: 'req_test', ip: '127.0.0.1' };

/** A v1 value as written before key ids: AES-256-GCM under the raw key, no associated data. */
function v1Encrypt(key: Buffer, text: string) {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([c.update(text, 'utf8'), c.final()]);
  return `v1:${Buffer.concat([iv, c.getAuthTag(), ct]).toString('base64')}`;
}

async function rotateAll(deps: typeof t.ctx) {
  let rounds = 0;
  while ((await rotateOnce({ ...deps, logger: t.ctx.logger }, 7)) > 0) rounds++;
  return rounds;
}

describe('keyring', () => {
  test('parses comma- or line-separated keys; refuses a short key and a repeated one', () => {
    const a = randomBytes(32).toString('base64');
    const b = randomBytes(32).toString('base64');
    expect(parseKeyring(`${a},${b}`).map((k) => k.toString('base64'))).toEqual([a, b]);
    expect(parseKeyring(`${a}\n${b}\n`)).toHaveLength(2);
    expect(() => parseKeyring(`${a},${randomBytes(16).toString('base64')}`)).toThrow(/key 2 .* not 32 bytes/);
    expect(() => parseKeyring(`${a},${a}`)).toThrow(/twice/);
  });
});

describe('admin endpoints', () => {
  test('GET /admin/v1/encryption and POST /admin/v1/encryption/rotate', async () => {
    const got = await adminCall(t, 'GET', '/admin/v1/encryption');
    expect(got).toEqual({
      ok: true,
      request_id: expect.stringMatching(/^req_/),
      current_key_id: keyId(key1()),
      key_ids: [keyId(key1())],
      rows_by_key_id: {},
      rotation: 'idle',
      rows_rewritten: 0,
      started_at: null,
      finished_at: null,
    });
    const started = await adminCall(t, 'POST', '/admin/v1/encryption/rotate', undefined, 202);
    expect(started).toMatchObject({ ok: true, current_key_id: keyId(key1()), rotation: 'running' });
    await rotateAll(t.ctx);
    // Nothing to rewrite: idle at once, with when it started and ended.
    expect(await adminCall(t, 'GET', '/admin/v1/encryption')).toMatchObject({
      rotation: 'idle',
      rows_rewritten: 0,
      started_at: '2026-11-22T09:00:00Z',
      finished_at: '2026-11-22T09:00:00Z',
    });
    const wrong = await t.admin.inject({ method: 'POST', url: '/admin/v1/encryption/rotate' });
    expect(wrong.statusCode).toBe(401);
  });
});

// After this, the test database's rows are under key 2: it runs last.
describe('rotation to a new first key', () => {
  test('every row is rewritten under the new key; codes, duplicates and secrets survive the old key removed', async () => {
    const m = await createMerchant(t);
    const codes = Array.from({ length: 30 }, () => `${uniqueCode('OK')}`);
    expect(
      await importStock(
        t.ctx.db,
        key1(),
        { customerId: m.customerId, mode: 'test', category: '60', codes },
        t.clock,
      ),
    ).toEqual({ added: 30, duplicates: 0, rejected: 0 });
    // A v1 stock row, written before key ids.
    const v1Code = uniqueCode('OK');
    const { codeHash } = await import('../../src/core/crypto/code-crypto.ts');
    await t.ctx.db.query(
      `insert into stock_codes (customer_id, mode, category, uc, code_hash, code_encrypted, last4, state, created_at, updated_at)
       values ($1, 'test', '60', 60, $2, $3, $4, 'available', now(), now())`,
      [m.customerId, codeHash(key1(), v1Code), v1Encrypt(key1(), v1Code), v1Code.slice(-4)],
    );
    const { secret } = await registerWebhook(
      { db: t.ctx.db, clock: t.clock, codeKey: key1(), allowPrivate: true },
      { customerId: m.customerId, mode: 'test' },
      { url: 'https://127.0.0.1:9/hook' },
    );
    // Job codes: a sync redeem of a caller code.
    const res = await redeem(t, m.key, { player_id: '5123456789', codes: [uniqueCode('OK')] });
    expect(res.statusCode, res.body).toBe(200);

    const kid1 = keyId(key1());
    const kid2 = keyId(key2);
    const before = await rowsByKeyId(t.ctx.db);
    expect(Object.keys(before).sort()).toEqual([kid1, 'v1'].sort());

    // The new key alone cannot read the rows: the start check names the missing key id.
    const alone = installKeyring([key2]);
    await expect(checkKeyringCoversRows(t.ctx.db, alone)).rejects.toThrow(
      `CODE_ENCRYPTION_KEY lacks key id ${kid1}: ${before[kid1]} stored rows are encrypted under it`,
    );
    const ring = installKeyring([key2, key1()]);
    await checkKeyringCoversRows(t.ctx.db, ring);
    const deps = { ...t.ctx, codeKey: ring };

    // During: the same codes are duplicates whichever key wrote them; new codes go under key 2.
    const again = await importStock(
      t.ctx.db,
      ring,
      { customerId: m.customerId, mode: 'test', category: '60', codes: [...codes.slice(0, 5), v1Code] },
      t.clock,
    );
    expect(again).toEqual({ added: 0, duplicates: 6, rejected: 0 });
    const fresh = uniqueCode('OK');
    expect(
      (
        await importStock(
          t.ctx.db,
          ring,
          { customerId: m.customerId, mode: 'test', category: '60', codes: [fresh] },
          t.clock,
        )
      ).added,
    ).toBe(1);

    const started = await startRotation(deps, audit);
    expect(started).toMatchObject({ currentKeyId: kid2, keyIds: [kid2, kid1], rotation: 'running' });
    // A process whose first key is the old one leaves the rotation alone.
    expect(await rotateOnce({ ...t.ctx, logger: t.ctx.logger })).toBe(0);
    expect(await rotateAll(deps)).toBeGreaterThan(3);
    const after = await encryptionStatus(deps);
    expect(after.rotation).toBe('idle');
    expect(after.rowsByKeyId).toEqual({ [kid2]: before[kid1]! + before['v1']! + 1 });
    expect(after.rowsRewritten).toBe(before[kid1]! + before['v1']!);

    // The old key removed: every row still reads, duplicates are still refused.
    await checkKeyringCoversRows(t.ctx.db, alone);
    const only2 = { ...t.ctx, codeKey: alone };
    expect(
      await importStock(
        t.ctx.db,
        alone,
        { customerId: m.customerId, mode: 'test', category: '60', codes: [...codes, v1Code, fresh] },
        t.clock,
      ),
    ).toEqual({ added: 0, duplicates: 32, rejected: 0 });
    const reserved = await t.ctx.db.transaction((tx) =>
      reserveStock(
        tx,
        alone,
        {
          customerId: m.customerId,
          mode: 'test',
          picks: [{ category: '60', count: 32 }],
          reservedBy: `job_rot_${Date.now()}`,
        },
        t.clock,
      ),
    );
    expect(reserved!.map((r) => r.code).sort()).toEqual([...codes, v1Code, fresh].sort());
    expect(
      (await loadRegistration(t.ctx.db, only2.codeKey, { customerId: m.customerId, mode: 'test' }))?.secret,
    ).toBe(secret);
    // Job codes read back under the new key too (the job view decrypts caller codes).
    const job = await t.ctx.db.query<{ id: string }>('select id from jobs where customer_id = $1', [
      m.customerId,
    ]);
    const { loadJobWithCodes } = await import('../../src/core/jobs/jobs.ts');
    const { codeResults } = await import('../../src/core/redeem/outcomes.ts');
    const loaded = await loadJobWithCodes(t.ctx.db, job.rows[0]!.id, null);
    expect(codeResults(loaded!.job, loaded!.codes, alone)[0]!.code).toMatch(/^OK-/);
  });
});
