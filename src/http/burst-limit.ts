// The burst limit on the routes that ask for it (`config: { burstLimit: true }`; contract section 6:
// POST /v1/redeem only). It runs as an onRequest hook registered after authentication, so it
// counts identified keys only and answers before the body is read or validated.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../core/context.ts';
import { type BurstSlot, peekBurstSlot, rateLimitedError, takeBurstSlot } from '../core/keys/burst-limit.ts';
import { quickHook } from './quick-hook.ts';

export function installBurstLimit(app: FastifyInstance, ctx: Pick<AppContext, 'db' | 'clock'>): void {
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
      return takeSlot(ctx, key.id, reply);
    }),
  );
}

async function takeSlot(ctx: Pick<AppContext, 'db' | 'clock'>, keyId: string, reply: FastifyReply) {
  const slot = await takeBurstSlot(ctx.db, keyId, ctx.clock.now());
  setRateLimitHeaders(reply, slot);
  if (!slot.allowed) throw rateLimitedError(slot);
}

export function setRateLimitHeaders(reply: FastifyReply, slot: BurstSlot) {
  reply.header('RateLimit-Limit', String(slot.limit));
  reply.header('RateLimit-Remaining', String(slot.remaining));
  reply.header('RateLimit-Reset', String(slot.resetSec));
}

/**
 * The RateLimit headers of an identified key refused before the burst hook (403
 * unknown_customer, ip_denied, scope_denied): the key's window as it stands, this request not
 * counted (a refused request is not accepted). Best effort: the 403 is the answer either way.
 */
export async function setBurstHeadersUncounted(
  ctx: Pick<AppContext, 'db' | 'clock'>,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const key = request.auth;
  if (!key) return;
  try {
    setRateLimitHeaders(reply, await peekBurstSlot(ctx.db, key.id, ctx.clock.now()));
  } catch (err) {
    request.log.warn({ err }, 'could not read the burst window for the RateLimit headers');
  }
}
