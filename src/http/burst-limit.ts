// The burst limit on the routes that ask for it (`config: { burstLimit: true }`; contract section 6:
// POST /v1/redeem only). It runs as an onRequest hook registered after authentication, so it
// counts identified keys only and answers before the body is read or validated.
import type { FastifyInstance } from 'fastify';
import { takeBurstSlot } from '../core/burst-limit.ts';
import type { AppContext } from './context.ts';
import { ApiError } from './errors.ts';

export function installBurstLimit(app: FastifyInstance, ctx: Pick<AppContext, 'db' | 'clock'>): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!request.routeOptions.config.burstLimit) return;
    const key = request.auth;
    // The auth hook answers before this one for a route without a key; a burst-limited route
    // without `auth` would be a wiring mistake, and an unidentified caller has no window.
    if (!key) throw new Error('burstLimit route without an authenticated key');
    const slot = await takeBurstSlot(ctx.db, key.id, ctx.clock.now());
    reply.header('RateLimit-Limit', String(slot.limit));
    reply.header('RateLimit-Remaining', String(slot.remaining));
    reply.header('RateLimit-Reset', String(slot.resetSec));
    if (!slot.allowed) {
      const sec = slot.retryAfterSec ?? 1;
      throw new ApiError(
        'rate_limited',
        `more than ${slot.limit} requests in 10 seconds for this key; retry after ${sec} s`,
        { retry_after_sec: sec },
        { 'Retry-After': String(sec) },
      );
    }
  });
}
