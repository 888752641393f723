// GET /v1/me: the account record of docs/reference/billing-and-quota.md#the-account-record for the calling key's mode. Not billed.
// One statement answers it: the account, with the key's revocation and the customer's state, so a
// key cached by the auth hook is checked again here, and the quota headers come from the same row;
// the read is counted in the key's read budget (docs/reference/limits.md#read-budget) before, in memory
// (core/limits/read-budget.ts).
import type { FastifyInstance } from 'fastify';
import { loadKeyAccountState, meView, today } from '../core/accounts/accounts.ts';
import type { AppContext } from '../core/context.ts';
import { acceptKeyCheckedInStatement, requestKeyFacts } from '../http/key-checks.ts';

export function registerMeRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/v1/me',
    { config: { auth: 'any', keyCheckedInStatement: true, readLimit: true } },
    async (request, reply) => {
      const found = await loadKeyAccountState(ctx.db, requestKeyFacts(request), today(ctx.clock));
      const { key, state } = acceptKeyCheckedInStatement(request, reply, found, 'any', ctx.clock);
      return meView(request.id, key, state, ctx.clock.now());
    },
  );
}
