// Bytes from the CSPRNG, drawn 4 KiB at a time (as crypto.randomUUID does) and each used once:
// one call into the CSPRNG per id or per IV was a few per cent of a request's CPU.
// The bytes are as random as randomBytes' own; a pool is replaced when used up, never rewritten,
// so a slice handed out stays as it was.
import { randomBytes } from 'node:crypto';

const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let next = 0;

function refill(): void {
  pool = randomBytes(POOL_BYTES);
  next = 0;
}

/** `n` fresh random bytes (n at most 4096), a view into the current pool. */
export function pooledRandomBytes(n: number): Buffer {
  if (n > POOL_BYTES) throw new RangeError(`at most ${POOL_BYTES} pooled random bytes at once`);
  if (next + n > pool.length) refill();
  const out = pool.subarray(next, next + n);
  next += n;
  return out;
}

/** One fresh random byte. */
export function pooledRandomByte(): number {
  if (next === pool.length) refill();
  return pool[next++]!;
}
