// An in-process cache of what never changes about an API key: customer, mode, prefix, scopes,
// allowlist, expiry, label. What can change (revocation, the customer's state) is never cached:
// it is read again by the statement each request runs anyway, so a revocation made by any
// process, or by hand in SQL, is seen by the very next request, with no invalidation protocol.
import type { KeyRecord } from './keys.ts';

/** A key's fixed facts: the record without the two fields that change. */
export type KeyFacts = Omit<KeyRecord, 'revokedAt' | 'customerDisabled'>;

/** Enough for every key a busy process sees; the oldest entry leaves first when it is full. */
const DEFAULT_CAPACITY = 10_000;

export interface KeyCache {
  /** The facts of the key with this SHA-256 digest, if this process has seen it. */
  get(digest: string): KeyFacts | undefined;
  set(digest: string, key: KeyRecord): void;
}

export function createKeyCache(capacity = DEFAULT_CAPACITY): KeyCache {
  const entries = new Map<string, KeyFacts>();
  return {
    get: (digest) => entries.get(digest),
    set(digest, key) {
      if (entries.has(digest)) return;
      if (entries.size >= capacity) entries.delete(entries.keys().next().value!);
      const { revokedAt: _r, customerDisabled: _d, ...facts } = key;
      entries.set(digest, facts);
    },
  };
}
