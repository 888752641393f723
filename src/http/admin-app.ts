// The admin API: a second listener for the operator, authenticated with ADMIN_TOKEN.
import { timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { createSessionStore, type SessionStore, sessionAuthorizes } from '../console/session.ts';
import { newRequestId } from '../core/ids.ts';
import { sha256Hex } from '../core/keys.ts';
import { installHttpMetrics } from '../metrics/http-metrics.ts';
import { registerAdminBackupRoute } from '../routes/admin/backup.ts';
import { registerConsoleRoutes } from '../routes/admin/console.ts';
import { registerAdminCustomerRoutes } from '../routes/admin/customers.ts';
import { registerAdminJobRoutes } from '../routes/admin/jobs.ts';
import { registerAdminJobListRoutes } from '../routes/admin/jobs-list.ts';
import { registerAdminMetricsRoute } from '../routes/admin/metrics.ts';
import { registerAdminQuarantineRoutes } from '../routes/admin/quarantine.ts';
import { registerAdminStockRoutes } from '../routes/admin/stock.ts';
import { registerAdminUsageRoutes } from '../routes/admin/usage.ts';
import { bearerToken } from './auth.ts';
import type { AppContext } from './context.ts';
import { ApiError } from './errors.ts';
import {
  BODY_LIMIT,
  clientErrorHandler,
  frameworkErrorHandler,
  installPlumbing,
  serverTimeouts,
} from './plumbing.ts';

/** Constant-time comparison of two secrets of any length (digests have equal length). */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(Buffer.from(sha256Hex(given), 'hex'), Buffer.from(sha256Hex(expected), 'hex'));
}

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

export async function buildAdminApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger.child({ listener: 'admin' }) as FastifyBaseLogger,
    genReqId: newRequestId,
    requestIdHeader: false,
    // Stock imports carry many codes; the operator is trusted with larger bodies than merchants.
    bodyLimit: 16 * BODY_LIMIT,
    ...serverTimeouts(ctx.config.REQUEST_TIMEOUT_MS),
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler(),
    clientErrorHandler: clientErrorHandler(),
  });
  installPlumbing(app);
  installHttpMetrics(app, ctx.metrics, 'admin');
  const sessions = createSessionStore(ctx.clock);

  app.addHook('onRequest', async (request) => {
    if (request.is404 || (request.routeOptions.config as { methodNotAllowed?: boolean }).methodNotAllowed)
      return;
    if (!isOperator(request, ctx.adminToken, sessions))
      throw new ApiError('unauthorized', 'missing or wrong admin token');
  });

  registerAdminCustomerRoutes(app, ctx);
  registerAdminStockRoutes(app, ctx);
  registerAdminJobRoutes(app, ctx);
  registerAdminQuarantineRoutes(app, ctx);
  registerAdminMetricsRoute(app, ctx);
  registerAdminJobListRoutes(app, ctx);
  registerAdminUsageRoutes(app, ctx);
  registerAdminBackupRoute(app, ctx);
  registerConsoleRoutes(app, ctx, sessions);
  app.addMethodNotAllowedRoutes();
  return app;
}
