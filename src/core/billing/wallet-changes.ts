// The operator's wallet writes (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments): a top-up, or a correcting adjustment of either
// sign. Each is one transaction: the Idempotency-Key, the ledger entry (through appendLedger, with
// the operator and request), the audit row and the stored answer, so a replay is byte-identical
// and writes nothing.
import type { Database } from '../../db/database.ts';
import { loadAccountState, today } from '../accounts/accounts.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { usdNumber } from '../money.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import type { Mode } from '../vocabulary.ts';
import { storeAdminAnswer, takeAdminKey } from './admin-idempotency.ts';
import { appendLedger } from './wallet.ts';

/** The largest top-up or adjustment, either sign: one million USD in micro-dollars. */
export const MAX_WALLET_CHANGE_MICROS = 1_000_000 * 1_000_000;

export interface WalletChange {
  mode: Mode;
  /** Signed micro-dollars (a top-up is positive). */
  amountMicros: number;
  kind: 'topup' | 'adjustment';
  /** The top-up's note or the adjustment's reason. */
  note: string;
}

export interface WalletAnswer {
  status: number;
  /** The JSON body, exactly as first sent. */
  body: string;
  replay: boolean;
  /** The X-Request-Id of the answer: the first request's on a replay. */
  requestId: string;
}

export async function changeWallet(
  deps: { db: Database; clock: Clock },
  actor: Actor,
  customerId: number,
  idempotency: { key: string; fingerprint: string },
  change: WalletChange,
): Promise<WalletAnswer> {
  const { clock } = deps;
  return deps.db.transaction(async (tx) => {
    const before = await loadAccountState(tx, customerId, change.mode, today(clock));
    if (!before) throw new ApiError('not_found', 'unknown customer');
    const taken = await takeAdminKey(tx, customerId, idempotency.key, idempotency.fingerprint, clock);
    if (taken.kind === 'replay')
      return { status: taken.status, body: taken.body, replay: true, requestId: taken.requestId };
    const { entryId } = await appendLedger(
      tx,
      { ...change, customerId, actor: actor.name, requestId: actor.requestId },
      clock,
    );
    // appendLedger's update locked the account row: no hold can be taken between this read and
    // the commit. Held money is promised to running requests, so a correction may not take it.
    const after = (await loadAccountState(tx, customerId, change.mode, today(clock)))!;
    if (change.amountMicros < 0 && after.balanceMicros - after.heldMicros < 0) {
      throw new ApiError('insufficient_funds', 'this adjustment would take the balance below zero', {
        balance_usd: usdNumber(before.balanceMicros - before.heldMicros),
      });
    }
    await recordAudit(
      tx,
      actor,
      {
        action: change.kind === 'topup' ? 'wallet.topup' : 'wallet.adjust',
        customerId,
        target: String(entryId),
        details: {
          mode: change.mode,
          amount_usd: usdNumber(change.amountMicros),
          [change.kind === 'topup' ? 'note' : 'reason']: change.note,
          idempotency_key: idempotency.key,
        },
      },
      clock,
    );
    const body = JSON.stringify({
      ok: true,
      request_id: actor.requestId,
      customer_id: customerId,
      mode: change.mode,
      entry_id: entryId,
      balance_usd: usdNumber(after.balanceMicros - after.heldMicros),
    });
    await storeAdminAnswer(tx, customerId, idempotency.key, 200, body);
    return { status: 200, body, replay: false, requestId: actor.requestId };
  });
}
