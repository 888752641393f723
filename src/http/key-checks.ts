// Steps 1 to 5 of docs/reference/keys-and-modes.md#authentication-order (the API key) and the burst limit of docs/reference/limits.md#redeem-burst-limit, for every
// route with `config.auth`. Both run before the body is read, so a huge body from a bad key is a
// 401, except where a route does them in its own statement:
//   - `keyCheckedInStatement`: a key this process has seen (its fixed facts cached, and still
//     passing expiry, address and scope) costs no query here; the route's statement checks its
//     revocation and its customer's state (GET /v1/me, POST /v1/redeem).
//   - `burstInStatement`: the route's statement takes the burst slot (POST /v1/redeem).
// A request answered before that statement runs (a 413, a malformed body) gets both checks
// first, in the documented order, from `settle` (the route's validation and the error handler).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccountState } from '../core/accounts/accounts.ts';
import type { Clock } from '../core/clock.ts';
import type { AppContext } from '../core/context.ts';
import { ApiError } from '../core/errors.ts';
import { createKeyCache, type KeyFacts } from '../core/keys/key-cache.ts';
import { ipAllowed, type KeyRecord } from '../core/keys/keys.ts';
import { createKnownKeyDigests } from '../core/keys/known-key-digests.ts';
import { paced, type RefusalPace } from '../core/limits/refusal-pace.ts';
import type { UnknownKeyLimit } from '../core/limits/unknown-key-limit.ts';
import {
  peekBurstSlot,
  rateLimitedError,
  takeBurstSlot,
  windowLimitedError,
} from '../core/limits/window-limit.ts';
import { authenticate, authorize, checkKeyState, keyDigest, type ScopeRule, scopeAllowed } from './auth.ts';
import { setAccountHeaders, setRateLimitHeaders } from './headers.ts';
import { quickHook } from './quick-hook.ts';

export interface KeyChecks {
  /** Authenticates the request's key by a query and authorizes it (throws the refusal). */
  identify(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** Runs what a route left to its own statement, when the request is answered without it. */
  settle(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}

/**
 * `unknownKeys` (docs/reference/limits.md#unknown-key-floods): an address that sent too many unknown keys is refused before the
 * lookup, unless this process already knows the key exists; `pace` spaces a flood's refusals.
 */
export function installKeyChecks(
  app: FastifyInstance,
  ctx: AppContext,
  unknownKeys?: UnknownKeyLimit,
  pace?: RefusalPace,
): KeyChecks {
  app.decorateRequest('auth', null);
  app.decorateRequest('cachedKey', null);
  app.decorateRequest('burstPending', false);
  const keyCache = createKeyCache();
  const knownKeys = createKnownKeyDigests(ctx.db);

  const identify = async (request: FastifyRequest, reply: FastifyReply) => {
    const rule = (request.routeOptions.config as { auth?: ScopeRule }).auth ?? 'any';
    // Checked here, whatever the answer: nothing left for settle.
    request.cachedKey = null;
    let key: KeyRecord;
    try {
      const digest = keyDigest(request);
      if (unknownKeys && !keyCache.get(digest)) {
        const wait = unknownKeys.refusal(request.ip, ctx.clock.now().getTime());
        // Over the limit: refused without a lookup, unless the key exists (a valid key is never
        // refused by this limit; the known digests cost at most a statement a second).
        if (wait !== null && !(await knownKeys.exists(digest))) {
          await paced(pace, `address:${request.ip}`);
          throw unknownKeyRefusal(unknownKeys, wait);
        }
      }
      try {
        key = await authenticate(ctx.db, digest, ctx.clock, keyCache);
        knownKeys.learn(digest);
      } catch (err) {
        // No key has that digest: one more unknown key from this address.
        if (err instanceof ApiError && err.code === 'unauthorized')
          unknownKeys?.recordUnknown(request.ip, ctx.clock.now().getTime());
        throw err;
      }
    } catch (err) {
      // Not identified (401, or 429 for an address sending unknown keys): no burst window.
      request.burstPending = false;
      throw err;
    }
    request.auth = key;
    try {
      authorize(key, request.ip, rule);
    } catch (err) {
      // Identified but refused (403): a burst-limited route still reports the key's window
      // (docs/reference/limits.md#redeem-burst-limit: every redeem answer carries RateLimit-*), without counting this one.
      request.burstPending = false;
      if (request.routeOptions.config.burstLimit) await setBurstHeadersUncounted(ctx, request, reply);
      throw err;
    }
  };

  app.addHook(
    'onRequest',
    quickHook((request, reply) => {
      const rule = (request.routeOptions.config as { auth?: ScopeRule }).auth;
      if (!rule) return;
      const digest = keyDigest(request);
      const cached = keyCache.get(digest);
      if (
        cached &&
        request.routeOptions.config.keyCheckedInStatement &&
        factsAllow(cached, request.ip, rule, ctx)
      ) {
        request.cachedKey = cached;
        return;
      }
      return identify(request, reply);
    }),
  );

  // After authentication, before the body is read: the burst limit of `burstLimit` routes.
  installBurstLimit(app, ctx);

  return {
    identify,
    async settle(request, reply) {
      if (!request.auth && request.cachedKey) await identify(request, reply);
      if (!request.burstPending || !request.auth) return;
      request.burstPending = false;
      const slot = await takeBurstSlot(ctx.db, request.auth!, ctx.clock.now());
      setRateLimitHeaders(reply, slot);
      if (!slot.allowed) throw rateLimitedError(slot);
    },
  };
}

/**
 * The burst limit on the routes that ask for it (`config: { burstLimit: true }`; docs/reference/limits.md#redeem-burst-limit:
 * POST /v1/redeem only), as an onRequest hook registered after authentication, so it counts
 * identified keys only and answers before the body is read or validated.
 */
function installBurstLimit(app: FastifyInstance, ctx: Pick<AppContext, 'db' | 'clock'>): void {
  app.addHook(
    'onRequest',
    quickHook((request, reply) => {
      if (!request.routeOptions.config.burstLimit) return;
      // Left to the route's own statement (or to KeyChecks.settle when it never runs).
      if (request.routeOptions.config.burstInStatement) {
        request.burstPending = true;
        return;
      }
      const key = request.auth;
      // The auth hook answers before this one for a route without a key; a burst-limited route
      // without `auth` would be a wiring mistake, and an unidentified caller has no window.
      if (!key) throw new Error('burstLimit route without an authenticated key');
      return takeSlot(ctx, key, reply);
    }),
  );
}

async function takeSlot(
  ctx: Pick<AppContext, 'db' | 'clock'>,
  key: { id: string; customerId: number },
  reply: FastifyReply,
) {
  const slot = await takeBurstSlot(ctx.db, key, ctx.clock.now());
  setRateLimitHeaders(reply, slot);
  if (!slot.allowed) throw rateLimitedError(slot);
}

/**
 * The RateLimit headers of an identified key refused before the burst hook (403
 * unknown_customer, ip_denied, scope_denied): the key's window as it stands, this request not
 * counted (a refused request is not accepted). Best effort: the 403 is the answer either way.
 */
async function setBurstHeadersUncounted(
  ctx: Pick<AppContext, 'db' | 'clock'>,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const key = request.auth;
  if (!key) return;
  try {
    setRateLimitHeaders(reply, await peekBurstSlot(ctx.db, key, ctx.clock.now()));
  } catch (err) {
    request.log.warn({ err }, 'could not read the burst window for the RateLimit headers');
  }
}

/** The key a `keyCheckedInStatement` route hands to its statement: identified, or from the cache. */
export function requestKeyFacts(request: FastifyRequest): KeyFacts {
  return request.auth ?? request.cachedKey!;
}

/**
 * After a `keyCheckedInStatement` route's statement read the key's revocation and its customer's
 * account: finishes steps 2 to 5 of docs/reference/keys-and-modes.md#authentication-order in the documented order (revoked and expired
 * 401 before anything else), identifies the key (from here on every answer, a 403 or 404 too,
 * carries the quota headers) and authorizes it. `found` null: the key row is gone (keys are never
 * deleted; a row gone all the same is no key). Every such route calls this one helper; it returns
 * what the statement found, with the key.
 */
export function acceptKeyCheckedInStatement<
  F extends { revokedAt: Date | null; expiresAt?: Date | null; state: AccountState },
>(
  request: FastifyRequest,
  reply: FastifyReply,
  found: F | null,
  rule: ScopeRule,
  clock: Clock,
): F & { key: KeyRecord } {
  if (!found) throw new ApiError('unauthorized', 'missing or invalid API key');
  const facts = requestKeyFacts(request);
  const key = keyRecordOf(
    facts,
    // Read again by the statement: a reroll (docs/reference/operators-and-audit.md#key-reroll) moves a cached key's expiry.
    found.expiresAt === undefined ? facts.expiresAt : found.expiresAt,
    found.revokedAt,
    found.state.disabled,
  );
  // Checked by the statement: nothing left for KeyChecks.settle.
  request.cachedKey = null;
  checkKeyState(key, clock);
  request.auth = key;
  setAccountHeaders(reply, found.state);
  authorize(key, request.ip, rule);
  // `found` is this request's own object, fresh from its statement: the key joins it in place.
  const accepted = found as F & { key: KeyRecord };
  accepted.key = key;
  return accepted;
}

/**
 * A statement that took the burst slot and found the key valid (POST /v1/redeem): the request is
 * identified from here on, with nothing left for KeyChecks.settle.
 */
export function keyPassedInStatement(request: FastifyRequest): void {
  request.burstPending = false;
  if (!request.auth) {
    const cached = request.cachedKey!;
    request.auth = keyRecordOf(cached, cached.expiresAt, null, false);
  }
  request.cachedKey = null;
}

/**
 * A key's record from its cached facts and what a statement read. Every field by name, not
 * `{ ...facts, revokedAt, ... }`: a spread followed by more fields takes V8's slow path (3 µs
 * against 0.04 µs measured), on every GET /v1/me and every redeem.
 */
function keyRecordOf(
  facts: KeyFacts,
  expiresAt: Date | null,
  revokedAt: Date | null,
  customerDisabled: boolean,
): KeyRecord {
  return {
    id: facts.id,
    customerId: facts.customerId,
    mode: facts.mode,
    keyPrefix: facts.keyPrefix,
    scopes: facts.scopes,
    allowedIps: facts.allowedIps,
    expiresAt,
    revokedAt,
    label: facts.label,
    customerDisabled,
  };
}

const unknownKeyRefusal = (limit: UnknownKeyLimit, wait: number) =>
  windowLimitedError({ what: 'requests with unknown API keys from this address', ...limitOf(limit) }, wait);
const limitOf = ({ limit, windowMs }: UnknownKeyLimit) => ({ limit, windowMs });

/**
 * Whether a cached key passes what its fixed facts decide (expiry, address, scope). When not,
 * the key is authenticated by a query, which answers in the documented order.
 */
function factsAllow(key: KeyFacts, ip: string, rule: ScopeRule, ctx: Pick<AppContext, 'clock'>): boolean {
  if (key.expiresAt && key.expiresAt.getTime() <= ctx.clock.now().getTime()) return false;
  return ipAllowed(ip, key.allowedIps) && scopeAllowed(key, rule);
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The key once identified (docs/reference/keys-and-modes.md#authentication-order, steps 1 and 2); then the quota headers are sent. */
    auth: KeyRecord | null;
    /**
     * A `keyCheckedInStatement` route's key from the cache, not yet checked (auth is null); the
     * route clears it once its statement has checked the key.
     */
    cachedKey: KeyFacts | null;
    /** A `burstInStatement` route's burst slot, not taken yet. */
    burstPending: boolean;
  }
  interface FastifyContextConfig {
    auth?: ScopeRule;
    /**
     * The route checks revocation and the customer's state in its own statement, so a cached key
     * costs the hook no query; the route finishes steps 2 to 5 itself (routes/me.ts).
     */
    keyCheckedInStatement?: boolean;
    /** Count the request in the key's burst window (docs/reference/limits.md#redeem-burst-limit). */
    burstLimit?: boolean;
    /** The route's own statement takes the burst slot (with `burstLimit`). */
    burstInStatement?: boolean;
  }
}
