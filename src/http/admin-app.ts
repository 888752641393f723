// The admin API: a second listener for the operator, authenticated with ADMIN_TOKEN.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { createSessionStore, type SessionStore, sessionAuthorizes } from '../console/session.ts';
import { ApiError } from '../core/errors.ts';
import { newRequestId } from '../core/ids.ts';
import { installHttpMetrics } from '../metrics/http-metrics.ts';
import { bearerToken, sameSecret } from './auth.ts';
import type { ServerContext } from './context.ts';
import {
  ADMIN_BODY_LIMIT,
  clientErrorHandler,
  frameworkErrorHandler,
  installPlumbing,
  serverTimeouts,
} from './plumbing.ts';

/**
 * The operator is either the bearer of ADMIN_TOKEN or a signed-in console session (its cookie,
 * plus the console's header on requests that change something: src/console/session.ts).
 */
function isOperator(request: FastifyRequest, adminToken: string, sessions: SessionStore): boolean {
  if (request.routeOptions.config.consolePublic) return true;
  const token = bearerToken(request.headers.authorization);
  if (token) return sameSecret(token, adminToken);
  return request.headers.authorization === undefined && sessionAuthorizes(request, sessions);
}

/** Registers the admin routes (src/routes/admin/index.ts): the console's routes need its sessions. */
export type AdminRoutes = (app: FastifyInstance, ctx: ServerContext, sessions: SessionStore) => void;

export async function buildAdminApp(ctx: ServerContext, routes: AdminRoutes): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger.child({ listener: 'admin' }) as FastifyBaseLogger,
    genReqId: newRequestId,
    requestIdHeader: false,
    // Stock imports carry many codes; the operator is trusted with larger bodies than merchants.
    bodyLimit: ADMIN_BODY_LIMIT,
    ...serverTimeouts(ctx.config.REQUEST_TIMEOUT_MS),
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler(),
    clientErrorHandler: clientErrorHandler(),
  });
  installPlumbing(app, { bodyLimit: ADMIN_BODY_LIMIT });
  installHttpMetrics(app, ctx.metrics, 'admin');
  const sessions = createSessionStore(ctx.clock);

  app.addHook('onRequest', async (request) => {
    if (request.is404 || (request.routeOptions.config as { methodNotAllowed?: boolean }).methodNotAllowed)
      return;
    if (!isOperator(request, ctx.adminToken, sessions))
      throw new ApiError('unauthorized', 'missing or wrong admin token');
  });

  routes(app, ctx, sessions);
  app.addMethodNotAllowedRoutes();
  return app;
}
