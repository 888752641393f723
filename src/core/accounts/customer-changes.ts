// The operator's changes to customers, plans and subscriptions (docs/reference/operators-and-audit.md#the-admin-api, docs/reference/operators-and-audit.md#audit-log): each is
// one transaction that makes the change and writes its audit row, so the row exists exactly when
// the change committed.
import type { Database, Queryable } from '../../db/database.ts';
import { type Clock, isoUtc } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { usdNumber } from '../money.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import {
  createCustomer,
  customerExists,
  deletePlan,
  disableCustomer,
  enableCustomer,
  loadAccountState,
  type Plan,
  type Subscription,
  setPlan,
  setSubscription,
  today,
} from './accounts.ts';

export interface ChangeDeps {
  db: Database;
  clock: Clock;
}

export const planView = (p: Plan | null) =>
  p
    ? {
        label: p.label,
        daily_limit: p.dailyLimit,
        per_request_usd: usdNumber(p.perRequestMicros),
        overage: p.overage,
        active: p.active,
      }
    : null;

export async function createCustomerAs(deps: ChangeDeps, actor: Actor, name: string): Promise<number> {
  return deps.db.transaction(async (tx) => {
    const id = await createCustomer(tx, name, deps.clock);
    await recordAudit(
      tx,
      actor,
      { action: 'customer.create', customerId: id, target: String(id), details: { name } },
      deps.clock,
    );
    return id;
  });
}

/**
 * Disables a customer. `alsoVoid` runs in the same transaction, for what the disable voids in
 * other wings (the chat's pending top-ups: core/bot imports this wing, so it is handed in); what
 * it returns is added to the audit row's details.
 */
export async function disableCustomerAs(
  deps: ChangeDeps,
  actor: Actor,
  customerId: number,
  alsoVoid?: (tx: Queryable) => Promise<Record<string, unknown>>,
): Promise<void> {
  await deps.db.transaction(async (tx) => {
    if (!(await disableCustomer(tx, customerId, deps.clock)))
      throw new ApiError('not_found', 'unknown customer');
    const details = alsoVoid ? await alsoVoid(tx) : {};
    await recordAudit(
      tx,
      actor,
      { action: 'customer.disable', customerId, target: String(customerId), details },
      deps.clock,
    );
  });
}

/**
 * Enables a disabled customer: its keys answer again from the next request (the key cache never
 * holds the customer's state). Enabling an enabled customer changes nothing and is still audited,
 * as a second disable is; the audit row says when it had been disabled (null: it was not).
 */
export async function enableCustomerAs(deps: ChangeDeps, actor: Actor, customerId: number): Promise<void> {
  await deps.db.transaction(async (tx) => {
    const before = await enableCustomer(tx, customerId);
    if (!before.found) throw new ApiError('not_found', 'unknown customer');
    await recordAudit(
      tx,
      actor,
      {
        action: 'customer.enable',
        customerId,
        target: String(customerId),
        details: { disabled_at: before.disabledAt ? isoUtc(before.disabledAt) : null },
      },
      deps.clock,
    );
  });
}

/** Sets the plan; the audit row holds the plan before and after. */
export async function setPlanAs(
  deps: ChangeDeps,
  actor: Actor,
  customerId: number,
  plan: Plan,
): Promise<void> {
  await deps.db.transaction(async (tx) => {
    const before = await loadAccountState(tx, customerId, 'live', today(deps.clock));
    if (!before) throw new ApiError('not_found', 'unknown customer');
    await setPlan(tx, customerId, plan, deps.clock);
    await recordAudit(
      tx,
      actor,
      {
        action: 'plan.set',
        customerId,
        target: String(customerId),
        details: { before: planView(before.plan), after: planView(plan) },
      },
      deps.clock,
    );
  });
}

export async function deletePlanAs(deps: ChangeDeps, actor: Actor, customerId: number): Promise<void> {
  await deps.db.transaction(async (tx) => {
    const before = await loadAccountState(tx, customerId, 'live', today(deps.clock));
    if (!before) throw new ApiError('not_found', 'unknown customer');
    await deletePlan(tx, customerId);
    await recordAudit(
      tx,
      actor,
      {
        action: 'plan.delete',
        customerId,
        target: String(customerId),
        details: { before: planView(before.plan) },
      },
      deps.clock,
    );
  });
}

export async function setSubscriptionAs(
  deps: ChangeDeps,
  actor: Actor,
  customerId: number,
  sub: Subscription,
): Promise<void> {
  await deps.db.transaction(async (tx) => {
    if (!(await customerExists(tx, customerId))) throw new ApiError('not_found', 'unknown customer');
    await setSubscription(tx, customerId, sub);
    await recordAudit(
      tx,
      actor,
      {
        action: 'subscription.set',
        customerId,
        target: String(customerId),
        details: { required: sub.required, expires_at: sub.expiresAt ? isoUtc(sub.expiresAt) : null },
      },
      deps.clock,
    );
  });
}
