// Burst limit (contract section 6): at most 30 accepted requests per API key in any sliding
// 10-second window, counted in the database so every server process on it shares the limit.
//
// The window is a log of accepted request times kept in one row per key (burst_windows). One
// upsert decides and records a take: ON CONFLICT DO UPDATE locks the key's row, so concurrent
// takes of one key (from any process or pool) run one after another, each seeing the row the
// previous one committed. The same statement drops times that left the window, so a row holds
// at most 30 times and the work per call is bounded. A single statement is its own transaction:
// one round trip, and the lock is held only for that statement.
import type { Queryable } from '../../db/database.ts';
import { ApiError } from '../errors.ts';
import { windowSlotFrom } from '../limits/window-limit.ts';

/** Requests accepted per key in any window. */
export const BURST_LIMIT = 30;
/** Length of the sliding window. */
export const BURST_WINDOW_MS = 10_000;

export interface BurstSlot {
  allowed: boolean;
  limit: typeof BURST_LIMIT;
  /** Slots left after this request. */
  remaining: number;
  /** Whole seconds, rounded up, until the oldest counted request leaves the window; 0 if none. */
  resetSec: number;
  /** On a refusal: whole seconds (at least 1) after which a request is accepted. */
  retryAfterSec?: number;
}

// The take is the SQL function burst_take (src/db/functions/burst.sql), also run inside a redeem's phase 1.
// A time counts while it is in (now - window, now]; a time after `now` (another process's clock
// running ahead) counts too, so clock skew between processes can only make the limit stricter,
// never let a 31st through.
/**
 * Takes one burst slot for `keyId` at `now`: accepted and recorded when fewer than 30 requests
 * of the key were accepted in (now - 10 s, now]; refused otherwise, and a refusal is not
 * recorded. Run it on the database handle, not inside a longer transaction: the key's row stays
 * locked until the surrounding transaction ends.
 */
export async function takeBurstSlot(q: Queryable, keyId: string, now: Date): Promise<BurstSlot> {
  const nowMs = now.getTime();
  const r = await q.query<{ ok: boolean; hits: Array<number | string> }>(
    'select ok, hits from burst_take($1, $2, $3, $4)',
    [keyId, nowMs, BURST_WINDOW_MS, BURST_LIMIT],
    'burst_take',
  );
  const row = r.rows[0];
  if (!row) throw new Error('burst limit upsert returned no row');
  // pg returns bigint[] elements as strings, PGlite as numbers.
  return burstSlotFrom(row.ok, row.hits.map(Number), nowMs);
}

/** The key's window at `now` without taking a slot (for the headers of a refused request). */
export async function peekBurstSlot(q: Queryable, keyId: string, now: Date): Promise<BurstSlot> {
  const r = await q.query<{ hitsMs: Array<number | string> }>(
    `select hits_ms as "hitsMs" from burst_windows where key_id = $1`,
    [keyId],
  );
  return burstSlotFrom(true, (r.rows[0]?.hitsMs ?? []).map(Number), now.getTime());
}

/** The answer for a verdict and the key's counted times after it (this request's included). */
export function burstSlotFrom(allowed: boolean, countedMs: readonly number[], nowMs: number): BurstSlot {
  // The window arithmetic of every limit lives once, in core/limits/window-limit.ts.
  const { fullUntilMs: _, ...slot } = windowSlotFrom(allowed, countedMs, nowMs, BURST_LIMIT, BURST_WINDOW_MS);
  return slot as BurstSlot;
}

/** The contract's 429 for a refused slot. */
export function rateLimitedError(slot: BurstSlot): ApiError {
  const sec = slot.retryAfterSec ?? 1;
  return new ApiError(
    'rate_limited',
    `more than ${slot.limit} requests in 10 seconds for this key; retry after ${sec} s`,
    { retry_after_sec: sec },
    { 'Retry-After': String(sec) },
  );
}
