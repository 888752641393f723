// The public API: built by a function that never listens (tests use inject and real listeners).
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { loadAccountState, today } from '../core/accounts/accounts.ts';
import type { AppContext } from '../core/context.ts';
import { newRequestId } from '../core/ids.ts';
import type { KeyRecord } from '../core/keys/keys.ts';
import { createRefusalPace } from '../core/limits/refusal-pace.ts';
import { retryFor, retryOnConnectionError } from '../core/retry.ts';
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
  // Refused and failed answers, written in batches off the request path (issue 36).
  installRequestLog(app, ctx);

  // Authentication runs before the body is read, so a huge body from a bad key is a 401; then
  // the burst limit.
  // A flood's repeated refusals (a key past its read budget, an address past its unknown-key
  // limit) are answered at most 100 a second per key or address, each held at most 1 s.
  const pace = createRefusalPace({ perSecond: 100, maxDelayMs: 1000 });
  keyChecks = installKeyChecks(app, ctx, unknownKeyLimitFrom(ctx.config), pace);
  // Then the read and registration limits of contract 13.8.
  installTenantLimits(app, ctx, keyChecks, pace);

  // Quota and balance headers on every response whose key was identified, as of after the call.
  // Callback form: most answers have their headers already and pass without a promise.
  app.addHook('onSend', (request, reply, payload, done) => {
    const key = request.auth;
    // The database's own 503: reading the account would only wait for the database again.
    if (!key || reply.hasHeader('SVC-Quota-Used') || isDatabaseAwayAnswer(reply)) return done(null, payload);
    readAccountForHeaders(ctx, key)
      .then((state) => {
        if (state) setAccountHeaders(reply, state);
      })
      .catch((err) => request.log.warn({ err }, 'could not read account headers'))
      .finally(() => done(null, payload));
  });

  routes(app, ctx, keyChecks);
  app.addMethodNotAllowedRoutes();
  return app;
}

/**
 * The account state behind the quota headers (part of the answer, contract section 8). A
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
