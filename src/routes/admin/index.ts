// Every route of the admin API and the console, registered by the process into the app that
// src/http builds.
import type { FastifyInstance } from 'fastify';
import type { SessionStore } from '../../console/session.ts';
import type { ServerContext } from '../../http/context.ts';
import { registerAdminBackupRoute } from './backup.ts';
import { registerAdminBotRoutes } from './bot.ts';
import { registerConsoleRoutes } from './console.ts';
import { registerAdminCustomerRoutes } from './customers.ts';
import { registerAdminEncryptionRoutes } from './encryption.ts';
import { registerAdminEventRoutes } from './events.ts';
import { registerAdminJobRoutes } from './jobs.ts';
import { registerAdminJobListRoutes } from './jobs-list.ts';
import { registerAdminKeyRoutes } from './keys.ts';
import { registerAdminMetricsRoute } from './metrics.ts';
import { registerAdminOperatorRoutes } from './operators.ts';
import { registerAdminQuarantineRoutes } from './quarantine.ts';
import { registerAdminRequestRoutes } from './requests.ts';
import { registerAdminStatementRoutes } from './statements.ts';
import { registerAdminStockRoutes } from './stock.ts';
import { registerAdminTopupRoutes } from './topups.ts';
import { registerAdminUsageRoutes } from './usage.ts';
import { registerAdminWalletRoutes } from './wallet.ts';

export function registerAdminRoutes(app: FastifyInstance, ctx: ServerContext, sessions: SessionStore): void {
  registerAdminCustomerRoutes(app, ctx);
  registerAdminKeyRoutes(app, ctx);
  registerAdminWalletRoutes(app, ctx);
  registerAdminOperatorRoutes(app, ctx);
  registerAdminStockRoutes(app, ctx);
  registerAdminJobRoutes(app, ctx);
  registerAdminQuarantineRoutes(app, ctx);
  registerAdminMetricsRoute(app, ctx);
  registerAdminJobListRoutes(app, ctx);
  registerAdminUsageRoutes(app, ctx);
  registerAdminEventRoutes(app, ctx);
  registerAdminStatementRoutes(app, ctx);
  registerAdminBackupRoute(app, ctx);
  registerAdminEncryptionRoutes(app, ctx);
  registerAdminBotRoutes(app, ctx);
  registerAdminTopupRoutes(app, ctx);
  registerAdminRequestRoutes(app, ctx);
  registerConsoleRoutes(app, ctx, sessions);
}
