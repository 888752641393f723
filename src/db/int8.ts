// How both databases read an int8 (bigint) column.

/** int8 always becomes a JS number: money is integer micro-dollars, far below 2^53. */
export function parseInt8(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`int8 value out of safe range: ${value}`);
  return n;
}
