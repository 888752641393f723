import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { CODE_PATTERN, codeHash, decryptCode, encryptCode, normaliseCode } from '../src/core/code-crypto.ts';

const key = Buffer.alloc(32, 1);
const otherKey = Buffer.alloc(32, 2);
const codeArb = fc.stringMatching(/^[A-Za-z0-9-]{4,64}$/);

describe('stock code encryption', () => {
  test('round trip for any valid code', () => {
    fc.assert(
      fc.property(codeArb, (code) => {
        const stored = encryptCode(key, code);
        expect(stored).not.toContain(code);
        expect(decryptCode(key, stored)).toBe(code);
      }),
    );
  });

  test('a fresh IV each time: the same code never encrypts to the same value', () => {
    const values = new Set(Array.from({ length: 50 }, () => encryptCode(key, 'SAME-CODE-1234')));
    expect(values.size).toBe(50);
    const ivs = new Set(
      [...values].map((v) => Buffer.from(v.slice(3), 'base64').subarray(0, 12).toString('hex')),
    );
    expect(ivs.size).toBe(50);
  });

  test('stored as iv (12) | tag (16) | ciphertext', () => {
    const stored = encryptCode(key, 'ABCDEFGH');
    expect(stored.startsWith('v1:')).toBe(true);
    expect(Buffer.from(stored.slice(3), 'base64').length).toBe(12 + 16 + 8);
  });

  test('tampering with any byte, or the wrong key, is detected', () => {
    const stored = encryptCode(key, 'TAMPER-ME-0001');
    const raw = Buffer.from(stored.slice(3), 'base64');
    for (let i = 0; i < raw.length; i++) {
      const bad = Buffer.from(raw);
      bad[i] = bad[i]! ^ 0x01;
      expect(() => decryptCode(key, `v1:${bad.toString('base64')}`)).toThrow(/authentication/);
    }
    expect(() => decryptCode(otherKey, stored)).toThrow(/authentication/);
    expect(() => decryptCode(key, `v1:${raw.subarray(0, 20).toString('base64')}`)).toThrow(/truncated/);
    expect(() => decryptCode(key, stored.slice(3))).toThrow(/format/);
  });

  test('keys must be 32 bytes', () => {
    expect(() => encryptCode(Buffer.alloc(16), 'ABCD')).toThrow(/32 bytes/);
    expect(() => codeHash(Buffer.alloc(31), 'ABCD')).toThrow(/32 bytes/);
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

  test('distinct codes give distinct hashes', () => {
    fc.assert(
      fc.property(codeArb, codeArb, (a, b) => {
        fc.pre(a !== b);
        expect(codeHash(key, a)).not.toBe(codeHash(key, b));
      }),
    );
  });
});

describe('code format', () => {
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
});
