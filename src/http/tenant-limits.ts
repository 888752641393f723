// The tenant limits of docs/reference/limits.md on the public routes, after the key checks:
//   - `readLimit: true`: one budget per key for every read (GET /v1/me, /v1/stock, /v1/jobs/{id},
//     and the event and statement reads when they arrive), 300 per sliding 10 s by default;
//   - `customerLimit: 'webhook' | 'redeliver'`: 10 a minute per customer and mode, each counted
//     on its own (POST /v1/webhook; POST /v1/events/{id}/redeliver uses 'redeliver').
// The read budget is kept in memory and settled with the database in batches
// (core/limits/read-budget.ts: exact in one process; with N processes a key may pass 300 by at
// most 25 × (N - 1)), so an accepted read costs no statement of its own. The customer limits are
// the burst limit's mechanism (core/limits/window-limit.ts), a statement each, so they hold
// across processes. Both run before the body is read.
// The unknown-key limit is not here: it answers inside KeyChecks.identify, before its lookup.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type AccountState, loadAccountState, today } from '../core/accounts/accounts.ts';
import type { KeyRecord } from '../core/keys/keys.ts';
import { createReadBudget } from '../core/limits/read-budget.ts';
import { paced, type RefusalPace } from '../core/limits/refusal-pace.ts';
import { createUnknownKeyLimit, type UnknownKeyLimit } from '../core/limits/unknown-key-limit.ts';
import {
  takeWindowSlot,
  type WindowRule,
  type WindowSlot,
  windowLimitedError,
} from '../core/limits/window-limit.ts';
import type { Mode } from '../core/vocabulary.ts';
import type { ServerContext } from './context.ts';
import { setAccountHeaders } from './headers.ts';
import type { KeyChecks } from './key-checks.ts';
import { quickHook } from './quick-hook.ts';

export type CustomerLimit = 'webhook' | 'redeliver';

type LimitSettings = Pick<
  ServerContext['config'],
  'READ_RATE_LIMIT' | 'WEBHOOK_RATE_LIMIT' | 'REDELIVER_RATE_LIMIT'
>;

/** The rules as the configuration sets them (defaults: docs/reference/limits.md). */
export function tenantRules(config: LimitSettings): Record<'read' | CustomerLimit, WindowRule> {
  return {
    read: { bucket: 'read', what: 'reads for this key', limit: config.READ_RATE_LIMIT, windowMs: 10_000 },
    webhook: {
      bucket: 'webhook',
      what: 'webhook registrations for this customer and mode',
      limit: config.WEBHOOK_RATE_LIMIT,
      windowMs: 60_000,
    },
    redeliver: {
      bucket: 'redeliver',
      what: 'redeliveries for this customer and mode',
      limit: config.REDELIVER_RATE_LIMIT,
      windowMs: 60_000,
    },
  };
}

/** The unknown-key limit of one process, from the configuration. */
export function unknownKeyLimitFrom(
  config: Pick<ServerContext['config'], 'UNKNOWN_KEY_RATE_LIMIT' | 'UNKNOWN_KEY_TRACKED_ADDRESSES'>,
): UnknownKeyLimit {
  return createUnknownKeyLimit({
    limit: config.UNKNOWN_KEY_RATE_LIMIT,
    windowMs: 10_000,
    maxAddresses: config.UNKNOWN_KEY_TRACKED_ADDRESSES,
  });
}

/**
 * Takes one slot of a customer-and-mode limit, or throws its 429. For a route that cannot use the
 * `customerLimit` option (one that counts only after its own checks).
 */
export async function takeCustomerLimit(
  ctx: Pick<ServerContext, 'db' | 'clock' | 'config'>,
  kind: CustomerLimit,
  caller: { customerId: number; mode: Mode },
): Promise<void> {
  const rule = tenantRules(ctx.config)[kind];
  const slot = await takeWindowSlot(ctx.db, rule, `${caller.customerId}:${caller.mode}`, ctx.clock.now());
  if (!slot.allowed) throw windowLimitedError(rule, slot.retryAfterSec ?? 1);
}

/** Registers the hook; call it after installKeyChecks so the key is known when it runs. */
export function installTenantLimits(
  app: FastifyInstance,
  ctx: ServerContext,
  keyChecks: KeyChecks,
  pace?: RefusalPace,
): void {
  const rules = tenantRules(ctx.config);
  // One process owns an embedded database (its data directory's lock): exact, no statement.
  const budget = createReadBudget(ctx.db, rules.read, {
    shared: ctx.db.kind === 'postgres',
    settleEveryMs: ctx.config.READ_BUDGET_SETTLE_MS,
    onError: (err) => ctx.logger.warn({ err }, 'could not settle the read budget; retrying'),
  });
  app.addHook('onClose', () => budget.stop());
  // A refused key's check and quota headers, reused for a second: a flooding key then costs the
  // database two statements a second, not two a request.
  const refused = new Map<string, { atMs: number; state: AccountState; key: KeyRecord }>();
  /**
   * Before a read's 429: a key known only from this process's cache is checked first, so a
   * revoked key or a disabled customer answers in the documented order (401/403 before 429); and
   * the 429 carries the quota headers of an identified key (docs/reference/keys-and-modes.md#response-headers). Within a second of the
   * key's last refusal both are taken from that refusal (a revocation is seen a second late at
   * most, and answered 429 meanwhile: refused either way).
   */
  const identifyRefused = async (
    request: FastifyRequest,
    reply: FastifyReply,
    keyId: string,
    nowMs: number,
  ) => {
    const seen = refused.get(keyId);
    if (seen && nowMs - seen.atMs < 1000 && seen.atMs <= nowMs) {
      request.auth = seen.key;
      request.cachedKey = null;
      setAccountHeaders(reply, seen.state);
      return;
    }
    if (!request.auth) await keyChecks.identify(request, reply);
    request.cachedKey = null;
    const key = request.auth!;
    const state = await loadAccountState(ctx.db, key.customerId, key.mode, today(ctx.clock));
    if (!state) return;
    setAccountHeaders(reply, state);
    refused.delete(keyId);
    refused.set(keyId, { atMs: nowMs, state, key });
    if (refused.size > 10_000) refused.delete(refused.keys().next().value!);
  };
  const refuseRead = async (
    request: FastifyRequest,
    reply: FastifyReply,
    keyId: string,
    nowMs: number,
    slot: WindowSlot,
  ) => {
    await identifyRefused(request, reply, keyId, nowMs);
    // A key refused again before its Retry-After waits its turn (core/limits/refusal-pace.ts).
    await paced(pace, `read:${keyId}`);
    throw windowLimitedError(rules.read, slot.retryAfterSec ?? 1);
  };
  app.addHook(
    'onRequest',
    quickHook((request, reply) => {
      const config = request.routeOptions.config;
      if (config.customerLimit) return takeCustomerLimit(ctx, config.customerLimit, keyOf(request));
      if (!config.readLimit) return;
      const nowMs = ctx.clock.now().getTime();
      const keyId = keyOf(request).id;
      const slot = budget.take(keyId, nowMs);
      // The usual path: accepted at once, nothing to wait for.
      if (!(slot instanceof Promise))
        return slot.allowed ? undefined : refuseRead(request, reply, keyId, nowMs, slot);
      return slot.then((s) => (s.allowed ? undefined : refuseRead(request, reply, keyId, nowMs, s)));
    }),
  );
}

function keyOf(request: FastifyRequest) {
  const facts = request.auth ?? request.cachedKey;
  // The key checks answer before this hook for a request without a key; a limited route without
  // `auth` would be a wiring mistake.
  if (!facts) throw new Error('tenant-limited route without an authenticated key');
  return facts;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Count the request in the key's read budget (docs/reference/limits.md#read-budget, core/limits/read-budget.ts). */
    readLimit?: boolean;
    /** Count the request in its customer-and-mode limit (docs/reference/limits.md#per-customer-limits). */
    customerLimit?: CustomerLimit;
  }
}
