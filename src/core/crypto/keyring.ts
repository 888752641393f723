// The encryption keyring (docs/reference/operators-and-audit.md#encryption-key-rotation): CODE_ENCRYPTION_KEY (or the data directory's key file)
// lists one or more 32-byte keys, comma- or line-separated; the first encrypts, every listed key
// decrypts. As AWS KMS and Tink keysets do: a primary key and older keys kept for reading until a
// rotation has rewritten every row under the primary.
//
// The rest of the service passes the primary key around as `codeKey` (a Buffer), as it did before
// keyrings. The ring is registered here against that Buffer, so code-crypto.ts finds the older keys
// of a primary it is given without every caller changing its signature.

const rings = new WeakMap<Buffer, readonly Buffer[]>();

/** Parses a keyring's text: base64 keys separated by commas or newlines, each 32 bytes. */
export function parseKeyring(text: string): Buffer[] {
  const entries = text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error('the keyring lists no key');
  const keys = entries.map((entry, i) => {
    const key = /^[A-Za-z0-9+/]+=*$/.test(entry) ? Buffer.from(entry, 'base64') : Buffer.alloc(0);
    if (key.length !== 32) throw new Error(`key ${i + 1} of the keyring is not 32 bytes of base64`);
    return key;
  });
  const seen = new Set(keys.map((k) => k.toString('hex')));
  if (seen.size !== keys.length) throw new Error('the keyring lists a key twice');
  return keys;
}

/**
 * Registers a keyring and returns its primary key, the `codeKey` the service passes around. A key
 * passed without a ring (tests, tools) is a ring of one.
 */
export function installKeyring(keys: readonly Buffer[]): Buffer {
  const primary = keys[0];
  if (!primary) throw new Error('the keyring lists no key');
  rings.set(primary, [...keys]);
  return primary;
}

/** Parses and registers the keyring of `source` (a setting or a file, named in an error). */
export function loadKeyring(text: string, source: string): Buffer {
  try {
    return installKeyring(parseKeyring(text));
  } catch (err) {
    throw new Error(`${source}: ${(err as Error).message}`, { cause: err });
  }
}

/** Every key of the primary's ring, the primary first. */
export function ringOf(primary: Buffer): readonly Buffer[] {
  return rings.get(primary) ?? [primary];
}
