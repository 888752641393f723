// Chooses stock codes for a `uc` redeem (docs/reference/redeem.md#the-request): the fewest codes whose UC values sum
// exactly to `uc`, at most MAX_CODES in all. Pure functions, no I/O.
//
// Tie-break (deterministic): among all combinations with the fewest codes, the one with the most
// codes of the largest pack, then of the next largest, and so on (lexicographically largest count
// vector from the largest pack down). Larger packs first keeps small packs for small orders.
//
// Method: every catalog size is a multiple of their gcd (5), so sums are counted in gcd units
// (at most 50 × 8100 / 5 = 81,000 of them). A bounded "fewest coins" dynamic programme adds one
// category at a time, smallest first; for each residue class modulo the pack size it keeps a
// sliding-window minimum (a monotone deque), so each category costs O(uc / gcd) whatever its count.
import { CATALOG_UC } from './catalog.ts';

/** At most this many codes in one redeem. */
export const MAX_CODES = 50;

export interface Pick {
  category: string;
  count: number;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const UNIT = CATALOG_UC.reduce<number>((g, v) => gcd(g, v), 0);
/** Pack sizes in gcd units, smallest first (catalog order). */
const UNITS = CATALOG_UC.map((v) => v / UNIT);
const MAX_UC = MAX_CODES * Math.max(...CATALOG_UC);
const INF = 0x3fffffff;

function inRange(uc: number): boolean {
  return Number.isSafeInteger(uc) && uc > 0 && uc <= MAX_UC && uc % UNIT === 0;
}

/**
 * The fewest codes making exactly `uc`, using at most `available[category]` of each category (a
 * missing category counts as 0) and at most MAX_CODES in all; largest packs first in the result,
 * categories with a zero count left out. Null when no such combination exists.
 */
export function chooseForUc(uc: number, available: Readonly<Record<string, number>>): Pick[] | null {
  // Amounts no stock could make (the no_combo ones) are refused from a table, in O(1).
  if (!ucPossible(uc)) return null;
  const limits = CATALOG_UC.map((size) => {
    const raw = available[String(size)];
    return typeof raw === 'number' && Number.isFinite(raw)
      ? Math.max(0, Math.min(MAX_CODES, Math.floor(raw)))
      : 0;
  });
  // Cheap refusal before the table: not even every available code (capped) adds up to uc.
  if (CATALOG_UC.reduce((sum, size, i) => sum + size * limits[i]!, 0) < uc) return null;
  const target = uc / UNIT;
  const n = UNITS.length;
  let prev = new Int32Array(target + 1).fill(INF);
  prev[0] = 0;
  let cur = new Int32Array(target + 1);
  // taken[i][s]: how many codes of category i the best combination of categories 0..i for sum s uses.
  const taken: Uint8Array[] = [];
  const dequeIdx = new Int32Array(Math.floor(target / Math.min(...UNITS)) + 2);
  const dequeVal = new Int32Array(dequeIdx.length);
  for (let i = 0; i < n; i++) {
    const v = UNITS[i]!;
    const limit = limits[i]!;
    const take = new Uint8Array(target + 1);
    for (let r = 0; r < v && r <= target; r++) {
      // Positions s = r + t·v; cur[t] = t + min over t' in [t - limit, t] of (prev[t'] - t').
      let head = 0;
      let tail = 0;
      for (let t = 0, s = r; s <= target; t++, s += v) {
        const p = prev[s]!;
        if (p < INF) {
          const val = p - t;
          // Keep the older of equal values: the front is then the largest count among the minima.
          while (tail > head && dequeVal[tail - 1]! > val) tail--;
          dequeIdx[tail] = t;
          dequeVal[tail] = val;
          tail++;
        }
        while (tail > head && dequeIdx[head]! < t - limit) head++;
        if (tail > head) {
          cur[s] = dequeVal[head]! + t;
          take[s] = t - dequeIdx[head]!;
        } else {
          cur[s] = INF;
        }
      }
    }
    taken.push(take);
    [prev, cur] = [cur, prev];
  }
  if (prev[target]! > MAX_CODES) return null;
  const picks: Pick[] = [];
  let s = target;
  for (let i = n - 1; i >= 0; i--) {
    const count = taken[i]![s]!;
    if (count > 0) picks.push({ category: String(CATALOG_UC[i]), count });
    s -= count * UNITS[i]!;
  }
  return picks;
}

let fewestUnbounded: Int32Array | null = null;

/**
 * Whether some combination of catalog sizes (any number of each) of at most MAX_CODES codes sums
 * to `uc`: the `400 no_combo` check. A table of fewest codes per sum is built once (~81k entries).
 */
export function ucPossible(uc: number): boolean {
  if (!inRange(uc)) return false;
  if (!fewestUnbounded) {
    const limit = MAX_UC / UNIT;
    const best = new Int32Array(limit + 1).fill(INF);
    best[0] = 0;
    for (let s = 1; s <= limit; s++) {
      let m = INF;
      for (const v of UNITS) if (v <= s && best[s - v]! + 1 < m) m = best[s - v]! + 1;
      best[s] = m;
    }
    fewestUnbounded = best;
  }
  return fewestUnbounded[uc / UNIT]! <= MAX_CODES;
}
