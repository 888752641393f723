// Idempotency-Key of the operator's wallet writes (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments), scoped to the customer across
// both modes. The key's row is inserted in the transaction that writes the ledger entry and holds
// the answer, so the key exists exactly when the entry does.
//
// Concurrency: the insert takes the primary key (customer_id, key). A concurrent request with the
// same key blocks on that unique index until the first transaction ends; if it committed, the
// insert does nothing and the select that follows (a new statement, so a new snapshot under READ
// COMMITTED) sees the stored answer: a replay. If it rolled back (a refused adjustment), the
// waiting insert succeeds and that request runs. So of any number of identical requests, exactly
// one writes an entry. PGlite has one connection and serialises the transactions outright.
import type { Queryable } from '../../db/database.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';

/** 1 to 255 printable ASCII characters (the header's own rule; docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments). */
export const ADMIN_IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/**
 * A replay carries the first answer's request id (docs/reference/keys-and-modes.md#conventions: the original body under the
 * original X-Request-Id), read from the stored body every admin answer carries it in.
 */
export type TakenKey = { kind: 'new' } | { kind: 'replay'; status: number; body: string; requestId: string };

/** Takes the key for this request, or returns the stored answer; another body → 422. */
export async function takeAdminKey(
  tx: Queryable,
  customerId: number,
  key: string,
  fingerprint: string,
  clock: Clock,
): Promise<TakenKey> {
  const inserted = await tx.query(
    `insert into admin_idempotency_keys (customer_id, key, fingerprint, created_at) values ($1, $2, $3, $4)
     on conflict do nothing`,
    [customerId, key, fingerprint, clock.now()],
  );
  if (inserted.rowCount > 0) return { kind: 'new' };
  const r = await tx.query<{ fingerprint: string; status: number; body: string }>(
    `select fingerprint, response_status as status, response_body as body
       from admin_idempotency_keys where customer_id = $1 and key = $2`,
    [customerId, key],
  );
  const row = r.rows[0]!;
  if (row.fingerprint !== fingerprint)
    throw new ApiError('idempotency_conflict', 'this Idempotency-Key was used with another request body');
  const requestId = (JSON.parse(row.body) as { request_id: string }).request_id;
  return { kind: 'replay', status: row.status, body: row.body, requestId };
}

/** Stores the answer of the request that took the key (same transaction). */
export async function storeAdminAnswer(
  tx: Queryable,
  customerId: number,
  key: string,
  status: number,
  body: string,
): Promise<void> {
  await tx.query(
    'update admin_idempotency_keys set response_status = $3, response_body = $4 where customer_id = $1 and key = $2',
    [customerId, key, status, body],
  );
}
