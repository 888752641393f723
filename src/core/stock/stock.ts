// Merchants' stock of prepaid codes (docs/reference/redeem.md#the-request, docs/reference/redeem.md#stock, docs/reference/operators-and-audit.md#stock-import): import, counts, and
// reservation for stock redeems. Codes are stored encrypted; a keyed hash makes them unique
// across every customer and mode. Every function takes the query handle first, so it runs inside
// or outside the caller's transaction.
import type { Queryable } from '../../db/database.ts';
import { lockAccount } from '../billing/holds.ts';
import type { Clock } from '../clock.ts';
import {
  CODE_PATTERN,
  codeHash,
  codeHashes,
  codeLast4,
  decryptCode,
  encryptCode,
  normaliseCode,
} from '../crypto/code-crypto.ts';
import type { Mode } from '../vocabulary.ts';
import { CATALOG_UC, CATEGORIES, categoryUc, isCategory } from './catalog.ts';
import { chooseForUc, type Pick } from './chooser.ts';

export type StockState = 'available' | 'reserved' | 'consumed' | 'deleted' | 'quarantined';

/** A stock code taken for a job, decrypted for the activator. Never log `code` (at most its last 4). */
export interface ReservedCode {
  stockId: number;
  code: string;
  category: string;
  uc: number;
}

export interface ImportResult {
  added: number;
  duplicates: number;
  rejected: number;
}

export interface CategoryCounts {
  category: string;
  uc: number;
  available: number;
  reserved: number;
  quarantined: number;
}

// Rows per insert statement: keeps each statement's arrays modest for 10,000-code imports.
const IMPORT_BATCH = 1000;

/**
 * Serialises stock reservations of one customer and mode until the transaction ends. Without it,
 * two concurrent redeems could each see codes the other is taking (counts include rows locked but
 * not yet updated), and one would answer no_stock although enough stock remained for both. The
 * lock is the account row's, the one a redeem's phase 1 holds already (taking it again in the
 * same transaction waits for nothing): one lock per customer and mode, not a second one beside it.
 */
async function lockStock(tx: Queryable, customerId: number, mode: Mode): Promise<void> {
  await lockAccount(tx, customerId, mode);
}

/**
 * Adds codes to a customer's stock in one mode and category. Each code is trimmed; one that does
 * not match CODE_PATTERN is `rejected`; one already in any stock (any customer, mode or state) or
 * earlier in this import is a `duplicate`. Run in a transaction: a code's hash is unique within
 * one customer by the table's key, and across customers by a look at every stock made under a
 * lock on each new hash (taken in hash order, held to the commit), so two imports of one code at
 * once, for two customers, add it once. On Citus the look may ask every worker; the lock is the
 * coordinator's (docs/running/citus.md).
 */
export async function importStock(
  q: Queryable,
  codeKey: Buffer,
  input: { customerId: number; mode: Mode; category: string; codes: readonly string[] },
  clock: Clock,
): Promise<ImportResult> {
  const uc = categoryUc(input.category);
  let rejected = 0;
  let duplicates = 0;
  const seen = new Set<string>();
  const fresh: string[] = [];
  for (const raw of input.codes) {
    const code = normaliseCode(raw);
    if (!CODE_PATTERN.test(code)) rejected++;
    else if (seen.has(code)) duplicates++;
    else {
      seen.add(code);
      fresh.push(code);
    }
  }
  let added = 0;
  const now = clock.now();
  for (let i = 0; i < fresh.length; i += IMPORT_BATCH) {
    const slice = fresh.slice(i, i + IMPORT_BATCH);
    // Codes stored under an older key of the ring (a rotation not finished) are duplicates too.
    const batch = await withoutKnownHashes(q, codeKey, slice);
    duplicates += slice.length - batch.length;
    const hashes = batch.map((c) => codeHash(codeKey, c));
    const bound = (j: number) =>
      ({
        table: 'stock_codes',
        customerId: input.customerId,
        mode: input.mode,
        codeHash: hashes[j]!,
      }) as const;
    if (batch.length === 0) continue;
    // Rows as values, not a select from unnest(): on Citus an insert fed by a select runs through
    // the coordinator as a copy, a two-phase commit; values of one customer go to its worker
    // (docs/running/citus.md#two-phase-commits).
    const rows = batch.map(
      (_, j) => `($1, $2, $3, $4, $${6 + 3 * j}, $${7 + 3 * j}, $${8 + 3 * j}, 'available', $5, $5)`,
    );
    const r = await q.query(
      `insert into stock_codes
         (customer_id, mode, category, uc, code_hash, code_encrypted, last4, state, created_at, updated_at)
       values ${rows.join(', ')}
       on conflict (customer_id, code_hash) do nothing
       returning id`,
      [
        input.customerId,
        input.mode,
        input.category,
        uc,
        now,
        ...batch.flatMap((c, j) => [hashes[j]!, encryptCode(codeKey, c, bound(j)), codeLast4(c)]),
      ],
    );
    added += r.rows.length;
    duplicates += batch.length - r.rows.length;
  }
  return { added, duplicates, rejected };
}

/**
 * The codes of `batch` that no stock row holds, under the current key or an older key of the ring
 * (docs/reference/operators-and-audit.md#encryption-key-rotation: duplicate detection works across
 * keys while a rotation runs), each new hash locked first.
 */
async function withoutKnownHashes(q: Queryable, codeKey: Buffer, batch: string[]): Promise<string[]> {
  if (batch.length === 0) return batch;
  const all = batch.map((c) => codeHashes(codeKey, c));
  await q.query(
    'select pg_advisory_xact_lock(hashtextextended(h, 7203118451)) from (select h from unnest($1::text[]) h order by h) s',
    [all.map((hs) => hs[0]!)],
  );
  const r = await q.query<{ h: string }>('select code_hash as h from stock_codes where code_hash = any($1)', [
    all.flat(),
  ]);
  const known = new Set(r.rows.map((row) => row.h));
  return batch.filter((_, j) => !all[j]!.some((h) => known.has(h)));
}

/** Counts per catalog category, in catalog order, zero counts included. */
export async function stockCounts(q: Queryable, customerId: number, mode: Mode): Promise<CategoryCounts[]> {
  const r = await q.query<{ category: string; state: StockState; n: number }>(
    `select category, state, count(*)::int as n
       from stock_codes
      where customer_id = $1 and mode = $2 and state in ('available', 'reserved', 'quarantined')
      group by category, state`,
    [customerId, mode],
  );
  const counts = CATALOG_UC.map((uc) => ({
    category: String(uc),
    uc,
    available: 0,
    reserved: 0,
    quarantined: 0,
  }));
  for (const row of r.rows) {
    const c = counts.find((x) => x.category === row.category);
    if (c && (row.state === 'available' || row.state === 'reserved' || row.state === 'quarantined'))
      c[row.state] = row.n;
  }
  return counts;
}

/** The stock record of GET /v1/stock (less ok, request_id, mode) and of the admin customer view. */
export async function stockSummary(q: Queryable, customerId: number, mode: Mode) {
  const categories = await stockCounts(q, customerId, mode);
  return {
    categories,
    total_available: categories.reduce((n, c) => n + c.available, 0),
    total_uc_available: categories.reduce((n, c) => n + c.available * c.uc, 0),
  };
}

/** Available codes per category (every catalog category present), for the chooser. */
export async function availableCounts(
  q: Queryable,
  customerId: number,
  mode: Mode,
): Promise<Record<string, number>> {
  const r = await q.query<{ category: string; n: number }>(
    `select category, count(*)::int as n from stock_codes
      where customer_id = $1 and mode = $2 and state = 'available'
      group by category`,
    [customerId, mode],
  );
  const available: Record<string, number> = Object.fromEntries(CATEGORIES.map((c) => [c, 0]));
  for (const row of r.rows) if (isCategory(row.category)) available[row.category] = row.n;
  return available;
}

interface LockedRow {
  id: number;
  customerId: number;
  mode: Mode;
  category: string;
  uc: number;
  codeHash: string;
  codeEncrypted: string;
}

const LOCKED_COLUMNS = `id, customer_id as "customerId", mode, category, uc, code_hash as "codeHash",
  code_encrypted as "codeEncrypted"`;

/** A stock row's code, decrypted under its row's binding (code-crypto.ts). */
const decryptStock = (codeKey: Buffer, r: LockedRow) =>
  decryptCode(codeKey, r.codeEncrypted, {
    table: 'stock_codes',
    customerId: r.customerId,
    mode: r.mode,
    codeHash: r.codeHash,
  });

/** Locks up to `limit` of the oldest available codes of a category that no other transaction holds. */
async function lockAvailable(
  tx: Queryable,
  customerId: number,
  mode: Mode,
  category: string,
  limit: number,
): Promise<LockedRow[]> {
  const r = await tx.query<LockedRow>(
    `select ${LOCKED_COLUMNS}
       from stock_codes
      where customer_id = $1 and mode = $2 and category = $3 and state = 'available'
      order by id
      limit $4
      for update skip locked`,
    [customerId, mode, category, limit],
  );
  return r.rows;
}

async function markReserved(
  tx: Queryable,
  codeKey: Buffer,
  rows: readonly LockedRow[],
  reservedBy: string,
  clock: Clock,
): Promise<ReservedCode[]> {
  if (rows.length > 0) {
    // The customer named: on Citus an update by id alone writes every worker's shard, a
    // two-phase commit (docs/running/citus.md#two-phase-commits). One customer's rows (lockAvailable).
    await tx.query(
      `update stock_codes set state = 'reserved', reserved_by = $2, updated_at = $3
        where customer_id = $4 and id = any($1::bigint[])`,
      [rows.map((r) => r.id), reservedBy, clock.now(), rows[0]!.customerId],
    );
  }
  return rows.map((r) => ({
    stockId: r.id,
    code: decryptStock(codeKey, r),
    category: r.category,
    uc: r.uc,
  }));
}

function checkPicks(picks: readonly Pick[]): Map<string, number> {
  const totals = new Map<string, number>();
  for (const p of picks) {
    if (!isCategory(p.category)) throw new Error(`unknown stock category: ${JSON.stringify(p.category)}`);
    if (!Number.isSafeInteger(p.count) || p.count < 0) throw new Error(`bad stock pick count: ${p.count}`);
    totals.set(p.category, (totals.get(p.category) ?? 0) + p.count);
  }
  return totals;
}

/**
 * Reserves the oldest available codes (id order) for every pick, for the job `reservedBy`, and
 * returns them decrypted: picks in the order given, codes in id order within a pick. Reservations
 * of one customer and mode are serialised (the account row's lock), and rows are taken
 * `FOR UPDATE SKIP LOCKED`, so one code never goes to two jobs. When any category lacks enough
 * codes, returns null and changes nothing. Run it inside the caller's transaction (READ COMMITTED,
 * the default), which holds the lock until it ends: keep that transaction short.
 */
export async function reserveStock(
  tx: Queryable,
  codeKey: Buffer,
  input: { customerId: number; mode: Mode; picks: readonly Pick[]; reservedBy: string },
  clock: Clock,
): Promise<ReservedCode[] | null> {
  const totals = checkPicks(input.picks);
  await lockStock(tx, input.customerId, input.mode);
  const locked = new Map<string, LockedRow[]>();
  for (const [category, count] of totals) {
    if (count === 0) continue;
    const rows = await lockAvailable(tx, input.customerId, input.mode, category, count);
    if (rows.length < count) return null;
    locked.set(category, rows);
  }
  const ordered: LockedRow[] = [];
  for (const p of input.picks) ordered.push(...locked.get(p.category)!.splice(0, p.count));
  return markReserved(tx, codeKey, ordered, input.reservedBy, clock);
}

/**
 * Reserves the fewest available codes whose UC values sum exactly to `uc` (chooser.ts
 * decides which, largest packs first), or returns null when no combination of the available stock
 * makes it. Result order: largest pack first, codes in id order. The same lock as reserveStock
 * makes the counts the choice is made from exact.
 */
export async function reserveForUc(
  tx: Queryable,
  codeKey: Buffer,
  input: { customerId: number; mode: Mode; uc: number; reservedBy: string },
  clock: Clock,
): Promise<ReservedCode[] | null> {
  await lockStock(tx, input.customerId, input.mode);
  const picks = chooseForUc(input.uc, await availableCounts(tx, input.customerId, input.mode));
  if (!picks) return null;
  return reserveStock(tx, codeKey, { ...input, picks }, clock);
}

/**
 * Moves codes to `state`. 'available' puts them back in stock and clears reserved_by; the other
 * states keep reserved_by as the record of the job that used them. Returns the rows changed.
 */
export async function setStockState(
  q: Queryable,
  customerId: number,
  stockIds: readonly number[],
  state: 'available' | 'consumed' | 'deleted' | 'quarantined',
  clock: Clock,
): Promise<number> {
  if (stockIds.length === 0) return 0;
  // The rule lives in SQL (functions/stock.sql), where the redeem hot path runs it too.
  const r = await q.query<{ n: number }>(
    'select stock_set_state($1, $2::bigint[], $3, $4) as n',
    [customerId, stockIds, state, clock.now()],
    'stock_set_state',
  );
  return r.rows[0]!.n;
}

/** Ids of the codes a job still holds reserved, in id order (for releasing after a crash). */
export async function reservedStockIds(q: Queryable, reservedBy: string): Promise<number[]> {
  const r = await q.query<{ id: number }>(
    `select id from stock_codes where reserved_by = $1 and state = 'reserved' order by id`,
    [reservedBy],
  );
  return r.rows.map((row) => row.id);
}

/** One stock code decrypted, with its category and state; null for an unknown id. */
export async function stockCode(
  q: Queryable,
  codeKey: Buffer,
  stockId: number,
): Promise<(ReservedCode & { state: StockState; reservedBy: string | null }) | null> {
  const r = await q.query<LockedRow & { state: StockState; reservedBy: string | null }>(
    `select ${LOCKED_COLUMNS}, state, reserved_by as "reservedBy"
       from stock_codes where id = $1`,
    [stockId],
  );
  const row = r.rows[0];
  if (!row) return null;
  return {
    stockId: row.id,
    code: decryptStock(codeKey, row),
    category: row.category,
    uc: row.uc,
    state: row.state,
    reservedBy: row.reservedBy,
  };
}
