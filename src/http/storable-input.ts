// One input rule for both listeners: every string of a request's path, query and body is text
// PostgreSQL can hold (core/text.ts), or the request is a 400 bad_request naming the field. Run
// after authentication and body parsing (preValidation), so a bad key is still a 401 and an
// unknown path a 404. A route that answers other checks first (POST /v1/redeem's
// Idempotency-Key, its fields in the documented order) sets `lateJsonCheck` and applies the
// rule to its body itself, after them.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';
import { findUnstorableField, unstorableMessage } from '../core/text.ts';

/** Throws the rule's 400 for the first path, query or (unless `body: false`) body field that breaks it. */
export function assertStorableInput(
  request: FastifyRequest,
  parts: { body: boolean } = { body: true },
): void {
  const field =
    findUnstorableField(request.params, '') ??
    findUnstorableField(request.query, '') ??
    (parts.body ? findUnstorableField(request.body, '') : null);
  if (field) throw new ApiError('bad_request', unstorableMessage(field));
}

export function installStorableInput(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      assertStorableInput(request, { body: !request.routeOptions.config.lateJsonCheck });
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  });
}
