// Verifying webhook deliveries: `SVC-Signature: t=<unix seconds>,v1=<hex>`, where v1 is
// HMAC-SHA256 keyed with the whole secret string (`whsec_…` as UTF-8) over `<t>.` followed by the
// raw body bytes. Verify the bytes exactly as received: a parsed and re-serialised body differs.
import { webCrypto } from './crypto.js';
import type { WebhookEvent } from './types.js';

export type WebhookVerificationReason =
  | 'missing_header'
  | 'bad_timestamp'
  | 'missing_v1'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch'
  | 'bad_body';

/** The delivery is not authentic (or not fresh): answer it 400 and do not act on it. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

export interface VerifyOptions {
  /** Largest accepted |now − t| in seconds (default 300). */
  toleranceSec?: number;
  /** The current Unix time in seconds (default the clock of this machine). */
  nowSec?: number;
}

const encoder = new TextEncoder();

function toBytes(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === 'string') return encoder.encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

/** Compares two strings in time that depends only on their lengths. */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

async function hmacHex(secret: string, t: string, body: Uint8Array): Promise<string> {
  const { subtle } = await webCrypto();
  const key = await subtle.importKey(
    'raw',
    encoder.encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const prefix = encoder.encode(`${t}.`);
  const message = new Uint8Array(prefix.length + body.length);
  message.set(prefix, 0);
  message.set(body, prefix.length);
  const mac = new Uint8Array(await subtle.sign('HMAC', key, message));
  return [...mac].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Checks a delivery and returns its event. `rawBody` is the body exactly as received (a string
 * or bytes), `signatureHeader` the SVC-Signature header, `secret` the `whsec_…` of the
 * registration. Several `v1` values are accepted (any one matching); digests are compared in
 * constant time; a `t` further than `toleranceSec` from now is refused. Throws
 * WebhookVerificationError when the delivery is not authentic.
 */
export async function verify(
  rawBody: string | Uint8Array | ArrayBuffer,
  signatureHeader: string | null | undefined,
  secret: string,
  { toleranceSec = 300, nowSec }: VerifyOptions = {},
): Promise<WebhookEvent> {
  if (typeof signatureHeader !== 'string' || signatureHeader.trim() === '') {
    throw new WebhookVerificationError('missing_header', 'no SVC-Signature header');
  }
  let t: string | undefined;
  const v1: string[] = [];
  for (const part of signatureHeader.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === 't') t = t === undefined ? value : '';
    else if (name === 'v1') v1.push(value.toLowerCase());
    // Other schemes are ignored: a future one can be added beside v1.
  }
  if (!t || !/^\d{1,15}$/.test(t))
    throw new WebhookVerificationError('bad_timestamp', 't is missing or not digits');
  if (v1.length === 0) throw new WebhookVerificationError('missing_v1', 'no v1 signature');
  const now = nowSec ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(t)) > toleranceSec) {
    throw new WebhookVerificationError(
      'timestamp_out_of_tolerance',
      `t is more than ${toleranceSec} s from now`,
    );
  }
  const bytes = toBytes(rawBody);
  const expected = await hmacHex(secret, t, bytes);
  let match = false;
  // Every candidate is compared, so the time taken does not tell which one matched.
  for (const candidate of v1) if (constantTimeEqual(expected, candidate)) match = true;
  if (!match)
    throw new WebhookVerificationError('signature_mismatch', 'no v1 signature matches this body and secret');
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('bad_body', 'the body is not JSON');
  }
}

/** Makes an SVC-Signature value for `rawBody` at Unix time `t` (for your own tests). */
export async function sign(
  rawBody: string | Uint8Array | ArrayBuffer,
  secret: string,
  t: number,
): Promise<string> {
  return `t=${t},v1=${await hmacHex(secret, String(t), toBytes(rawBody))}`;
}

export const webhooks = { verify, sign };
