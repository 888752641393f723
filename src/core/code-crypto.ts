// Stock codes are bearer value (contract section 10): encrypted at rest with AES-256-GCM under
// CODE_ENCRYPTION_KEY, found by a keyed hash, never logged (at most the last 4 characters).
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/** Format of a code, after trimming (the same rule for caller codes and stock imports). */
export const CODE_PATTERN = /^[A-Za-z0-9-]{4,64}$/;

const IV_BYTES = 12;
const TAG_BYTES = 16;
// Stored values carry a version prefix so a later key rotation or format change can tell them apart.
const FORMAT_PREFIX = 'v1:';
// HKDF labels: the lookup hash must not use the encryption key itself (one key, one purpose).
const HASH_KEY_INFO = 'redeem-gateway stock code lookup hash v1';

/** Trims surrounding whitespace; the result still has to match CODE_PATTERN. */
export function normaliseCode(raw: string): string {
  return raw.trim();
}

/** What a log line may show of a code: its last 4 characters. */
export const codeLast4 = (code: string): string => code.slice(-4);

function checkKey(codeKey: Buffer): void {
  if (codeKey.length !== 32) throw new Error('CODE_ENCRYPTION_KEY must be 32 bytes');
}

const hashKeys = new WeakMap<Buffer, Buffer>();

function hashKey(codeKey: Buffer): Buffer {
  let key = hashKeys.get(codeKey);
  if (!key) {
    checkKey(codeKey);
    key = Buffer.from(hkdfSync('sha256', codeKey, Buffer.alloc(0), HASH_KEY_INFO, 32));
    hashKeys.set(codeKey, key);
  }
  return key;
}

/** Keyed lookup hash of a code (HMAC-SHA256 under a subkey of codeKey), as hex. Stable per key. */
export function codeHash(codeKey: Buffer, code: string): string {
  return createHmac('sha256', hashKey(codeKey)).update(code, 'utf8').digest('hex');
}

/** Encrypts a code: `v1:` + base64(iv | tag | ciphertext), with a fresh random 12-byte IV. */
export function encryptCode(codeKey: Buffer, code: string): string {
  checkKey(codeKey);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', codeKey, iv);
  const ciphertext = Buffer.concat([cipher.update(code, 'utf8'), cipher.final()]);
  return FORMAT_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
}

/** Decrypts a value of encryptCode; throws if it was altered or encrypted under another key. */
export function decryptCode(codeKey: Buffer, stored: string): string {
  checkKey(codeKey);
  if (!stored.startsWith(FORMAT_PREFIX)) throw new Error('unknown stock code format');
  const raw = Buffer.from(stored.slice(FORMAT_PREFIX.length), 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('stock code ciphertext is truncated');
  const decipher = createDecipheriv('aes-256-gcm', codeKey, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
      'utf8',
    );
  } catch (err) {
    throw new Error('stock code failed authentication (tampered, or another key)', { cause: err });
  }
}
