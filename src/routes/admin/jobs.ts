// GET /admin/v1/jobs/{id}: any job (sync or async) with its billing hold, its per-code attempts
// and its webhook deliveries (core/jobs/admin-view.ts).
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { adminJobView } from '../../core/jobs/admin-view.ts';

export function registerAdminJobRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get<{ Params: { id: string } }>('/admin/v1/jobs/:id', async (request) => {
    const view = await adminJobView(ctx.db, request.params.id, request.id);
    if (!view) throw new ApiError('not_found', 'unknown job');
    return view;
  });
}
