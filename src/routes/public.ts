// Every route of the public API, registered by the process into the app that src/http builds.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../http/context.ts';
import type { KeyChecks } from '../http/key-checks.ts';
import { registerBotUpdateRoutes } from './bot-updates.ts';
import { registerDocsRoutes } from './docs.ts';
import { registerEventRoutes } from './events.ts';
import { registerHealthRoutes } from './health.ts';
import { registerJobRoutes } from './jobs.ts';
import { registerMeRoutes } from './me.ts';
import { registerOpenApiRoutes } from './openapi.ts';
import { registerRedeemRoutes } from './redeem.ts';
import { registerStatementRoutes } from './statements.ts';
import { registerStockRoutes } from './stock.ts';
import { registerWebhookRoutes } from './webhook.ts';

export function registerPublicRoutes(app: FastifyInstance, ctx: ServerContext, keyChecks: KeyChecks): void {
  registerHealthRoutes(app, ctx);
  registerMeRoutes(app, ctx);
  registerStockRoutes(app, ctx);
  registerRedeemRoutes(app, ctx, keyChecks);
  registerJobRoutes(app, ctx);
  registerWebhookRoutes(app, ctx);
  registerEventRoutes(app, ctx);
  registerStatementRoutes(app, ctx);
  registerBotUpdateRoutes(app, ctx);
  // The API reference (docs/reference/running.md#served-documentation): the OpenAPI document and its HTML rendering, no key.
  registerOpenApiRoutes(app);
  registerDocsRoutes(app);
}
