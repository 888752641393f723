import { createCipheriv, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  CODE_PATTERN,
  type CodeBinding,
  codeHash,
  decryptCode,
  decryptSecret,
  encryptCode,
  encryptSecret,
  keyId,
  maskCode,
  normaliseCode,
  storedCodeLength,
} from '../../src/core/crypto/code-crypto.ts';
import { stockCode } from '../../src/core/stock/stock.ts';
import { createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { addStock, redeem, uniqueCode } from '../helpers/redeem.ts';

const key = Buffer.alloc(32, 1);
const otherKey = Buffer.alloc(32, 2);
const codeArb = fc.stringMatching(/^[A-Za-z0-9-]{4,64}$/);
const bindingArb: fc.Arbitrary<CodeBinding> = fc.record({
  table: fc.constantFrom('stock_codes' as const, 'job_codes' as const),
  customerId: fc.integer({ min: 1, max: 1_000_000 }),
  mode: fc.constantFrom('live', 'test'),
  codeHash: fc.stringMatching(/^[0-9a-f]{64}$/),
});
const bind = (over: Partial<CodeBinding> = {}): CodeBinding => ({
  table: 'stock_codes',
  customerId: 7,
  mode: 'live',
  codeHash: codeHash(key, 'BOUND-CODE-0001'),
  ...over,
});
const FORMAT = /^v2:([0-9a-f]{8}):([A-Za-z0-9+/]+=*)$/;

/** A value as the v1 code wrote it: raw master key, no associated data. */
function v1Encrypt(masterKey: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64')}`;
}

describe('code encryption (v2: key id, associated data naming the row)', () => {
  test('round trip for any valid code and binding; the format is v2:<kid>:base64(iv|tag|ciphertext)', () => {
    fc.assert(
      fc.property(codeArb, bindingArb, (code, binding) => {
        const stored = encryptCode(key, code, binding);
        expect(stored).not.toContain(code);
        const m = FORMAT.exec(stored);
        expect(m).not.toBeNull();
        expect(m![1]).toBe(keyId(key));
        expect(Buffer.from(m![2]!, 'base64').length).toBe(12 + 16 + code.length);
        expect(storedCodeLength(stored)).toBe(code.length);
        expect(decryptCode(key, stored, binding)).toBe(code);
      }),
    );
  });

  test('any change of the binding (table, customer, mode, code hash) fails authentication', () => {
    fc.assert(
      fc.property(codeArb, bindingArb, bindingArb, (code, a, b) => {
        fc.pre(JSON.stringify(a) !== JSON.stringify(b));
        const stored = encryptCode(key, code, a);
        expect(() => decryptCode(key, stored, b)).toThrow(/authentication/);
      }),
    );
    const stored = encryptCode(key, 'MOVE-ME-0001', bind());
    expect(decryptCode(key, stored, bind())).toBe('MOVE-ME-0001');
    for (const moved of [
      bind({ customerId: 8 }),
      bind({ mode: 'test' }),
      bind({ table: 'job_codes' }),
      bind({ codeHash: codeHash(key, 'OTHER-CODE-0001') }),
    ]) {
      expect(() => decryptCode(key, stored, moved)).toThrow(/authentication/);
    }
  });

  test('a fresh IV each time: the same code never encrypts to the same value', () => {
    const values = new Set(Array.from({ length: 50 }, () => encryptCode(key, 'SAME-CODE-1234', bind())));
    expect(values.size).toBe(50);
    const ivs = new Set(
      [...values].map((v) => Buffer.from(FORMAT.exec(v)![2]!, 'base64').subarray(0, 12).toString('hex')),
    );
    expect(ivs.size).toBe(50);
  });

  test('tampering with any byte is detected; another master key is named by its key id', () => {
    const stored = encryptCode(key, 'TAMPER-ME-0001', bind());
    const prefix = `v2:${keyId(key)}:`;
    const raw = Buffer.from(stored.slice(prefix.length), 'base64');
    for (let i = 0; i < raw.length; i++) {
      const bad = Buffer.from(raw);
      bad[i] = bad[i]! ^ 0x01;
      expect(() => decryptCode(key, prefix + bad.toString('base64'), bind())).toThrow(/authentication/);
    }
    expect(keyId(otherKey)).not.toBe(keyId(key));
    expect(() => decryptCode(otherKey, stored, bind())).toThrow(
      new RegExp(`under key ${keyId(key)}, which is not in the keyring \\(${keyId(otherKey)}\\)`),
    );
    // The key id says which key, but does not vouch for the value: a forged id still fails.
    const forged = encryptCode(otherKey, 'TAMPER-ME-0001', bind()).replace(keyId(otherKey), keyId(key));
    expect(() => decryptCode(key, forged, bind())).toThrow(/authentication/);
    expect(() => decryptCode(key, prefix + raw.subarray(0, 20).toString('base64'), bind())).toThrow(
      /truncated/,
    );
    expect(() => decryptCode(key, stored.slice(3), bind())).toThrow(/format/);
    expect(() => decryptCode(key, 'v3:abc', bind())).toThrow(/format/);
  });

  test('v1 values written before v2 still decrypt (codes and webhook secrets), under their key only', () => {
    const code = 'OLD-FORMAT-CODE-77';
    const v1 = v1Encrypt(key, code);
    // v1 carries no binding: any binding reads it.
    expect(decryptCode(key, v1, bind())).toBe(code);
    expect(decryptCode(key, v1, bind({ table: 'job_codes', customerId: 99 }))).toBe(code);
    expect(storedCodeLength(v1)).toBe(code.length);
    expect(() => decryptCode(otherKey, v1, bind())).toThrow(/authentication/);
    const secret = `whsec_${'a'.repeat(32)}`;
    expect(decryptSecret(key, v1Encrypt(key, secret), { customerId: 3, mode: 'test' })).toBe(secret);
  });

  test('keys must be 32 bytes', () => {
    expect(() => encryptCode(Buffer.alloc(16), 'ABCD', bind())).toThrow(/32 bytes/);
    expect(() => codeHash(Buffer.alloc(31), 'ABCD')).toThrow(/32 bytes/);
  });
});

describe('webhook secrets: their own subkey, bound to customer and mode', () => {
  const secret = `whsec_${'Q'.repeat(32)}`;

  test('round trip; another customer or mode fails', () => {
    const stored = encryptSecret(key, secret, { customerId: 5, mode: 'live' });
    expect(stored).toMatch(FORMAT);
    expect(stored).not.toContain(secret);
    expect(decryptSecret(key, stored, { customerId: 5, mode: 'live' })).toBe(secret);
    expect(() => decryptSecret(key, stored, { customerId: 6, mode: 'live' })).toThrow(/authentication/);
    expect(() => decryptSecret(key, stored, { customerId: 5, mode: 'test' })).toThrow(/authentication/);
  });

  test('a code subkey value never opens as a secret, nor a secret as a code (separate derived keys)', () => {
    // Same plaintext, same-looking row: only the subkey differs, and each refuses the other's value.
    const asSecret = encryptSecret(key, 'SHARED-TEXT-0001', { customerId: 5, mode: 'live' });
    const asCode = encryptCode(key, 'SHARED-TEXT-0001', bind({ customerId: 5, mode: 'live' }));
    expect(() => decryptCode(key, asSecret, bind({ customerId: 5, mode: 'live' }))).toThrow(/authentication/);
    expect(() => decryptSecret(key, asCode, { customerId: 5, mode: 'live' })).toThrow(/authentication/);
  });
});

describe('stock code lookup hash', () => {
  test('stable for one key, different across keys and codes', () => {
    expect(codeHash(key, 'ABCD-1234')).toBe(codeHash(Buffer.alloc(32, 1), 'ABCD-1234'));
    expect(codeHash(key, 'ABCD-1234')).toMatch(/^[0-9a-f]{64}$/);
    expect(codeHash(key, 'ABCD-1234')).not.toBe(codeHash(otherKey, 'ABCD-1234'));
    expect(codeHash(key, 'ABCD-1234')).not.toBe(codeHash(key, 'ABCD-1235'));
  });

  test('keyed with a derived subkey, not a plain digest or an HMAC under the encryption key', async () => {
    const { createHash, createHmac } = await import('node:crypto');
    const h = codeHash(key, 'ABCD-1234');
    expect(h).not.toBe(createHash('sha256').update('ABCD-1234').digest('hex'));
    expect(h).not.toBe(createHmac('sha256', key).update('ABCD-1234').digest('hex'));
  });

  test('unchanged since v1 (rows hashed before v2 are still found): HMAC under the v1 HKDF subkey', async () => {
    const { createHmac, hkdfSync } = await import('node:crypto');
    const sub = Buffer.from(
      hkdfSync('sha256', key, Buffer.alloc(0), 'redeem-gateway stock code lookup hash v1', 32),
    );
    expect(codeHash(key, 'ABCD-1234')).toBe(createHmac('sha256', sub).update('ABCD-1234').digest('hex'));
  });

  test('distinct codes give distinct hashes', () => {
    fc.assert(
      fc.property(codeArb, codeArb, (a, b) => {
        fc.pre(a !== b);
        expect(codeHash(key, a)).not.toBe(codeHash(key, b));
      }),
    );
  });
});

describe('code format and masking', () => {
  test('trims, then 4 to 64 of A-Z a-z 0-9 -', () => {
    expect(normaliseCode('  AB-12  ')).toBe('AB-12');
    expect(CODE_PATTERN.test('ABCD')).toBe(true);
    expect(CODE_PATTERN.test('A'.repeat(64))).toBe(true);
    expect(CODE_PATTERN.test('A'.repeat(65))).toBe(false);
    expect(CODE_PATTERN.test('ABC')).toBe(false);
    expect(CODE_PATTERN.test('AB CD')).toBe(false);
    expect(CODE_PATTERN.test('ABCD_')).toBe(false);
    expect(CODE_PATTERN.test('ÄBCD')).toBe(false);
  });

  test('every character but the last 4 becomes *, same length', () => {
    expect(maskCode('J9K2', 18)).toBe('**************J9K2');
    expect(maskCode('ABCD', 4)).toBe('ABCD');
    fc.assert(
      fc.property(codeArb, (code) => {
        const masked = maskCode(code.slice(-4), code.length);
        expect(masked).toHaveLength(code.length);
        expect(masked.slice(-4)).toBe(code.slice(-4));
        expect(masked.slice(0, -4)).toMatch(/^\**$/);
      }),
    );
  });
});

describe('in the database: a ciphertext moved to another row does not decrypt there', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ jobWorker: false });
  });
  afterAll(() => t?.close());

  test("a stock ciphertext copied onto another customer's row, or the other mode's row, fails; its own row reads", async () => {
    const a = await createMerchant(t);
    const b = await createMerchant(t);
    const codeA = uniqueCode('OK', '-A');
    await addStock(t, a.customerId, 'live', '60', [codeA]);
    await addStock(t, b.customerId, 'live', '60', [uniqueCode('OK', '-B')]);
    await addStock(t, a.customerId, 'test', '60', [uniqueCode('OK', '-T')]);
    const row = async (customerId: number, mode: string) =>
      (
        await t.ctx.db.query<{ id: number; code_encrypted: string }>(
          'select id, code_encrypted from stock_codes where customer_id = $1 and mode = $2',
          [customerId, mode],
        )
      ).rows[0]!;
    const rowA = await row(a.customerId, 'live');
    expect(rowA.code_encrypted).toMatch(FORMAT);
    expect((await stockCode(t.ctx.db, t.ctx.codeKey, rowA.id))!.code).toBe(codeA);

    for (const target of [await row(b.customerId, 'live'), await row(a.customerId, 'test')]) {
      await t.ctx.db.query('update stock_codes set code_encrypted = $2 where id = $1', [
        target.id,
        rowA.code_encrypted,
      ]);
      await expect(stockCode(t.ctx.db, t.ctx.codeKey, target.id)).rejects.toThrow(/authentication/);
    }
  });

  test('a v1 stock row (written before v2) still decrypts and is redeemable', async () => {
    const m = await createMerchant(t);
    const code = uniqueCode('OK', '-V1');
    await addStock(t, m.customerId, 'test', '60', [code]);
    const r = await t.ctx.db.query<{ id: number }>(
      `update stock_codes set code_encrypted = $2 where customer_id = $1 returning id`,
      [m.customerId, v1Encrypt(t.ctx.codeKey, code)],
    );
    expect((await stockCode(t.ctx.db, t.ctx.codeKey, r.rows[0]!.id))!.code).toBe(code);
    const res = await redeem(t, m.key, { player_id: '5123456789', packs: { '60': 1 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().codes).toEqual([
      expect.objectContaining({ code: maskCode(code.slice(-4), code.length), status: 'activated' }),
    ]);
  });
});
