// Random, unguessable identifiers (contract section 0): a prefix and base62 characters drawn
// from the CSPRNG with rejection sampling, so every character is uniform. The bytes come from a
// pool filled 4 KiB at a time (as crypto.randomUUID does), each byte used once: one call into
// the CSPRNG per request was a few per cent of a GET /v1/me's CPU.
import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let next = 0;

function randomByte(): number {
  if (next === pool.length) {
    pool = randomBytes(POOL_BYTES);
    next = 0;
  }
  return pool[next++]!;
}

export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    // 248 = 4 * 62: bytes at or above it would bias the first characters.
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

export const newRequestId = () => `req_${randomBase62(24)}`;
export const newJobId = () => `job_${randomBase62(24)}`;
export const newEventId = () => `evt_${randomBase62(24)}`;
export const newKeyId = () => `key_${randomBase62(24)}`;
export const newWebhookSecret = () => `whsec_${randomBase62(32)}`;
export const newApiKey = (mode: 'live' | 'test') => `rk_${mode}_${randomBase62(32)}`;
