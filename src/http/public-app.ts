// The public API: built by a function that never listens (tests use inject and real listeners).
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { accountView, loadAccountState, remainingToday, spendableMicros, today } from '../core/accounts.ts';
import { newRequestId } from '../core/ids.ts';
import { createKeyCache, type KeyFacts } from '../core/key-cache.ts';
import type { KeyRecord } from '../core/keys.ts';
import { formatUsd } from '../core/money.ts';
import { isConnectionError } from '../db/database.ts';
import { installHttpMetrics } from '../metrics/http-metrics.ts';
import { registerDocsRoutes } from '../routes/docs.ts';
import { registerHealthRoutes } from '../routes/health.ts';
import { registerJobRoutes } from '../routes/jobs.ts';
import { registerMeRoutes } from '../routes/me.ts';
import { registerOpenApiRoutes } from '../routes/openapi.ts';
import { registerRedeemRoutes } from '../routes/redeem.ts';
import { registerStockRoutes } from '../routes/stock.ts';
import { registerWebhookRoutes } from '../routes/webhook.ts';
import { authenticate, authorize, keyDigest, type ScopeRule } from './auth.ts';
import { installBurstLimit, setBurstHeadersUncounted } from './burst-limit.ts';
import type { AppContext } from './context.ts';
import { isDatabaseAwayAnswer } from './errors.ts';
import {
  BODY_LIMIT,
  clientErrorHandler,
  frameworkErrorHandler,
  installPlumbing,
  serverTimeouts,
} from './plumbing.ts';

export const API_VERSION = '1.0.0';
const EVERY_RESPONSE_HEADERS = {
  'SVC-Version': API_VERSION,
  'SVC-Cost': '0',
  'SVC-Idempotent-Replay': 'false',
};

export async function buildPublicApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger.child({ listener: 'public' }) as FastifyBaseLogger,
    genReqId: newRequestId,
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT,
    trustProxy: ctx.config.TRUST_PROXY.length > 0 ? [...ctx.config.TRUST_PROXY] : false,
    ...serverTimeouts(ctx.config.REQUEST_TIMEOUT_MS),
    rewriteUrl: (req) => routableJobUrl(req.url ?? '/'),
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler(EVERY_RESPONSE_HEADERS),
    clientErrorHandler: clientErrorHandler(EVERY_RESPONSE_HEADERS),
  });
  installPlumbing(app);
  installHttpMetrics(app, ctx.metrics, 'public');
  app.decorateRequest('auth', null);
  app.decorateRequest('cachedKey', null);
  const keyCache = createKeyCache();

  app.addHook('onRequest', async (_request, reply) => {
    reply.header('SVC-Version', API_VERSION);
    reply.header('SVC-Cost', '0');
    reply.header('SVC-Idempotent-Replay', 'false');
  });

  // Authentication runs before the body is read, so a huge body from a bad key is a 401.
  app.addHook('onRequest', async (request, reply) => {
    const rule = (request.routeOptions.config as { auth?: ScopeRule }).auth;
    if (!rule) return;
    const digest = keyDigest(request);
    // A route whose own statement checks the key again (GET /v1/me) needs no query here for a key
    // this process has seen: it finishes steps 2 to 5 itself, from that statement's answer.
    const cached = keyCache.get(digest);
    if (cached && request.routeOptions.config.keyCheckedInStatement) {
      request.cachedKey = cached;
      return;
    }
    const key = await authenticate(ctx.db, digest, ctx.clock, keyCache);
    request.auth = key;
    try {
      authorize(key, request.ip, rule);
    } catch (err) {
      // Identified but refused (403): a burst-limited route still reports the key's window
      // (contract section 6: every redeem answer carries RateLimit-*), without counting this one.
      if (request.routeOptions.config.burstLimit) await setBurstHeadersUncounted(ctx, request, reply);
      throw err;
    }
  });

  // After authentication, before the body is read: the burst limit of `burstLimit` routes.
  installBurstLimit(app, ctx);

  // Quota and balance headers on every response whose key was identified, as of after the call.
  app.addHook('onSend', async (request, reply, payload) => {
    const key = request.auth;
    // The database's own 503: reading the account would only wait for the database again.
    if (!key || reply.hasHeader('SVC-Quota-Used') || isDatabaseAwayAnswer(reply)) return payload;
    try {
      const state = await readAccountForHeaders(ctx, key);
      if (state) setAccountHeaders(reply, state);
    } catch (err) {
      request.log.warn({ err }, 'could not read account headers');
    }
    return payload;
  });

  registerHealthRoutes(app, ctx);
  registerMeRoutes(app, ctx);
  registerStockRoutes(app, ctx);
  registerRedeemRoutes(app, ctx);
  registerJobRoutes(app, ctx);
  registerWebhookRoutes(app, ctx);
  // The API reference (contract 12.9): the OpenAPI document and its HTML rendering, no key.
  registerOpenApiRoutes(app);
  registerDocsRoutes(app);
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
  const attempts = (ctx.db.poolStats?.().max ?? 1) + 1;
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await loadAccountState(ctx.db, key.customerId, key.mode, today(ctx.clock));
    } catch (err) {
      if (attempt >= attempts || !isConnectionError(err) || Date.now() - started >= 1000) throw err;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

const JOBS_PREFIX = '/v1/jobs/';
/** Longer than any job id, within the router's limit on one path parameter (100). */
const MAX_JOB_ID_IN_URL = 100;

/**
 * `GET /v1/jobs/{id}` with an id no job can have: one the router cannot take (undecodable
 * percent-encoding, longer than its parameter limit) would be a `400` answered before
 * authentication, without the quota headers. It is routed as an unknown id instead, so it is
 * `404 not_found` after authentication, with the quota headers, like any unknown job (contract
 * sections 4 and 8). Linear in the URL; every other URL is returned unchanged.
 */
export function routableJobUrl(url: string): string {
  if (!url.startsWith(JOBS_PREFIX)) return url;
  const q = url.indexOf('?');
  const id = url.slice(JOBS_PREFIX.length, q === -1 ? url.length : q);
  if (id.includes('/')) return url;
  if (id.length <= MAX_JOB_ID_IN_URL && decodable(id)) return url;
  return `${JOBS_PREFIX}-${q === -1 ? '' : url.slice(q)}`;
}

function decodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

export function setAccountHeaders(
  reply: { header(name: string, value: string): unknown },
  state: Parameters<typeof remainingToday>[0] & Parameters<typeof spendableMicros>[0],
) {
  const used = state.plan ? state.usedToday : 0;
  reply.header('SVC-Quota-Used', String(used));
  reply.header('SVC-Quota-Remaining', String(remainingToday(state)));
  reply.header('SVC-Balance-Usd', formatUsd(spendableMicros(state)));
}

export { accountView };

declare module 'fastify' {
  interface FastifyRequest {
    /** The key once identified (contract section 1, steps 1 and 2); then the quota headers are sent. */
    auth: KeyRecord | null;
    /** A `keyCheckedInStatement` route's key from the cache, not yet checked (auth is null). */
    cachedKey: KeyFacts | null;
  }
  interface FastifyContextConfig {
    auth?: ScopeRule;
    /**
     * The route checks revocation and the customer's state in its own statement, so a cached key
     * costs the hook no query; the route finishes steps 2 to 5 itself (routes/me.ts).
     */
    keyCheckedInStatement?: boolean;
    /** Count the request in the key's burst window (contract section 6). */
    burstLimit?: boolean;
  }
}
