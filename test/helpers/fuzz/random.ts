// The fuzzer's seeded generator (mulberry32) and its two helpers: the same seed gives the same
// sequence, so the same seed gives the same requests.

export type Random = () => number;

/** mulberry32: small, fast, good enough to pick from pools; the same seed, the same sequence. */
export function seeded(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
export const pick = <T>(r: Random, list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
export const chance = (r: Random, p: number) => r() < p;
