// The service's own response headers (docs/reference/limits.md#redeem-burst-limit, docs/reference/keys-and-modes.md#response-headers), in one place both the apps and
// the routes import: the API version every answer carries, the quota and balance headers of an
// identified key, and its burst window's RateLimit headers.
import { remainingToday, spendableMicros } from '../core/accounts/accounts.ts';
import type { BurstSlot } from '../core/limits/window-limit.ts';
import { formatUsd } from '../core/money.ts';

export const API_VERSION = '1.0.0';

/** Every public answer's SVC- headers before anything sets them otherwise. */
export const EVERY_RESPONSE_HEADERS = {
  'SVC-Version': API_VERSION,
  'SVC-Cost': '0',
  'SVC-Idempotent-Replay': 'false',
};

/** The quota and balance headers from an account's state. */
export function setAccountHeaders(
  reply: { header(name: string, value: string): unknown },
  state: Parameters<typeof remainingToday>[0] & Parameters<typeof spendableMicros>[0],
) {
  const used = state.plan ? state.usedToday : 0;
  reply.header('SVC-Quota-Used', String(used));
  reply.header('SVC-Quota-Remaining', String(remainingToday(state)));
  reply.header('SVC-Balance-Usd', formatUsd(spendableMicros(state)));
}

/** The RateLimit headers of a key's burst window (docs/reference/limits.md#redeem-burst-limit). */
export function setRateLimitHeaders(
  reply: { header(name: string, value: string): unknown },
  slot: BurstSlot,
) {
  reply.header('RateLimit-Limit', String(slot.limit));
  reply.header('RateLimit-Remaining', String(slot.remaining));
  reply.header('RateLimit-Reset', String(slot.resetSec));
}
