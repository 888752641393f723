// The public API: built by a function that never listens (tests use inject and real listeners).
import type { Readable } from 'node:stream';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { loadAccountState, today } from '../core/accounts/accounts.ts';
import type { AppContext } from '../core/context.ts';
import { databaseUnavailable, errorBody } from '../core/errors.ts';
import { newRequestId } from '../core/ids.ts';
import type { KeyRecord } from '../core/keys/keys.ts';
import { createRefusalPace } from '../core/limits/refusal-pace.ts';
import { retryFor, retryOnConnectionError } from '../core/retry.ts';
import { shardedByCustomer } from '../db/citus.ts';
import { rememberRouteWords } from '../logged-path.ts';
import { installHttpMetrics } from '../metrics/http-metrics.ts';
import type { ServerContext } from './context.ts';
import { API_VERSION, EVERY_RESPONSE_HEADERS, setAccountHeaders } from './headers.ts';
import { installKeyChecks, type KeyChecks } from './key-checks.ts';
import {
  BODY_LIMIT,
  clientErrorHandler,
  frameworkErrorHandler,
  installPlumbing,
  isDatabaseAwayAnswer,
  markDatabaseAway,
  serverTimeouts,
} from './plumbing.ts';
import { installRequestLog } from './request-log.ts';
import { requestLogger } from './request-logger.ts';
import { createParamRouting } from './routable-url.ts';
import { installTenantLimits, unknownKeyLimitFrom } from './tenant-limits.ts';

export { API_VERSION };

/** Registers the public routes (src/routes/public.ts): the redeem route settles its own key checks. */
export type PublicRoutes = (app: FastifyInstance, ctx: ServerContext, keyChecks: KeyChecks) => void;

export async function buildPublicApp(ctx: ServerContext, routes: PublicRoutes): Promise<FastifyInstance> {
  const paramRouting = createParamRouting();
  const app = Fastify({
    loggerInstance: ctx.logger.child({ listener: 'public' }) as FastifyBaseLogger,
    genReqId: newRequestId,
    childLoggerFactory: requestLogger,
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT,
    trustProxy: ctx.config.TRUST_PROXY.length > 0 ? [...ctx.config.TRUST_PROXY] : false,
    ...serverTimeouts(ctx.config.REQUEST_TIMEOUT_MS),
    rewriteUrl: (req) => paramRouting.rewriteUrl(req.url ?? '/'),
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler(EVERY_RESPONSE_HEADERS),
    clientErrorHandler: clientErrorHandler(EVERY_RESPONSE_HEADERS),
  });
  // A route that leaves the key's checks or the burst slot to its own statement gets them here
  // when it answers without running it (a 413, a malformed body), before that answer.
  let keyChecks: KeyChecks | undefined;
  paramRouting.learnRoutes(app);
  // Logs show a path's segments in full only when a route names them (src/logged-path.ts).
  app.addHook('onRoute', (route) => rememberRouteWords(route.url));
  // First, so that every answer has them, also the plumbing's own (a request without Host).
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('SVC-Version', API_VERSION);
    reply.header('SVC-Cost', '0');
    reply.header('SVC-Idempotent-Replay', 'false');
    done();
  });
  installPlumbing(app, { beforeErrorAnswer: (request, reply) => keyChecks!.settle(request, reply) });
  installHttpMetrics(app, ctx.metrics, 'public');
  // Refused and failed answers, written in batches off the request path.
  installRequestLog(app, ctx);

  // Authentication runs before the body is read, so a huge body from a bad key is a 401; then
  // the burst limit.
  // A flood's repeated refusals (a key past its read budget, an address past its unknown-key
  // limit) are answered at most 100 a second per key or address, each held at most 1 s.
  const pace = createRefusalPace({ perSecond: 100, maxDelayMs: 1000 });
  // Sharded or not (Citus) decides how a key is found by its digest: read once here, not in a
  // request (if the database does not answer now, the first request that needs it asks).
  await shardedByCustomer(ctx.db).catch(() => undefined);
  keyChecks = installKeyChecks(app, ctx, unknownKeyLimitFrom(ctx.config), pace);
  // Then the read and registration limits of docs/reference/limits.md#per-customer-limits.
  installTenantLimits(app, ctx, keyChecks, pace);

  // Quota and balance headers on every response whose key was identified, as of after the call.
  // Callback form: most answers have their headers already and pass without a promise.
  app.addHook('onSend', (request, reply, payload, done) => {
    const key = request.auth;
    // The database's own 503: reading the account would only wait for the database again.
    if (!key || reply.hasHeader('SVC-Quota-Used') || isDatabaseAwayAnswer(reply)) return done(null, payload);
    readAccountForHeaders(ctx, key).then(
      (state) => {
        if (state) setAccountHeaders(reply, state);
        done(null, payload);
      },
      (err: unknown) => {
        request.log.warn({ err }, 'could not read account headers');
        done(null, accountUnreadable(request, reply, payload));
      },
    );
  });

  routes(app, ctx, keyChecks);
  app.addMethodNotAllowedRoutes();
  return app;
}

/**
 * The answer to send when its quota headers could not be read (the database did not answer in
 * time). The contract puts them on every answer whose key was identified, so an answer that
 * changed nothing (a read, or any refusal) becomes the `503 unavailable` of a request that needed
 * the database while it was away, which the client retries (found by the fuzzer under a slow
 * database: a 200 of GET /v1/stock and a 404 of a redelivery without them). An answer whose
 * change is committed (a 2xx to POST) is sent as it is, without them: a 503 would say that nothing
 * was done.
 */
function accountUnreadable(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  const changedNothing = request.method === 'GET' || request.method === 'HEAD' || reply.statusCode >= 400;
  if (!changedNothing) return payload;
  if (payload && typeof (payload as Readable).destroy === 'function') (payload as Readable).destroy();
  const away = databaseUnavailable();
  markDatabaseAway(reply);
  for (const name of ['content-length', 'content-disposition', 'location', 'etag']) reply.removeHeader(name);
  for (const [name, value] of Object.entries(away.headers)) reply.header(name, value);
  reply.code(503).type('application/json; charset=utf-8');
  return JSON.stringify(errorBody(away.code, away.message, request.id, away.extra));
}

/**
 * The account state behind the quota headers (part of the answer, docs/reference/keys-and-modes.md#response-headers). A
 * connection lost under this read (a restarted server or a terminated backend: every idle pooled
 * connection may be dead at once) fails only that statement, and the pool may still hand out
 * siblings killed at the same moment whose error it has not read yet. So the read is tried again,
 * after a short pause that lets the pool drop them, up to one more time than the pool holds
 * connections; a database that does not answer is not waited for again: tries stop after a second.
 */
async function readAccountForHeaders(ctx: AppContext, key: KeyRecord) {
  return retryOnConnectionError(() => loadAccountState(ctx.db, key.customerId, key.mode, today(ctx.clock)), {
    ...retryFor(1000),
    maxAttempts: (ctx.db.poolStats?.().max ?? 1) + 1,
    delayMs: () => 10,
  });
}
