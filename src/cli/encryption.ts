// `redeem-gateway encryption new-key` (docs/reference/operators-and-audit.md#encryption-key-rotation): on the embedded database, prepends a newly
// generated key to the data directory's key file, so the next start encrypts with it while every
// older key still decrypts; then `POST /admin/v1/encryption/rotate` (or the console) rewrites the
// rows, and the older lines can be deleted once GET /admin/v1/encryption counts none under them.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config.ts';
import { keyId } from '../core/crypto/code-crypto.ts';
import { parseKeyring } from '../core/crypto/keyring.ts';
import { ENCRYPTION_KEY_FILE } from '../start/secrets.ts';

const HELP = `redeem-gateway encryption new-key

  Prepends a new random key to DATA_DIR/${ENCRYPTION_KEY_FILE} (the embedded database's keyring:
  the first key encrypts, every key decrypts). Restart the server, then start a rotation
  (POST /admin/v1/encryption/rotate). With CODE_ENCRYPTION_KEY set, edit that setting instead:
  put a new key (32 random bytes, base64) first, comma-separated.
`;

export function runEncryption(args: string[], config: Config, fail: (message: string) => Error): string {
  if (args[0] !== 'new-key') return HELP;
  if (config.CODE_ENCRYPTION_KEY)
    throw fail('CODE_ENCRYPTION_KEY is set: put the new key first in that setting (comma-separated) instead');
  const path = join(resolve(config.DATA_DIR), ENCRYPTION_KEY_FILE);
  if (!existsSync(path)) throw fail(`${path} does not exist: start the server once to create it`);
  const keys = parseKeyring(readFileSync(path, 'utf8'));
  const fresh = randomBytes(32);
  const lines = [fresh, ...keys].map((k) => k.toString('base64'));
  writeFileSync(path, `${lines.join('\n')}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return `new key ${keyId(fresh)} added first to ${path} (keys: ${[fresh, ...keys].map(keyId).join(', ')}); restart the server, then rotate\n`;
}
