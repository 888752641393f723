// What every request of both listeners goes through: request ids, JSON parsing of any content
// type, the error body for every error (404, 405, 408, 413, bad JSON, crashes), one error
// handler, `Cache-Control: no-store` on every answer, and the listeners' timeouts.

import { METHODS } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import {
  ApiError,
  DatabaseUnavailableError,
  ERROR_STATUS,
  type ErrorCode,
  errorBody,
  knownError,
} from '../core/errors.ts';
import { newRequestId } from '../core/ids.ts';
import { installEarlyAnswers, isClientAbort, NODE_HOST_CHECK_OFF } from './early-answers.ts';
import { installStorableInput } from './storable-input.ts';

export const BODY_LIMIT = 262_144;
/** The admin API's body limit (docs/reference/limits.md#body-sizes): 4 MiB on every admin route (large stock imports). */
export const ADMIN_BODY_LIMIT = 4 * 1024 * 1024;

/**
 * Sent with every answer of both listeners, errors included (docs/reference/limits.md#hostile-requests): answers carry
 * account data, keys, secrets and job results that no shared cache may keep.
 */
export const NO_STORE = { 'Cache-Control': 'no-store' } as const;

/**
 * How long the headers of a request may take to arrive (slow-loris): well under the request
 * timeout, which Node requires to be at least this.
 */
export const HEADERS_TIMEOUT_MS = 10_000;
/**
 * How long an idle kept-alive connection stays open: above the 60 s idle timeout of common load
 * balancers, so the proxy, not this server, closes an idle connection (no request is lost to a
 * connection closed just as the proxy reuses it). Fastify's default, chosen deliberately.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/**
 * The Fastify and Node server options of both listeners' timeouts. `requestTimeoutMs`
 * (REQUEST_TIMEOUT_MS, default 30 s): a request whose headers and body have not all arrived by
 * then is answered `408 request_timeout` (the client error handler below) and its connection
 * closed. It bounds receiving the request only, never the time a redeem takes to answer.
 * Node checks for expired requests every `connectionsCheckingInterval`; it is kept short so the
 * 408 comes soon after the deadline. No idle-socket timeout (`connectionTimeout` 0): a response
 * that takes long (a sync redeem of slow codes) must not be cut.
 */
export function serverTimeouts(requestTimeoutMs: number) {
  const headersTimeout = Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs);
  return {
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionTimeout: 0,
    http: {
      ...NODE_HOST_CHECK_OFF,
      requestTimeout: requestTimeoutMs,
      headersTimeout,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4))),
    },
  };
}

/**
 * Every method Node's HTTP parser accepts, but CONNECT (a tunnel: Node never hands it to the
 * request handler). Fastify routes only some of them by itself (TRACE, PROPFIND, … but not PURGE
 * or LINK); the others are added, so any method on a known path is a 405 with Allow and on an
 * unknown path a 404, as the document says, never a framework answer of its own.
 */
const ALL_METHODS = METHODS.filter((m) => m !== 'CONNECT') as HTTPMethods[];

export function sendError(
  reply: FastifyReply,
  code: ErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  for (const [name, value] of Object.entries(headers)) reply.header(name, value);
  const status = ERROR_STATUS[code];
  // Every 429 and 503 says when to come back (docs/reference/keys-and-modes.md#response-headers); most set their own value.
  if ((status === 429 || status === 503) && !reply.hasHeader('Retry-After')) reply.header('Retry-After', '1');
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(errorBody(code, message, reply.request.id, extra));
}

/** Maps anything thrown to the error body; unknown errors become a bare 500. */
function handleError(error: FastifyError | ApiError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (isClientAbort(error, request)) {
    // Nobody reads this answer; the line says what happened, not "database unavailable".
    request.log.info({ code: (error as FastifyError).code }, 'request aborted by the client');
    return sendError(reply, 'bad_request', 'the request was aborted');
  }
  const known = knownError(error);
  if (known) {
    if (!(error instanceof ApiError)) request.log.warn({ err: error }, 'database unavailable');
    if (known instanceof DatabaseUnavailableError) markDatabaseAway(reply);
    return sendError(reply, known.code, known.message, known.extra, known.headers);
  }
  const fe = error as FastifyError;
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || fe.statusCode === 413) {
    // The listener's own limit (the public API's 256 KiB, the admin API's 4 MiB).
    const limit = reply.server.initialConfig.bodyLimit ?? BODY_LIMIT;
    return sendError(reply, 'payload_too_large', `body is larger than ${limit} bytes`);
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
 * gives it the error body too. `headers`: the listener's headers of every response.
 */
export function frameworkErrorHandler(headers: Record<string, string> = {}) {
  return (_error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    reply.header('X-Request-Id', request.id);
    return sendError(reply, 'bad_request', 'malformed request URL', {}, { ...NO_STORE, ...headers });
  };
}

/**
 * Node's HTTP server answers some requests before Fastify can: headers over 16 KB, bytes that
 * are not HTTP (400), and a request not fully received within the request timeout (408, also
 * when its headers were read and a route is waiting for the body). They get the error
 * body too, with a fresh request id, and the connection is closed.
 */
export function clientErrorHandler(headers: Record<string, string> = {}) {
  return (err: Error & { code?: string }, socket: Socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) return;
    // An answer already started on this connection (a 401 sent before the body came): a second
    // one cannot follow it; the connection is closed, as Node itself does.
    if ((socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const id = newRequestId();
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    const code: ErrorCode = timedOut ? 'request_timeout' : 'bad_request';
    const message = timedOut
      ? 'the request did not arrive in time'
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? 'request headers are too large'
        : 'malformed HTTP request';
    const body = JSON.stringify(errorBody(code, message, id));
    const extra = Object.entries({ ...NO_STORE, ...headers })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    const statusLine = timedOut ? '408 Request Timeout' : '400 Bad Request';
    socket.end(
      `HTTP/1.1 ${statusLine}\r\nContent-Type: application/json; charset=utf-8\r\n` +
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

export interface PlumbingOptions {
  /**
   * Runs before an error is answered (not for the database's own 503); what it throws is
   * answered instead. The public app settles checks a route left to its own statement here.
   */
  beforeErrorAnswer?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /**
   * Largest body the parser reads, in bytes (default BODY_LIMIT, the public API's). A parser's
   * own limit overrides the listener's, so the admin app passes ADMIN_BODY_LIMIT here too.
   */
  bodyLimit?: number;
}

export function installPlumbing(app: FastifyInstance, opts: PlumbingOptions = {}): void {
  const known = new Set<string>(app.supportedMethods);
  for (const method of ALL_METHODS) if (!known.has(method)) app.addHttpMethod(method);
  // Bodies are JSON whatever Content-Type the client sent (curl -d sends a form type).
  // Fastify's own secure parser is used: __proto__ and constructor.prototype keys are refused.
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  const bodyLimit = opts.bodyLimit ?? BODY_LIMIT;
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, (request, body, done) => {
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
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.invalidJson && !request.routeOptions.config.lateJsonCheck) {
      done(new ApiError('bad_request', 'body is not valid JSON'));
      return;
    }
    done();
  });
  installStorableInput(app);

  // Hooks that wait for nothing use Fastify's callback form: no promise per request (quick-hook.ts).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    reply.header('Cache-Control', NO_STORE['Cache-Control']);
    done();
  });
  installEarlyAnswers(app, bodyLimit);

  const before = opts.beforeErrorAnswer;
  app.setErrorHandler(
    before
      ? async (error: FastifyError | ApiError | Error, request: FastifyRequest, reply: FastifyReply) => {
          if (!(knownError(error) instanceof DatabaseUnavailableError)) {
            try {
              await before(request, reply);
            } catch (refusal) {
              return handleError(refusal as Error, request, reply);
            }
          }
          return handleError(error, request, reply);
        }
      : handleError,
  );
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
    // Routing comes before everything else (docs/reference/keys-and-modes.md#routing): an unknown path or a wrong
    // method is answered before the body is read, so a malformed or oversize body cannot turn
    // a 404/405 into a 400/413. Added last, so the app's own onRequest hooks (headers) run first.
    // Answered here: the chain ends without done().
    app.addHook('onRequest', (request, reply, done) => {
      if (request.is404) notFound(request, reply);
      else if ((request.routeOptions.config as { methodNotAllowed?: boolean }).methodNotAllowed)
        methodNotAllowed(request, reply);
      else done();
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

// Replies answered with the database's 503 (marked by the error handler above).
const databaseAwayAnswers = new WeakSet<object>();

/** Marks a reply as the database's 503: nothing more is asked of the database for it. */
export function markDatabaseAway(reply: object): void {
  databaseAwayAnswers.add(reply);
}

/** Whether a reply is the database's 503 (its quota headers cannot be read: the database is away). */
export function isDatabaseAwayAnswer(reply: object): boolean {
  return databaseAwayAnswers.has(reply);
}
