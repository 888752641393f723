// Failed admin authentications per client address (docs/reference/operators-and-audit.md#the-admin-door): after ADMIN_LOCKOUT_AFTER
// failures (default 10) within WINDOW_MS, every admin request from that address (right token or
// wrong) is refused until WINDOW_MS after the last failure. Kept in this process's memory: the admin listener is one
// process's, and a restart forgetting a lockout costs a guesser one more window, no more.
import type { Clock } from '../core/clock.ts';

/** Failures within WINDOW_MS that lock an address out, unless ADMIN_LOCKOUT_AFTER says otherwise. */
export const FAILURE_LIMIT = 10;
export const WINDOW_MS = 60_000;
/** Addresses tracked at most; the oldest leaves first (a flood of addresses cannot grow memory). */
const MAX_ADDRESSES = 10_000;

export interface AdminThrottle {
  /** Seconds the address must still wait (at least 1), or 0 when it is not locked out. */
  lockedFor(ip: string): number;
  /** Counts one failed authentication from the address. */
  fail(ip: string): void;
}

export function createAdminThrottle(clock: Clock, failureLimit = FAILURE_LIMIT): AdminThrottle {
  // Per address: the times of its recent failures (oldest first) and the end of its lockout.
  const entries = new Map<string, { times: number[]; lockedUntil: number }>();
  return {
    lockedFor(ip) {
      const entry = entries.get(ip);
      const now = clock.now().getTime();
      if (!entry || entry.lockedUntil <= now) return 0;
      return Math.max(1, Math.ceil((entry.lockedUntil - now) / 1000));
    },
    fail(ip) {
      const now = clock.now().getTime();
      const entry = entries.get(ip);
      // Only the last failureLimit within the window matter.
      const times = [...(entry?.times ?? []).filter((t) => t > now - WINDOW_MS), now].slice(-failureLimit);
      const lockedUntil = times.length >= failureLimit ? now + WINDOW_MS : (entry?.lockedUntil ?? 0);
      entries.delete(ip);
      if (entries.size >= MAX_ADDRESSES) entries.delete(entries.keys().next().value!);
      entries.set(ip, { times, lockedUntil });
    },
  };
}
