// What every request of both listeners goes through: request ids, JSON parsing of any content
// type, the error body for every error (404, 405, 413, bad JSON, crashes), one error handler.

import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { newRequestId } from '../core/ids.ts';
import { ApiError, ERROR_STATUS, type ErrorCode, errorBody } from './errors.ts';

export const BODY_LIMIT = 262_144;

const ALL_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

export function sendError(
  reply: FastifyReply,
  code: ErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  for (const [name, value] of Object.entries(headers)) reply.header(name, value);
  const status = ERROR_STATUS[code];
  // Every 429 and 503 says when to come back (contract section 8); most set their own value.
  if ((status === 429 || status === 503) && !reply.hasHeader('Retry-After')) reply.header('Retry-After', '1');
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(errorBody(code, message, reply.request.id, extra));
}

/** Maps anything thrown to the contract's error body; unknown errors become a bare 500. */
function handleError(error: FastifyError | ApiError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ApiError) {
    return sendError(reply, error.code, error.message, error.extra, error.headers);
  }
  const fe = error as FastifyError;
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || fe.statusCode === 413) {
    return sendError(reply, 'payload_too_large', `body is larger than ${BODY_LIMIT} bytes`);
  }
  if (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return sendError(reply, 'bad_request', 'body is not valid JSON');
  }
  if (fe.validation) {
    return sendError(reply, 'bad_request', 'request does not match the expected shape');
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    // A client-side problem found by Fastify itself (bad content length, aborted body, ...).
    return sendError(reply, 'bad_request', 'malformed request');
  }
  request.log.error({ err: error }, 'unhandled error');
  return sendError(reply, 'internal', 'internal error');
}

/**
 * Fastify answers a URL it cannot decode (`/v1/%zz`) before routing and before any hook; this
 * gives it the contract's error body too. `headers`: the listener's headers of every response.
 */
export function frameworkErrorHandler(headers: Record<string, string> = {}) {
  return (_error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    reply.header('X-Request-Id', request.id);
    return sendError(reply, 'bad_request', 'malformed request URL', {}, headers);
  };
}

/**
 * Node's HTTP parser rejects some requests before Fastify sees them (headers over 16 KB, bytes
 * that are not HTTP); they get the contract's error body too, with a fresh request id.
 */
export function clientErrorHandler(headers: Record<string, string> = {}) {
  return (err: Error & { code?: string }, socket: Socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) return;
    const id = newRequestId();
    const message =
      err.code === 'HPE_HEADER_OVERFLOW' ? 'request headers are too large' : 'malformed HTTP request';
    const body = JSON.stringify(errorBody('bad_request', message, id));
    const extra = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${id}\r\n${extra}Connection: close\r\n\r\n${body}`,
    );
  };
}

const notFound = (request: FastifyRequest, reply: FastifyReply) =>
  sendError(reply, 'not_found', `no route for ${request.method} ${request.url.split('?')[0]}`);

const methodNotAllowed = (request: FastifyRequest, reply: FastifyReply) =>
  sendError(
    reply,
    'method_not_allowed',
    `${request.method} is not allowed here`,
    {},
    { Allow: (request.routeOptions.config as { allow?: string }).allow ?? '' },
  );

export function installPlumbing(app: FastifyInstance): void {
  // Bodies are JSON whatever Content-Type the client sent (curl -d sends a form type).
  // Fastify's own secure parser is used: __proto__ and constructor.prototype keys are refused.
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    parseJson(request, body as string, (err, value) => {
      if (!err) return done(null, value);
      // Reported by the preValidation hook below, or by a route that checks other things first
      // (POST /v1/redeem answers a missing Idempotency-Key before a bad body).
      request.invalidJson = true;
      done(null, undefined);
    });
  });
  app.decorateRequest('invalidJson', false);
  app.addHook('preValidation', async (request) => {
    if (request.invalidJson && !request.routeOptions.config.lateJsonCheck) {
      throw new ApiError('bad_request', 'body is not valid JSON');
    }
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });

  app.setErrorHandler(handleError);
  app.setNotFoundHandler(notFound);

  // A known path with another method is 405 with Allow. Fastify has no 405 of its own: every
  // route registered before this plugin's routes are ready gets a sibling for the other methods.
  const methodsByUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if ((route.config as { methodNotAllowed?: boolean } | undefined)?.methodNotAllowed) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = methodsByUrl.get(route.url) ?? new Set<string>();
    for (const m of methods) set.add(m);
    methodsByUrl.set(route.url, set);
  });
  app.decorate('addMethodNotAllowedRoutes', () => {
    // Routing comes before everything else (contract section 8): an unknown path or a wrong
    // method is answered before the body is read, so a malformed or oversize body cannot turn
    // a 404/405 into a 400/413. Added last, so the app's own onRequest hooks (headers) run first.
    app.addHook('onRequest', async (request, reply) => {
      if (request.is404) return notFound(request, reply);
      if ((request.routeOptions.config as { methodNotAllowed?: boolean }).methodNotAllowed)
        return methodNotAllowed(request, reply);
    });
    for (const [url, methods] of methodsByUrl) {
      if (methods.has('GET')) methods.add('HEAD');
      const others = ALL_METHODS.filter((m) => !methods.has(m));
      if (others.length === 0) continue;
      const allow = [...methods].join(', ');
      app.route({
        method: others,
        url,
        config: { methodNotAllowed: true, allow },
        handler: methodNotAllowed,
      });
    }
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    addMethodNotAllowedRoutes(): void;
  }
  interface FastifyRequest {
    /** The body was sent but is not valid JSON. */
    invalidJson: boolean;
  }
  interface FastifyContextConfig {
    /** The route itself reports `request.invalidJson`, after its earlier checks. */
    lateJsonCheck?: boolean;
    /** Marks the 405 siblings, which answer before authentication. */
    methodNotAllowed?: boolean;
    /** The Allow header of a 405 sibling. */
    allow?: string;
  }
}
