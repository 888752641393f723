// GET /metrics on the admin listener (docs/reference/running.md#metrics): the process's registry in the Prometheus
// text format. The admin listener's token check covers it like every admin route.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../../http/context.ts';

export function registerAdminMetricsRoute(app: FastifyInstance, ctx: ServerContext) {
  app.get('/metrics', async (_request, reply) => {
    const text = await ctx.metrics.registry.metrics();
    return reply.header('Cache-Control', 'no-store').type(ctx.metrics.registry.contentType).send(text);
  });
}
