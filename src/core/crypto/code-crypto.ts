// Stock codes are bearer value (docs/reference/operators-and-audit.md#stock-import, docs/reference/redeem.md#stock-codes-are-masked): encrypted at rest with
// AES-256-GCM, found by a keyed hash, never logged (at most the last 4 characters) and never shown
// in full in an answer.
//
// Keys. CODE_ENCRYPTION_KEY is a master key only; each purpose gets its own HKDF-SHA256 subkey:
// the lookup hash, the encryption of codes, the encryption of webhook secrets. A leak or misuse of
// one subkey says nothing about the others.
//
// Stored format `v2:<kid>:<base64(iv | tag | ciphertext)>`. `kid` names the master key (8 hex
// characters derived from it, not secret), so a value written under a rotated-out key is told
// from a damaged one and a keyring can be added without a format change. The associated data
// binds a ciphertext to its row: table, customer, mode and the code's lookup hash (webhook
// secrets: table, customer and mode). A ciphertext copied onto another customer's row, another
// mode or another table fails authentication instead of decrypting there.
//
// `v1:<base64(iv | tag | ciphertext)>` (raw master key, no associated data) was written before;
// such rows are still read, and a rotation (rotation.ts) rewrites them as bound v2 rows. New
// writes are always v2.
//
// Keyrings (docs/reference/operators-and-audit.md#encryption-key-rotation, keyring.ts): the master key passed in is the ring's primary; values
// written under another key of its ring (by its `kid`) are decrypted with that key. Each ring key
// has its own lookup-hash subkey, so a code's hash depends on the key: codeHashes gives the hash
// under every ring key, and duplicate detection looks for any of them.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync } from 'node:crypto';
import { pooledRandomBytes } from '../random-pool.ts';
import { ringOf } from './keyring.ts';

/** Format of a code, after trimming (the same rule for caller codes and stock imports). */
export const CODE_PATTERN = /^[A-Za-z0-9-]{4,64}$/;

const IV_BYTES = 12;
const TAG_BYTES = 16;
const V1_PREFIX = 'v1:';
const V2_PREFIX = 'v2:';
// HKDF labels, one per purpose. The hash label is the one used since v1: changing it would lose
// every stored lookup hash.
const HASH_KEY_INFO = 'redeem-gateway stock code lookup hash v1';
const CODE_KEY_INFO = 'redeem-gateway code encryption v2';
const SECRET_KEY_INFO = 'redeem-gateway webhook secret encryption v2';
const KID_INFO = 'redeem-gateway key id v2';

/** Where a code ciphertext lives: its table, owner and lookup hash (the associated data). */
export interface CodeBinding {
  table: 'stock_codes' | 'job_codes' | 'bot_redeems';
  customerId: number;
  mode: string;
  codeHash: string;
}

/** Where a webhook secret ciphertext lives. */
export interface SecretBinding {
  customerId: number;
  mode: string;
}

/** Trims surrounding whitespace; the result still has to match CODE_PATTERN. */
export function normaliseCode(raw: string): string {
  return raw.trim();
}

/** What a log line may show of a code: its last 4 characters. */
export const codeLast4 = (code: string): string => code.slice(-4);

/** A code as answers show it (docs/reference/redeem.md#stock-codes-are-masked): every character but the last 4 replaced by `*`, same length. */
export function maskCode(last4: string, length: number): string {
  return '*'.repeat(Math.max(0, length - last4.length)) + last4;
}

interface DerivedKeys {
  hash: Buffer;
  code: Buffer;
  secret: Buffer;
  kid: string;
}

const derivedKeys = new WeakMap<Buffer, DerivedKeys>();

function keysOf(masterKey: Buffer): DerivedKeys {
  let keys = derivedKeys.get(masterKey);
  if (!keys) {
    if (masterKey.length !== 32) throw new Error('CODE_ENCRYPTION_KEY must be 32 bytes');
    const derive = (info: string, bytes = 32) =>
      Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), info, bytes));
    keys = {
      hash: derive(HASH_KEY_INFO),
      code: derive(CODE_KEY_INFO),
      secret: derive(SECRET_KEY_INFO),
      kid: derive(KID_INFO, 4).toString('hex'),
    };
    derivedKeys.set(masterKey, keys);
  }
  return keys;
}

/** The key id written into v2 values for this master key (8 hex characters). */
export function keyId(masterKey: Buffer): string {
  return keysOf(masterKey).kid;
}

/** Keyed lookup hash of a code (HMAC-SHA256 under a subkey of the master key), as hex. Stable per key. */
export function codeHash(masterKey: Buffer, code: string): string {
  return createHmac('sha256', keysOf(masterKey).hash).update(code, 'utf8').digest('hex');
}

/** The code's lookup hash under every key of the primary's ring, the primary's first. */
export function codeHashes(masterKey: Buffer, code: string): string[] {
  return ringOf(masterKey).map((key) => codeHash(key, code));
}

/** The key ids of the primary's ring, the primary's first. */
export function ringKeyIds(masterKey: Buffer): string[] {
  return ringOf(masterKey).map(keyId);
}

/** The key id a stored value names (`v1` for values written before key ids). */
export function storedKeyId(stored: string): string {
  if (!stored.startsWith(V2_PREFIX)) return 'v1';
  const sep = stored.indexOf(':', V2_PREFIX.length);
  return sep < 0 ? 'unknown' : stored.slice(V2_PREFIX.length, sep);
}

/** The prefix of every value written under this key (`v2:<kid>:`), to find the others in SQL. */
export const currentPrefix = (masterKey: Buffer) => `${V2_PREFIX}${keyId(masterKey)}:`;

// NUL separates the fields: none of them can contain one.
const codeAad = (b: CodeBinding) =>
  Buffer.from(`${b.table}\u0000${b.customerId}\u0000${b.mode}\u0000${b.codeHash}`, 'utf8');
const secretAad = (b: SecretBinding) => Buffer.from(`webhooks\u0000${b.customerId}\u0000${b.mode}`, 'utf8');

function seal(key: Buffer, kid: string, plaintext: string, aad: Buffer): string {
  // A fresh random IV for every value (AES-GCM's nonce), from the pooled CSPRNG bytes.
  const iv = pooledRandomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `${V2_PREFIX}${kid}:${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
}

function open(key: Buffer, raw: Buffer, aad: Buffer | null, what: string): string {
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error(`${what} ciphertext is truncated`);
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
      'utf8',
    );
  } catch (err) {
    throw new Error(`${what} failed authentication (tampered, moved to another row, or another key)`, {
      cause: err,
    });
  }
}

/**
 * Decrypts either stored format: v2 with the `purpose` subkey of the ring key its kid names, and
 * `aad`; v1 with whichever ring key opens it, and no associated data.
 */
function unseal(
  masterKey: Buffer,
  purpose: 'code' | 'secret',
  stored: string,
  aad: Buffer,
  what: string,
): string {
  const ring = ringOf(masterKey);
  if (stored.startsWith(V2_PREFIX)) {
    const sep = stored.indexOf(':', V2_PREFIX.length);
    if (sep < 0) throw new Error(`unknown ${what} format`);
    const kid = stored.slice(V2_PREFIX.length, sep);
    const key = ring.find((k) => keysOf(k).kid === kid);
    if (!key)
      throw new Error(
        `${what} was encrypted under key ${kid}, which is not in the keyring (${ringKeyIds(masterKey).join(', ')})`,
      );
    return open(keysOf(key)[purpose], Buffer.from(stored.slice(sep + 1), 'base64'), aad, what);
  }
  if (stored.startsWith(V1_PREFIX)) {
    const raw = Buffer.from(stored.slice(V1_PREFIX.length), 'base64');
    let failure: unknown;
    for (const key of ring) {
      try {
        return open(key, raw, null, what);
      } catch (err) {
        failure = err;
      }
    }
    throw failure;
  }
  throw new Error(`unknown ${what} format`);
}

/** Encrypts a code for the row `binding` names: `v2:<kid>:` + base64(iv | tag | ciphertext). */
export function encryptCode(masterKey: Buffer, code: string, binding: CodeBinding): string {
  const keys = keysOf(masterKey);
  return seal(keys.code, keys.kid, code, codeAad(binding));
}

/** Decrypts a value of encryptCode (or a v1 value); throws if altered, moved to another row, or under another key. */
export function decryptCode(masterKey: Buffer, stored: string, binding: CodeBinding): string {
  return unseal(masterKey, 'code', stored, codeAad(binding), 'stock code');
}

/** The length of the code a stored value holds, without decrypting it (codes are ASCII). */
export function storedCodeLength(stored: string): number {
  const body = stored.slice(stored.lastIndexOf(':') + 1);
  return Buffer.from(body, 'base64').length - IV_BYTES - TAG_BYTES;
}

/** Encrypts a webhook secret for its registration (customer and mode), under the secrets' own subkey. */
export function encryptSecret(masterKey: Buffer, secret: string, binding: SecretBinding): string {
  const keys = keysOf(masterKey);
  return seal(keys.secret, keys.kid, secret, secretAad(binding));
}

/** Decrypts a value of encryptSecret (or a v1 value written before v2). */
export function decryptSecret(masterKey: Buffer, stored: string, binding: SecretBinding): string {
  return unseal(masterKey, 'secret', stored, secretAad(binding), 'webhook secret');
}
