// Random, unguessable identifiers (docs/reference/keys-and-modes.md#conventions): a prefix and base62 characters drawn
// from the CSPRNG with rejection sampling, so every character is uniform. The bytes come from
// the pool of random-pool.ts, each byte used once.
import { pooledRandomByte } from './random-pool.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = pooledRandomByte();
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
