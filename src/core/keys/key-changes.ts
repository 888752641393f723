// The operator's changes to API keys (docs/reference/operators-and-audit.md#the-admin-api, docs/reference/operators-and-audit.md#audit-log, docs/reference/operators-and-audit.md#key-reroll): issue, revoke and reroll, each
// one transaction with its audit row (key actions carry the key's customer).
import type { Database } from '../../db/database.ts';
import { customerExists } from '../accounts/accounts.ts';
import { type Clock, isoUtc } from '../clock.ts';
import { ApiError } from '../errors.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import { issueKey, type NewKey, type Scope } from './keys.ts';

interface Deps {
  db: Database;
  clock: Clock;
}

/** The longest grace an old key may keep after a reroll: 30 days. */
export const MAX_GRACE_SECONDS = 2_592_000;

export async function issueKeyAs(deps: Deps, actor: Actor, customerId: number, spec: NewKey) {
  return deps.db.transaction(async (tx) => {
    if (!(await customerExists(tx, customerId))) throw new ApiError('not_found', 'unknown customer');
    const issued = await issueKey(tx, customerId, spec, deps.clock);
    await recordAudit(
      tx,
      actor,
      {
        action: 'key.issue',
        customerId,
        target: issued.keyId,
        details: { mode: spec.mode, key_prefix: issued.keyPrefix, scopes: spec.scopes, label: spec.label },
      },
      deps.clock,
    );
    return issued;
  });
}

/**
 * The customer a key belongs to, by the key's id alone (null for no such key): what the statements
 * that write the key name, so that on Citus they commit on that customer's worker alone, not on
 * every worker in a two-phase commit (docs/running/citus.md#two-phase-commits).
 */
async function keyCustomer(q: Pick<Database, 'query'>, keyId: string): Promise<number | null> {
  const r = await q.query<{ customerId: number }>(
    'select customer_id as "customerId" from api_keys where id = $1',
    [keyId],
  );
  return r.rows[0]?.customerId ?? null;
}

export async function revokeKeyAs(deps: Deps, actor: Actor, keyId: string): Promise<void> {
  const customerId = await keyCustomer(deps.db, keyId);
  if (customerId === null) throw new ApiError('not_found', 'unknown key');
  await deps.db.transaction(async (tx) => {
    const r = await tx.query<{ customerId: number; keyPrefix: string }>(
      `update api_keys set revoked_at = coalesce(revoked_at, $2) where customer_id = $3 and id = $1
       returning customer_id as "customerId", key_prefix as "keyPrefix"`,
      [keyId, deps.clock.now(), customerId],
    );
    const key = r.rows[0];
    if (!key) throw new ApiError('not_found', 'unknown key');
    await recordAudit(
      tx,
      actor,
      {
        action: 'key.revoke',
        customerId: key.customerId,
        target: keyId,
        details: { key_prefix: key.keyPrefix },
      },
      deps.clock,
    );
  });
}

/**
 * Issues a new key with the old key's customer, mode, scopes, allowed IPs, label and expiry, and
 * moves the old key's expiry to now + grace (never later than it was): from then on the old key
 * answers `401 expired` through the expiry check every key passes, no second mechanism.
 */
export async function rerollKeyAs(deps: Deps, actor: Actor, keyId: string, graceSeconds: number) {
  const customerId = await keyCustomer(deps.db, keyId);
  if (customerId === null) throw new ApiError('not_found', 'unknown key');
  return deps.db.transaction(async (tx) => {
    const r = await tx.query<{
      customerId: number;
      mode: NewKey['mode'];
      scopes: Scope[];
      allowedIps: string[];
      expiresAt: Date | null;
      revokedAt: Date | null;
      label: string;
    }>(
      `select customer_id as "customerId", mode, scopes, allowed_ips as "allowedIps", expires_at as "expiresAt",
              revoked_at as "revokedAt", label
         from api_keys where customer_id = $2 and id = $1 for update`,
      [keyId, customerId],
    );
    const old = r.rows[0];
    if (!old) throw new ApiError('not_found', 'unknown key');
    const now = deps.clock.now();
    if (old.revokedAt) throw new ApiError('conflict', 'this key is revoked; issue a new one instead');
    if (old.expiresAt && old.expiresAt.getTime() <= now.getTime())
      throw new ApiError('conflict', 'this key has expired; issue a new one instead');
    const graceEnd = new Date(now.getTime() + graceSeconds * 1000);
    const oldExpiresAt = old.expiresAt && old.expiresAt < graceEnd ? old.expiresAt : graceEnd;
    const issued = await issueKey(
      tx,
      old.customerId,
      {
        mode: old.mode,
        scopes: old.scopes,
        allowedIps: old.allowedIps,
        expiresAt: old.expiresAt,
        label: old.label,
      },
      deps.clock,
    );
    await tx.query('update api_keys set expires_at = $2 where customer_id = $3 and id = $1', [
      keyId,
      oldExpiresAt,
      customerId,
    ]);
    await recordAudit(
      tx,
      actor,
      {
        action: 'key.reroll',
        customerId: old.customerId,
        target: keyId,
        details: {
          new_key_id: issued.keyId,
          new_key_prefix: issued.keyPrefix,
          grace_seconds: graceSeconds,
          old_key_expires_at: isoUtc(oldExpiresAt),
        },
      },
      deps.clock,
    );
    return { ...issued, oldKeyExpiresAt: oldExpiresAt };
  });
}
