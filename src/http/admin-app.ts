// The admin API: a second listener for the operator, authenticated with ADMIN_TOKEN.
import { timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { newRequestId } from '../core/ids.ts';
import { sha256Hex } from '../core/keys.ts';
import { registerAdminCustomerRoutes } from '../routes/admin/customers.ts';
import { registerAdminJobRoutes } from '../routes/admin/jobs.ts';
import { registerAdminQuarantineRoutes } from '../routes/admin/quarantine.ts';
import { registerAdminStockRoutes } from '../routes/admin/stock.ts';
import { bearerToken } from './auth.ts';
import type { AppContext } from './context.ts';
import { ApiError } from './errors.ts';
import { BODY_LIMIT, clientErrorHandler, frameworkErrorHandler, installPlumbing } from './plumbing.ts';

/** Constant-time comparison of two secrets of any length (digests have equal length). */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(Buffer.from(sha256Hex(given), 'hex'), Buffer.from(sha256Hex(expected), 'hex'));
}

export async function buildAdminApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger.child({ listener: 'admin' }) as FastifyBaseLogger,
    genReqId: newRequestId,
    requestIdHeader: false,
    // Stock imports carry many codes; the operator is trusted with larger bodies than merchants.
    bodyLimit: 16 * BODY_LIMIT,
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler(),
    clientErrorHandler: clientErrorHandler(),
  });
  installPlumbing(app);

  app.addHook('onRequest', async (request) => {
    if (request.is404 || (request.routeOptions.config as { methodNotAllowed?: boolean }).methodNotAllowed)
      return;
    const token = bearerToken(request.headers.authorization);
    if (!token || !sameSecret(token, ctx.adminToken))
      throw new ApiError('unauthorized', 'missing or wrong admin token');
  });

  registerAdminCustomerRoutes(app, ctx);
  registerAdminStockRoutes(app, ctx);
  registerAdminJobRoutes(app, ctx);
  registerAdminQuarantineRoutes(app, ctx);
  app.addMethodNotAllowedRoutes();
  return app;
}
