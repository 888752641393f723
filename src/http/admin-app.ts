// The admin API: a second listener for the operators (ADMIN_TOKEN is `root`; docs/reference/operators-and-audit.md#operators-and-roles).
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { createSessionStore, type SessionStore } from '../console/session.ts';
import { newRequestId } from '../core/ids.ts';
import { rememberRouteWords } from '../logged-path.ts';
import { installHttpMetrics } from '../metrics/http-metrics.ts';
import { installAdminDoor } from './admin-door.ts';
import type { ServerContext } from './context.ts';
import {
  ADMIN_BODY_LIMIT,
  clientErrorHandler,
  frameworkErrorHandler,
  installPlumbing,
  serverTimeouts,
} from './plumbing.ts';
import { requestLogger } from './request-logger.ts';
import { createParamRouting } from './routable-url.ts';

/** Registers the admin routes (src/routes/admin/index.ts): the console's routes need its sessions. */
export type AdminRoutes = (app: FastifyInstance, ctx: ServerContext, sessions: SessionStore) => void;

export async function buildAdminApp(ctx: ServerContext, routes: AdminRoutes): Promise<FastifyInstance> {
  const paramRouting = createParamRouting();
  const app = Fastify({
    loggerInstance: ctx.logger.child({ listener: 'admin' }) as FastifyBaseLogger,
    genReqId: newRequestId,
    childLoggerFactory: requestLogger,
    requestIdHeader: false,
    // Stock imports carry many codes; the operator is trusted with larger bodies than merchants.
    bodyLimit: ADMIN_BODY_LIMIT,
    // The client address of the audit log and the lockout, and X-Forwarded-Proto for the
    // console cookie's Secure flag, are believed only from TRUST_PROXY (as on the public API).
    trustProxy: ctx.config.TRUST_PROXY.length > 0 ? [...ctx.config.TRUST_PROXY] : false,
    ...serverTimeouts(ctx.config.REQUEST_TIMEOUT_MS),
    return503OnClosing: true,
    // A path id the router cannot take is an unknown id (http/routable-url.ts).
    rewriteUrl: (req) => paramRouting.rewriteUrl(req.url ?? '/'),
    frameworkErrors: frameworkErrorHandler(),
    clientErrorHandler: clientErrorHandler(),
  });
  paramRouting.learnRoutes(app);
  // Logs show a path's segments in full only when a route names them (src/logged-path.ts).
  app.addHook('onRoute', (route) => rememberRouteWords(route.url));
  installPlumbing(app, { bodyLimit: ADMIN_BODY_LIMIT });
  installHttpMetrics(app, ctx.metrics, 'admin');
  const sessions = createSessionStore(ctx.clock);

  // Host, lockout, operator and role (src/http/admin-door.ts): the operator is the bearer of an
  // operator token or a signed-in console session (its cookie, plus the console's header on
  // requests that change something: src/console/session.ts).
  installAdminDoor(app, ctx, sessions);

  routes(app, ctx, sessions);
  app.addMethodNotAllowedRoutes();
  return app;
}
