// The unknown-key limit (docs/reference/limits.md#unknown-key-floods): after `limit` requests from one client address within
// the window that bear a well-formed key that does not exist, that address's requests with an
// unknown key are refused without a database lookup until the window passes.
//
// Why in-process and not in the database like every other limit: the point of this limit is to
// spend no database work on a key flood, and asking a shared counter is itself a database
// statement. So each process counts the failures it saw; with N processes an address may cost up
// to N × limit lookups per window, which is still bounded. A refused address's request with a key
// this process already knows to exist (its key cache) is not refused: valid keys are unaffected.
//
// Memory is bounded: at most `maxAddresses` addresses are tracked (the least recently failing
// leaves first), each with at most `limit` times. IPv6 clients are counted per /64, the block one
// subscriber is usually given, so rotating addresses inside it does not escape the limit or flood
// the table.
import ipaddr from 'ipaddr.js';

export interface UnknownKeyLimitOptions {
  /** Unknown-key requests per address in a window before refusals start (documented: 50). */
  limit: number;
  /** Window length (documented: 10 s). */
  windowMs: number;
  /** Addresses tracked at once (default 10,000). */
  maxAddresses?: number;
}

export interface UnknownKeyLimit {
  readonly limit: number;
  readonly windowMs: number;
  /** Whole seconds (at least 1) the address must wait, or null when its requests may be looked up. */
  refusal(address: string, nowMs: number): number | null;
  /** Counts a lookup that found no key for a request from `address`. */
  recordUnknown(address: string, nowMs: number): void;
  /** Addresses tracked now (for tests and metrics). */
  size(): number;
}

export function createUnknownKeyLimit(options: UnknownKeyLimitOptions): UnknownKeyLimit {
  const { limit, windowMs } = options;
  const maxAddresses = options.maxAddresses ?? 10_000;
  // Insertion order is recency order: an address is re-inserted at each failure.
  const failures = new Map<string, number[]>();

  const live = (times: number[], nowMs: number) => {
    let drop = 0;
    while (drop < times.length && times[drop]! <= nowMs - windowMs) drop++;
    if (drop > 0) times.splice(0, drop);
    return times;
  };

  return {
    limit,
    windowMs,
    refusal(address, nowMs) {
      const times = failures.get(addressKey(address));
      if (!times) return null;
      live(times, nowMs);
      if (times.length < limit) return null;
      // The oldest counted failure leaves the window at times[0] + windowMs.
      return Math.max(1, Math.ceil((times[0]! + windowMs - nowMs) / 1000));
    },
    recordUnknown(address, nowMs) {
      const key = addressKey(address);
      const times = live(failures.get(key) ?? [], nowMs);
      failures.delete(key);
      times.push(nowMs);
      // Only the newest `limit` times decide a refusal.
      if (times.length > limit) times.splice(0, times.length - limit);
      failures.set(key, times);
      if (failures.size > maxAddresses) failures.delete(failures.keys().next().value!);
    },
    size: () => failures.size,
  };
}

/** The unit an address is counted in: the IPv4 address, or the /64 of an IPv6 address. */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}
