// The public API: built by a function that never listens (tests use inject and real listeners).
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { accountView, loadAccountState, remainingToday, spendableMicros, today } from '../core/accounts.ts';
import { newRequestId } from '../core/ids.ts';
import type { KeyRecord } from '../core/keys.ts';
import { formatUsd } from '../core/money.ts';
import { registerHealthRoutes } from '../routes/health.ts';
import { registerJobRoutes } from '../routes/jobs.ts';
import { registerMeRoutes } from '../routes/me.ts';
import { registerRedeemRoutes } from '../routes/redeem.ts';
import { registerStockRoutes } from '../routes/stock.ts';
import { registerWebhookRoutes } from '../routes/webhook.ts';
import { authenticate, authorize, type ScopeRule } from './auth.ts';
import { installBurstLimit } from './burst-limit.ts';
import type { AppContext } from './context.ts';
import { BODY_LIMIT, clientErrorHandler, frameworkErrorHandler, installPlumbing } from './plumbing.ts';

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
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler(EVERY_RESPONSE_HEADERS),
    clientErrorHandler: clientErrorHandler(EVERY_RESPONSE_HEADERS),
  });
  installPlumbing(app);
  app.decorateRequest('auth', null);

  app.addHook('onRequest', async (_request, reply) => {
    reply.header('SVC-Version', API_VERSION);
    reply.header('SVC-Cost', '0');
    reply.header('SVC-Idempotent-Replay', 'false');
  });

  // Authentication runs before the body is read, so a huge body from a bad key is a 401.
  app.addHook('onRequest', async (request) => {
    const rule = (request.routeOptions.config as { auth?: ScopeRule }).auth;
    if (!rule) return;
    const key = await authenticate(ctx.db, request, ctx.clock);
    request.auth = key;
    authorize(key, request.ip, rule);
  });

  // After authentication, before the body is read: the burst limit of `burstLimit` routes.
  installBurstLimit(app, ctx);

  // Quota and balance headers on every response whose key was identified, as of after the call.
  app.addHook('onSend', async (request, reply, payload) => {
    const key = request.auth;
    if (!key || reply.hasHeader('SVC-Quota-Used')) return payload;
    try {
      const state = await loadAccountState(ctx.db, key.customerId, key.mode, today(ctx.clock));
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
  app.addMethodNotAllowedRoutes();
  return app;
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
    auth: KeyRecord | null;
  }
  interface FastifyContextConfig {
    auth?: ScopeRule;
    /** Count the request in the key's burst window (contract section 6). */
    burstLimit?: boolean;
  }
}
