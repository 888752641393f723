// The tenant limits of contract 13.8 on the public routes, after the key checks:
//   - `readLimit: true`: one budget per key for every read (GET /v1/me, /v1/stock, /v1/jobs/{id},
//     and the event and statement reads when they arrive), 300 per sliding 10 s by default;
//   - `customerLimit: 'webhook' | 'redeliver'`: 10 a minute per customer and mode, each counted
//     on its own (POST /v1/webhook; POST /v1/events/{id}/redeliver uses 'redeliver').
// Both are the burst limit's mechanism (core/limits/window-limit.ts), so they hold across
// processes. They run before the body is read: a refused request costs one statement.
// The unknown-key limit is not here: it answers inside KeyChecks.identify, before its lookup.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type AccountState, loadAccountState, type Mode, today } from '../core/accounts/accounts.ts';
import type { KeyRecord } from '../core/keys/keys.ts';
import { paced, type RefusalPace } from '../core/limits/refusal-pace.ts';
import { createUnknownKeyLimit, type UnknownKeyLimit } from '../core/limits/unknown-key-limit.ts';
import {
  type SlotTake,
  takeWindowSlot,
  type WindowRule,
  type WindowSlot,
  windowLimitedError,
} from '../core/limits/window-limit.ts';
import type { ServerContext } from './context.ts';
import { setAccountHeaders } from './headers.ts';
import type { KeyChecks } from './key-checks.ts';
import { quickHook } from './quick-hook.ts';

export type CustomerLimit = 'webhook' | 'redeliver';

type LimitSettings = Pick<
  ServerContext['config'],
  'READ_RATE_LIMIT' | 'WEBHOOK_RATE_LIMIT' | 'REDELIVER_RATE_LIMIT'
>;

/** The rules as the configuration sets them (defaults: contract 13.8). */
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
  const full = createFullWindows();
  app.decorateRequest('readSlot', null);
  // A refused key's check and quota headers, reused for a second: a flooding key then costs the
  // database two statements a second, not two a request.
  const refused = new Map<string, { atMs: number; state: AccountState; key: KeyRecord }>();
  /**
   * Before a read's 429: a key known only from this process's cache is checked first, so a
   * revoked key or a disabled customer answers in the contract's order (401/403 before 429); and
   * the 429 carries the quota headers of an identified key (contract 8). Within a second of the
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
  // The limits where they wait: a statement of their own, or a refusal. Their usual path (a read
  // counted by the route's own statement) is the hook's below, which waits for nothing.
  const checkLimits = async (
    request: FastifyRequest,
    reply: FastifyReply,
    nowMs: number,
    known: WindowSlot | null,
  ) => {
    const config = request.routeOptions.config;
    if (config.readLimit) {
      const facts = keyOf(request);
      const slot = known ?? (await takeWindowSlot(ctx.db, rules.read, facts.id, ctx.clock.now()));
      if (slot.allowed) return;
      full.remember(facts.id, slot);
      await identifyRefused(request, reply, facts.id, nowMs);
      // A key refused again before its Retry-After waits its turn (core/limits/refusal-pace.ts).
      await paced(pace, `read:${facts.id}`);
      throw windowLimitedError(rules.read, slot.retryAfterSec ?? 1);
    }
    if (config.customerLimit) {
      const key = keyOf(request);
      await takeCustomerLimit(ctx, config.customerLimit, key);
    }
  };
  app.addHook(
    'onRequest',
    quickHook((request, reply) => {
      const config = request.routeOptions.config;
      if (!config.readLimit && !config.customerLimit) return;
      const nowMs = ctx.clock.now().getTime();
      if (!config.readLimit) return checkLimits(request, reply, nowMs, null);
      const facts = keyOf(request);
      // A key this process saw refused stays refused until its window frees: no statement.
      const known = full.refusal(facts.id, nowMs);
      if (known || config.readLimit !== 'inStatement') return checkLimits(request, reply, nowMs, known);
      request.readSlot = {
        take: { rule: rules.read, subject: facts.id, nowMs },
        async settle(slot) {
          if (slot.allowed) return;
          full.remember(facts.id, slot);
          await paced(pace, `read:${facts.id}`);
          throw windowLimitedError(rules.read, slot.retryAfterSec ?? 1);
        },
      };
    }),
  );
}

/**
 * Subjects known to be refused until a time (WindowSlot.fullUntilMs), at most 10,000 (the oldest
 * entry leaves first): a flooding key costs the database nothing more until its window frees.
 */
function createFullWindows(capacity = 10_000) {
  const until = new Map<string, number>();
  return {
    refusal(subject: string, nowMs: number): WindowSlot | null {
      const at = until.get(subject);
      if (at === undefined) return null;
      if (at <= nowMs) {
        until.delete(subject);
        return null;
      }
      return {
        allowed: false,
        limit: 0,
        remaining: 0,
        resetSec: 0,
        retryAfterSec: Math.max(1, Math.ceil((at - nowMs) / 1000)),
      };
    },
    remember(subject: string, slot: WindowSlot) {
      if (slot.fullUntilMs === undefined) return;
      until.delete(subject);
      until.set(subject, slot.fullUntilMs);
      if (until.size > capacity) until.delete(until.keys().next().value!);
    },
  };
}

/**
 * The read slot a `readLimit: 'inStatement'` route takes in its own statement: `take` goes to the
 * statement, and `settle` is called with the statement's slot after the key checks (so a revoked
 * key still answers 401 first), throwing the 429 when the slot was refused (paced, as every
 * refusal of a read: core/limits/refusal-pace.ts).
 */
export interface ReadSlotInStatement {
  readonly take: SlotTake;
  settle(slot: WindowSlot): Promise<void>;
}

export function readSlotOf(request: FastifyRequest): ReadSlotInStatement {
  // Set by the hook for every `readLimit: 'inStatement'` route it lets through.
  if (!request.readSlot) throw new Error("route without readLimit: 'inStatement'");
  return request.readSlot;
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
    /**
     * Count the request in the key's read budget (contract 13.8): `true` in a statement of its
     * own before the handler, `'inStatement'` in the route's own statement (readSlotOf).
     */
    readLimit?: boolean | 'inStatement';
    /** Count the request in its customer-and-mode limit (contract 13.8). */
    customerLimit?: CustomerLimit;
  }
  interface FastifyRequest {
    readSlot: ReadSlotInStatement | null;
  }
}
