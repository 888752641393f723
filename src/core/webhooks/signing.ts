// Webhook signatures (docs/reference/webhooks-and-events.md#signatures), as Stripe does them:
// `SVC-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` over the bytes `<t>.` + the exact body.
// The key is the whole secret string (`whsec_…`) as UTF-8 bytes, not decoded.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'SVC-Signature';
/** Receivers refuse a signature whose timestamp is further than this from their clock. */
export const DEFAULT_TOLERANCE_SEC = 300;

function digest(secret: string, t: string, body: Buffer | string): Buffer {
  const hmac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  hmac.update(`${t}.`, 'utf8');
  hmac.update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  return hmac.digest();
}

/** The SVC-Signature value for `body` (the exact bytes sent) at Unix time `t` (seconds). */
export function signatureHeader(secret: string, body: Buffer | string, t: number): string {
  if (!Number.isSafeInteger(t) || t < 0) throw new Error('signature time must be whole non-negative seconds');
  return `t=${t},v1=${digest(secret, String(t), body).toString('hex')}`;
}

export type VerifyFailure = 'malformed' | 'bad_timestamp' | 'missing_v1' | 'too_old' | 'mismatch';

/**
 * Checks an SVC-Signature header as a receiver should: `t` all digits, at least one `v1`,
 * |now − t| ≤ tolerance, and a digest equal (compared in constant time) to one `v1`.
 * `body` must be the raw bytes as received. Returns null when valid, else why not.
 */
export function checkSignature(
  secret: string,
  header: string | undefined,
  body: Buffer | string,
  opts: { nowSec?: number; toleranceSec?: number } = {},
): VerifyFailure | null {
  if (typeof header !== 'string' || header === '') return 'malformed';
  let t: string | undefined;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return 'malformed';
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === 't') {
      if (t !== undefined) return 'malformed';
      t = value;
    } else if (name === 'v1') v1.push(value);
    // Other schemes (v0, a future v2) are ignored, as Stripe's receivers do.
  }
  if (t === undefined || !/^\d+$/.test(t) || t.length > 15) return 'bad_timestamp';
  if (v1.length === 0) return 'missing_v1';
  const now = opts.nowSec ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(t)) > (opts.toleranceSec ?? DEFAULT_TOLERANCE_SEC)) return 'too_old';
  const expected = digest(secret, t, body);
  let match = false;
  for (const candidate of v1) {
    if (!/^[0-9a-f]{64}$/i.test(candidate)) continue;
    // Every candidate is compared, so the time taken does not tell which one matched.
    if (timingSafeEqual(expected, Buffer.from(candidate, 'hex'))) match = true;
  }
  return match ? null : 'mismatch';
}

/** True when the header is a valid signature of `body` under `secret` (see checkSignature). */
export function verifySignature(
  secret: string,
  header: string | undefined,
  body: Buffer | string,
  opts: { nowSec?: number; toleranceSec?: number } = {},
): boolean {
  return checkSignature(secret, header, body, opts) === null;
}
