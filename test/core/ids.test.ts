// Identifiers: shape, uniqueness, and uniform characters across many refills of the byte pool.
import { describe, expect, test } from 'vitest';
import { newApiKey, newJobId, newRequestId, randomBase62 } from '../../src/core/ids.ts';
import { pooledRandomByte, pooledRandomBytes } from '../../src/core/random-pool.ts';

describe('ids', () => {
  test('prefixes and lengths', () => {
    expect(newRequestId()).toMatch(/^req_[0-9A-Za-z]{24}$/);
    expect(newJobId()).toMatch(/^job_[0-9A-Za-z]{24}$/);
    expect(newApiKey('live')).toMatch(/^rk_live_[0-9A-Za-z]{32}$/);
  });

  test('no repeats in 20,000 ids', () => {
    const ids = new Set(Array.from({ length: 20_000 }, () => newJobId()));
    expect(ids.size).toBe(20_000);
  });

  test('every character equally likely (chi-square over 310,000 characters)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 10_000; i++)
      for (const ch of randomBase62(31)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = 310_000 / 62;
    let chi = 0;
    for (const n of counts.values()) chi += (n - expected) ** 2 / expected;
    // 61 degrees of freedom: above 130 has a chance of about 1e-6. Taking bytes modulo 62
    // without rejecting 248..255 makes the first eight characters 25 % likelier: chi ≈ 1,600.
    expect(chi).toBeLessThan(130);
  });

  test('pooled bytes: each slice fresh across refills, never handed out twice', () => {
    // 3,000 slices of 12 bytes (AES-GCM IVs) with single bytes between them: several 4 KiB
    // refills, slices ending at a pool's end and slices that would cross it (a new pool). A byte
    // handed out twice, or a slice rewritten by a later refill, shows as a repeated slice or a
    // changed one.
    const slices: Buffer[] = [];
    const copies: string[] = [];
    for (let i = 0; i < 3_000; i++) {
      const iv = pooledRandomBytes(12);
      expect(iv.length).toBe(12);
      slices.push(iv);
      copies.push(iv.toString('hex'));
      pooledRandomByte();
    }
    expect(new Set(copies).size).toBe(3_000);
    expect(slices.map((s) => s.toString('hex'))).toEqual(copies);
    expect(() => pooledRandomBytes(4097)).toThrow(RangeError);
  });
});
