// GET /v1/me: the account record of specification 2.3 for the calling key's mode. Not billed.
// One statement answers it: the account, with the key's revocation and the customer's state, so a
// key cached by the auth hook is checked again here, and the quota headers come from the same row.
import type { FastifyInstance } from 'fastify';
import { loadKeyAccountState, meView, today } from '../core/accounts/accounts.ts';
import type { AppContext } from '../core/context.ts';
import { ApiError } from '../core/errors.ts';
import { authorize, checkKeyState } from '../http/auth.ts';
import { setAccountHeaders } from '../http/headers.ts';

export function registerMeRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/v1/me', { config: { auth: 'any', keyCheckedInStatement: true } }, async (request, reply) => {
    const facts = request.auth ?? request.cachedKey!;
    const found = await loadKeyAccountState(ctx.db, facts, today(ctx.clock));
    // Keys are never deleted; a row gone all the same is no key.
    if (!found) throw new ApiError('unauthorized', 'missing or invalid API key');
    const key = {
      ...facts,
      revokedAt: found.revokedAt,
      expiresAt: found.expiresAt,
      customerDisabled: found.state.disabled,
    };
    // Checked by the statement: nothing left for KeyChecks.settle.
    request.cachedKey = null;
    // The contract's order (section 1): revoked and expired (401) before anything else.
    checkKeyState(key, ctx.clock);
    // Identified: from here on every answer, a 403 too, carries the quota headers (contract 8).
    request.auth = key;
    setAccountHeaders(reply, found.state);
    authorize(key, request.ip, 'any');
    return meView(request.id, key, found.state, ctx.clock.now());
  });
}
