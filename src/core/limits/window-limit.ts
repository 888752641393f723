// One limiter for every door (docs/reference/limits.md): a sliding-window log kept in the database,
// shared by every server process on it; its first rule is the burst limit (docs/reference/limits.md#redeem-burst-limit),
// at most 30 accepted requests per API key in any sliding 10-second window.
//
// The window is a log of accepted request times kept in one row per counted subject, rewritten
// by the SQL function burst_take (burst_windows, each limit's bucket named by a prefix: `read:`,
// `webhook:`, `redeliver:`, `bot:`), or for the burst limit by key_burst_take (key_burst_windows,
// a row of the key's customer). One upsert decides and records a take: ON CONFLICT DO UPDATE
// locks the subject's row, so concurrent takes of one subject (from any process or pool) run one
// after another, each seeing the row the previous one committed. The same statement drops times
// that left the window, so a row holds at most `limit` times and the work per call is bounded. A
// single statement is its own transaction: one round trip, and the lock is held only for that
// statement.
import type { Queryable } from '../../db/database.ts';
import { ApiError } from '../errors.ts';

/** A limit: at most `limit` accepted requests per subject in any sliding `windowMs`. */
export interface WindowRule {
  /** The bucket prefix and the words of the 429 message ("reads for this key"). */
  readonly bucket: string;
  readonly what: string;
  readonly limit: number;
  readonly windowMs: number;
}

export interface WindowSlot {
  allowed: boolean;
  limit: number;
  /** Slots left after this request. */
  remaining: number;
  /** Whole seconds, rounded up, until the oldest counted request leaves the window; 0 if none. */
  resetSec: number;
  /** On a refusal: whole seconds (at least 1) after which a request is accepted. */
  retryAfterSec?: number;
  /**
   * On a refusal: the time (ms) the oldest counted request leaves the window. No take of this
   * subject, by any process, can be accepted before it (a refusal is not recorded), so a process
   * may refuse the subject without asking the database until then.
   */
  fullUntilMs?: number;
}

/**
 * Takes one slot of `rule` for `subject` at `now`: accepted and recorded when fewer than
 * `rule.limit` requests were accepted in (now - window, now]; a refusal is not recorded (a 429
 * does not count in the window, as docs/reference/limits.md#redeem-burst-limit says of the burst limit).
 */
export async function takeWindowSlot(
  q: Queryable,
  rule: WindowRule,
  subject: string,
  now: Date,
): Promise<WindowSlot> {
  const take = { rule, subject, nowMs: now.getTime() };
  const r = await q.query<SlotRow>(
    `select ${SLOT_COLUMNS} from burst_take($1, $2, $3, $4) slot`,
    slotArgs(take),
    'window_take',
  );
  const row = r.rows[0];
  if (!row) throw new Error('window limit upsert returned no row');
  return slotFromRow(row, take);
}

/** One take of a rule's slot for a subject at a time. */
export interface SlotTake {
  readonly rule: WindowRule;
  readonly subject: string;
  readonly nowMs: number;
}

/**
 * The slot as two numbers, not the subject's whole log (up to `limit` times, 300 for a read: its
 * text and parsing were a tenth of a GET /v1/me's CPU). burst_take's log holds only times inside
 * the window, in order, but for the one it may append last (this request's, which a process whose
 * clock runs behind another's can stamp earlier): its oldest is the least of its first and last.
 */
export const SLOT_COLUMNS = `slot.ok as "slotOk", cardinality(slot.hits) as "slotCount",
            least(slot.hits[1], slot.hits[cardinality(slot.hits)]) as "slotOldestMs"`;

/** What `SLOT_COLUMNS` adds to a statement's row. */
export interface SlotRow {
  slotOk: boolean;
  slotCount: number;
  /** null when the log is empty (int8: a number, as the database seam reads every int8). */
  slotOldestMs: number | null;
}

export const slotArgs = (take: SlotTake) => [
  `${take.rule.bucket}:${take.subject}`,
  take.nowMs,
  take.rule.windowMs,
  take.rule.limit,
];

export function slotFromRow(row: SlotRow, take: SlotTake) {
  const { limit, windowMs } = take.rule;
  const oldest = row.slotOldestMs ?? Number.POSITIVE_INFINITY;
  return windowSlotOf(row.slotOk, row.slotCount, oldest, take.nowMs, limit, windowMs);
}

/** The answer for a verdict and the subject's counted times after it (this request's included). */
export function windowSlotFrom(
  allowed: boolean,
  countedMs: readonly number[],
  nowMs: number,
  limit: number,
  windowMs: number,
): WindowSlot {
  let oldest = Number.POSITIVE_INFINITY;
  let counted = 0;
  for (const t of countedMs) {
    if (t <= nowMs - windowMs) continue;
    counted++;
    if (t < oldest) oldest = t;
  }
  return windowSlotOf(allowed, counted, oldest, nowMs, limit, windowMs);
}

/** The answer for a verdict, the number of times counted in the window and the oldest of them. */
export function windowSlotOf(
  allowed: boolean,
  counted: number,
  oldest: number,
  nowMs: number,
  limit: number,
  windowMs: number,
): WindowSlot {
  // At oldest + window the oldest time is out of (now - window, now], so a slot is free then.
  const untilOldestLeaves = counted === 0 ? 0 : Math.ceil((oldest + windowMs - nowMs) / 1000);
  const slot: WindowSlot = {
    allowed,
    limit,
    remaining: Math.max(0, limit - counted),
    resetSec: Math.max(0, untilOldestLeaves),
  };
  if (!allowed) {
    slot.retryAfterSec = Math.max(1, untilOldestLeaves);
    slot.fullUntilMs = counted === 0 ? nowMs : oldest + windowMs;
  }
  return slot;
}

/** The 429 of a refused slot (docs/reference/limits.md#redeem-burst-limit): `retry_after_sec` in the body, `Retry-After` header. */
export function windowLimitedError(
  rule: Pick<WindowRule, 'what' | 'limit' | 'windowMs'>,
  retryAfterSec: number,
) {
  const sec = Math.max(1, retryAfterSec);
  return new ApiError(
    'rate_limited',
    `more than ${rule.limit} ${rule.what} in ${rule.windowMs / 1000} seconds; retry after ${sec} s`,
    { retry_after_sec: sec },
    { 'Retry-After': String(sec) },
  );
}

// The burst limit: each API key's own window, keyed by its bare id.

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

// The take is the SQL function key_burst_take (src/db/functions/burst.sql), also run inside a
// redeem's phase 1; the key's window is a row of its customer's (key_burst_windows), so on Citus
// it lives on the customer's worker with the key (docs/running/citus.md#distributed-functions).
// A time counts while it is in (now - window, now]; a time after `now` (another process's clock
// running ahead) counts too, so clock skew between processes can only make the limit stricter,
// never let a 31st through.
/**
 * Takes one burst slot for `keyId` at `now`: accepted and recorded when fewer than 30 requests
 * of the key were accepted in (now - 10 s, now]; refused otherwise, and a refusal is not
 * recorded. Run it on the database handle, not inside a longer transaction: the key's row stays
 * locked until the surrounding transaction ends.
 */
export async function takeBurstSlot(
  q: Queryable,
  key: { id: string; customerId: number },
  now: Date,
): Promise<BurstSlot> {
  const nowMs = now.getTime();
  const r = await q.query<{ ok: boolean; hits: Array<number | string> }>(
    'select ok, hits from key_burst_take($1, $2, $3, $4, $5)',
    [key.customerId, key.id, nowMs, BURST_WINDOW_MS, BURST_LIMIT],
    'key_burst_take',
  );
  const row = r.rows[0];
  if (!row) throw new Error('burst limit upsert returned no row');
  // pg returns bigint[] elements as strings, PGlite as numbers.
  return burstSlotFrom(row.ok, row.hits.map(Number), nowMs);
}

/** The key's window at `now` without taking a slot (for the headers of a refused request). */
export async function peekBurstSlot(
  q: Queryable,
  key: { id: string; customerId: number },
  now: Date,
): Promise<BurstSlot> {
  const r = await q.query<{ hitsMs: Array<number | string> }>(
    `select hits_ms as "hitsMs" from key_burst_windows where customer_id = $1 and key_id = $2`,
    [key.customerId, key.id],
  );
  return burstSlotFrom(true, (r.rows[0]?.hitsMs ?? []).map(Number), now.getTime());
}

/** The answer for a verdict and the key's counted times after it (this request's included). */
export function burstSlotFrom(allowed: boolean, countedMs: readonly number[], nowMs: number): BurstSlot {
  // The window arithmetic of every limit lives once, above (windowSlotFrom).
  const { fullUntilMs: _, ...slot } = windowSlotFrom(allowed, countedMs, nowMs, BURST_LIMIT, BURST_WINDOW_MS);
  return slot as BurstSlot;
}

/** The 429 of a refused slot (docs/reference/limits.md#redeem-burst-limit). */
export function rateLimitedError(slot: BurstSlot): ApiError {
  const sec = slot.retryAfterSec ?? 1;
  return new ApiError(
    'rate_limited',
    `more than ${slot.limit} requests in 10 seconds for this key; retry after ${sec} s`,
    { retry_after_sec: sec },
    { 'Retry-After': String(sec) },
  );
}
