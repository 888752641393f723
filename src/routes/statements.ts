// GET /v1/statements (docs/reference/statements.md#the-answer): the caller's statement per UTC day, JSON or, with
// `Accept: text/csv`, CSV as an attachment. Scope `read`, the key's mode, not billed.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { statementCsv, statementFileName } from '../core/billing/statement-csv.ts';
import { buildStatement } from '../core/billing/statements.ts';
import type { AppContext } from '../core/context.ts';
import { parseQuery } from './admin/query.ts';

/** `from` and `to` as given; their dates are checked by core (one message for both APIs). */
export const statementQueryFields = {
  from: z.string().max(10).optional(),
  to: z.string().max(10).optional(),
};

/** Sends the statement as JSON, or as a CSV attachment when the client asked for text/csv. */
export function sendStatement(
  request: FastifyRequest,
  reply: FastifyReply,
  statement: Awaited<ReturnType<typeof buildStatement>>,
) {
  if (/\btext\/csv\b/i.test(request.headers.accept ?? '')) {
    reply
      .type('text/csv; charset=utf-8')
      .header(
        'content-disposition',
        `attachment; filename="${statementFileName(statement.mode, statement.from, statement.to)}"`,
      );
    return statementCsv(statement);
  }
  return { ok: true, request_id: request.id, ...statement };
}

export function registerStatementRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/v1/statements', { config: { auth: 'read', readLimit: true } }, async (request, reply) => {
    const key = request.auth!;
    const q = parseQuery(z.strictObject(statementQueryFields), request.query);
    const statement = await buildStatement(ctx.db, key, q, ctx.clock.now());
    return sendStatement(request, reply, statement);
  });
}
