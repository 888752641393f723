// The secrets of the data directory (docs/reference/running.md#safe-configuration): the admin token and the code encryption key,
// from the environment or from files made on first start, readable by this user only.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { loadKeyring } from '../core/crypto/keyring.ts';

export const ADMIN_TOKEN_FILE = 'admin-token';
export const ENCRYPTION_KEY_FILE = 'code-encryption.key';

/**
 * Creates a directory of the data directory readable by this user only (0700, docs/reference/running.md#safe-configuration):
 * it holds the embedded database, the admin token and the code encryption key. An existing
 * directory is left as the operator made it.
 */
export function ensurePrivateDir(dir: string): void {
  if (existsSync(dir)) return;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700); // whatever the umask
}

export class SharedDataDirError extends Error {
  override name = 'SharedDataDirError';
}

/**
 * Refuses a directory of the data directory that others can read or write: PGlite
 * writes its files 0666 and relies on the directory's 0700, which ensurePrivateDir sets only on a
 * directory it creates, so a pre-made one open to others would expose every code and secret. A
 * missing directory passes (it is created 0700).
 */
export function refuseSharedDir(dir: string): void {
  const mode = statSync(dir, { throwIfNoEntry: false })?.mode;
  if (mode === undefined || (mode & 0o077) === 0) return;
  throw new SharedDataDirError(
    `DATA_DIR ${dir} can be read or written by others (mode ${(mode & 0o777).toString(8)}): it holds the embedded database and its secrets; run chmod 700 ${dir}`,
  );
}

/** Reads a secret file of the data directory, creating it (mode 0600) on first use. */
export function readOrCreateSecret(dataDir: string, file: string, create: () => string): string {
  const path = join(dataDir, file);
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  ensurePrivateDir(dataDir);
  const value = create();
  writeFileSync(path, `${value}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return value;
}

/** The admin token and the code encryption keyring, made on first use when not configured. */
export function loadSecrets(
  config: Pick<Config, 'ADMIN_TOKEN' | 'CODE_ENCRYPTION_KEY'>,
  dataDir: string,
): { adminToken: string; codeKey: Buffer } {
  const adminToken =
    config.ADMIN_TOKEN ??
    readOrCreateSecret(dataDir, ADMIN_TOKEN_FILE, () => `adm_${randomBytes(24).toString('base64url')}`);

  // A keyring (docs/reference/operators-and-audit.md#encryption-key-rotation): the first key encrypts, every listed key decrypts.
  const codeKey = loadKeyring(
    config.CODE_ENCRYPTION_KEY ??
      readOrCreateSecret(dataDir, ENCRYPTION_KEY_FILE, () => randomBytes(32).toString('base64')),
    config.CODE_ENCRYPTION_KEY ? 'CODE_ENCRYPTION_KEY' : join(dataDir, ENCRYPTION_KEY_FILE),
  );
  return { adminToken, codeKey };
}
