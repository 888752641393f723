// GET /v1/me: the account record of specification 2.3 for the calling key's mode. Not billed.
import type { FastifyInstance } from 'fastify';
import { accountView, loadAccountState, today } from '../core/accounts.ts';
import type { AppContext } from '../http/context.ts';
import { ApiError } from '../http/errors.ts';

export function registerMeRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/v1/me', { config: { auth: 'any' } }, async (request) => {
    const key = request.auth!;
    const state = await loadAccountState(ctx.db, key.customerId, key.mode, today(ctx.clock));
    if (!state) throw new ApiError('unknown_customer', 'the customer of this key is not active');
    return {
      ok: true,
      request_id: request.id,
      customer_id: key.customerId,
      key_prefix: key.keyPrefix,
      scopes: key.scopes,
      mode: key.mode,
      ...accountView(state, ctx.clock.now()),
    };
  });
}
