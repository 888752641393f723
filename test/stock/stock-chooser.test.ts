import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { CATALOG_UC } from '../../src/core/stock/catalog.ts';
import { chooseForUc, MAX_CODES, ucPossible } from '../../src/core/stock/chooser.ts';

type Counts = number[]; // per catalog category, catalog order

const sumOf = (counts: Counts) => counts.reduce((s, c, i) => s + c * CATALOG_UC[i]!, 0);
const total = (counts: Counts) => counts.reduce((s, c) => s + c, 0);

/** Every count vector within the limits (and MAX_CODES): the answer by enumeration. */
function bruteForce(uc: number, limits: Counts): Counts | null {
  let best: Counts | null = null;
  const counts = new Array<number>(limits.length).fill(0);
  const visit = (i: number) => {
    if (i < 0) {
      if (sumOf(counts) !== uc || total(counts) > MAX_CODES) return;
      if (
        !best ||
        total(counts) < total(best) ||
        (total(counts) === total(best) && largerFirst(counts, best))
      )
        best = [...counts];
      return;
    }
    for (let c = 0; c <= limits[i]!; c++) {
      counts[i] = c;
      visit(i - 1);
    }
    counts[i] = 0;
  };
  visit(limits.length - 1);
  return best;
}

/** The documented tie-break: more of the largest pack, then the next, … */
function largerFirst(a: Counts, b: Counts): boolean {
  for (let i = a.length - 1; i >= 0; i--) if (a[i] !== b[i]) return a[i]! > b[i]!;
  return false;
}

function asCounts(picks: { category: string; count: number }[]): Counts {
  return CATALOG_UC.map((uc) => picks.find((p) => p.category === String(uc))?.count ?? 0);
}

const available = (limits: Counts) => Object.fromEntries(CATALOG_UC.map((uc, i) => [String(uc), limits[i]!]));

/** uc values that are often makeable: sums of a few packs, sometimes nudged off. */
const ucArb = fc.oneof(
  fc
    .array(fc.constantFrom(...CATALOG_UC), { minLength: 1, maxLength: 8 })
    .map((packs) => packs.reduce((a, b) => a + b, 0)),
  fc.integer({ min: 1, max: 30_000 }),
  fc.integer({ min: 1, max: 6000 }).map((n) => n * 5),
);

describe('chooseForUc', () => {
  test('matches brute force on small stocks: exact sum, fewest codes, within stock, tie-break', () => {
    fc.assert(
      fc.property(
        ucArb,
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 6, maxLength: 6 }),
        (uc, limits) => {
          const got = chooseForUc(uc, available(limits));
          const expected = bruteForce(uc, limits);
          if (expected === null) {
            expect(got).toBeNull();
            return;
          }
          expect(got).not.toBeNull();
          const counts = asCounts(got!);
          expect(sumOf(counts)).toBe(uc);
          for (const [i, c] of counts.entries()) expect(c).toBeLessThanOrEqual(limits[i]!);
          expect(total(counts)).toBe(total(expected));
          expect(counts).toEqual(expected);
        },
      ),
      { numRuns: 400 },
    );
  });

  test('respects the 50-code cap with deep stock of two categories', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { minLength: 2, maxLength: 2 }),
        fc.integer({ min: 0, max: 70 }),
        fc.integer({ min: 0, max: 70 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 60 }),
        (cats, a, b, x, y) => {
          const limits = [0, 0, 0, 0, 0, 0];
          limits[cats[0]!] = a;
          limits[cats[1]!] = b;
          const uc = x * CATALOG_UC[cats[0]!]! + y * CATALOG_UC[cats[1]!]!;
          const got = chooseForUc(uc, available(limits));
          const expected = bruteForce(uc, limits);
          expect(got === null ? null : asCounts(got)).toEqual(expected);
          if (got) expect(total(asCounts(got))).toBeLessThanOrEqual(MAX_CODES);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('result lists largest packs first and omits zero counts', () => {
    const all = available([50, 50, 50, 50, 50, 50]);
    expect(chooseForUc(60 + 325 + 8100, all)).toEqual([
      { category: '8100', count: 1 },
      { category: '325', count: 1 },
      { category: '60', count: 1 },
    ]);
    expect(chooseForUc(405_000, all)).toEqual([{ category: '8100', count: 50 }]);
  });

  test('tie-break among equally few codes: the most of the largest pack, then the next', () => {
    // 10800 = 8100 + 4 × 660 + 60 = 6 × 1800, and 19310 = 2 × 8100 + 1800 + 660 + 2 × 325 =
    // 5 × 3850 + 60: six codes either way (the smallest such ties, found by search).
    const all = available([50, 50, 50, 50, 50, 50]);
    expect(chooseForUc(10_800, all)).toEqual([
      { category: '8100', count: 1 },
      { category: '660', count: 4 },
      { category: '60', count: 1 },
    ]);
    expect(chooseForUc(10_800, available([50, 50, 50, 50, 50, 0]))).toEqual([{ category: '1800', count: 6 }]);
    expect(chooseForUc(19_310, all)).toEqual([
      { category: '8100', count: 2 },
      { category: '1800', count: 1 },
      { category: '660', count: 1 },
      { category: '325', count: 2 },
    ]);
    expect(chooseForUc(19_310, available([50, 50, 50, 50, 50, 1]))).toEqual([
      { category: '3850', count: 5 },
      { category: '60', count: 1 },
    ]);
    // Ties found by search (two count vectors with equal size and sum), checked against brute force.
    fc.assert(
      fc.property(
        fc.constantFrom(10_800, 19_310, 10_800 + 60, 19_310 + 325, 10_800 + 19_310),
        fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 6, maxLength: 6 }),
        (uc, limits) => {
          const got = chooseForUc(uc, available(limits));
          expect(got === null ? null : asCounts(got)).toEqual(bruteForce(uc, limits));
        },
      ),
      { numRuns: 60 },
    );
  });

  test('fewest codes beats larger packs: 660 + 660 over 1800-less options', () => {
    // 1320 = 2 × 660 (2 codes) or 22 × 60; fewest wins.
    expect(chooseForUc(1320, available([50, 50, 50, 50, 50, 50]))).toEqual([{ category: '660', count: 2 }]);
    // With no 660s it must use 60s: 1320 = 22 × 60 (or 325×… is impossible).
    expect(chooseForUc(1320, available([50, 50, 0, 50, 50, 50]))).toEqual([{ category: '60', count: 22 }]);
  });

  test('impossible, malformed and out-of-range amounts are null', () => {
    const all = available([50, 50, 50, 50, 50, 50]);
    for (const uc of [0, -60, 1, 59, 61, 60.5, Number.NaN, Number.POSITIVE_INFINITY, 405_005, 10_000_000])
      expect(chooseForUc(uc, all)).toBeNull();
    expect(chooseForUc(60, {})).toBeNull();
    expect(chooseForUc(120, { '60': 1 })).toBeNull();
    // Unknown categories, negative and fractional counts are ignored or floored.
    expect(chooseForUc(60, { '61': 5, '60': -1 })).toBeNull();
    expect(chooseForUc(120, { '60': 2.9 })).toEqual([{ category: '60', count: 2 }]);
  });
});

describe('ucPossible', () => {
  // Every sum of at most 50 catalog codes, by levels of exactly k codes (k = 0 … 50).
  let makeable: Uint8Array;
  const MAX = MAX_CODES * Math.max(...CATALOG_UC);

  test('matches an enumeration of every sum of at most 50 codes', () => {
    makeable = new Uint8Array(MAX + 1);
    let level = new Uint8Array(MAX + 1);
    level[0] = 1;
    for (let k = 1; k <= MAX_CODES; k++) {
      const next = new Uint8Array(MAX + 1);
      for (let s = 0; s <= MAX; s++) {
        if (!level[s]) continue;
        for (const v of CATALOG_UC) if (s + v <= MAX) next[s + v] = 1;
      }
      for (let s = 0; s <= MAX; s++) if (next[s]) makeable[s] = 1;
      level = next;
    }
    for (let uc = 1; uc <= MAX + 100; uc++) {
      if (ucPossible(uc) !== (uc <= MAX && makeable[uc] === 1)) throw new Error(`ucPossible(${uc}) is wrong`);
    }
    fc.assert(
      fc.property(fc.integer({ min: -10, max: 2 * MAX }), (uc) => {
        expect(ucPossible(uc)).toBe(uc > 0 && uc <= MAX && makeable[uc] === 1);
      }),
    );
    expect(ucPossible(60.5)).toBe(false);
    expect(ucPossible(Number.NaN)).toBe(false);
  });

  test('agrees with chooseForUc on unlimited stock', () => {
    const deep = available([50, 50, 50, 50, 50, 50]);
    fc.assert(
      fc.property(ucArb, (uc) => {
        expect(ucPossible(uc)).toBe(chooseForUc(uc, deep) !== null);
      }),
    );
  });
});
