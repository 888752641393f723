// GET /v1/health: no key, not billed; 503 unavailable when the database does not answer.
import type { FastifyInstance } from 'fastify';
import { isoUtc } from '../core/clock.ts';
import type { AppContext } from '../core/context.ts';
import { ApiError } from '../core/errors.ts';
import { API_VERSION } from '../http/headers.ts';

const DB_CHECK_TIMEOUT_MS = 2000;

export function registerHealthRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/v1/health', async (request) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        ctx.db.query('select 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('database check timed out')), DB_CHECK_TIMEOUT_MS);
        }),
      ]);
    } catch (err) {
      request.log.error({ err }, 'health check: database unavailable');
      throw new ApiError('unavailable', 'database unavailable', {}, { 'Retry-After': '5' });
    } finally {
      clearTimeout(timer);
    }
    return {
      ok: true,
      request_id: request.id,
      status: 'ok',
      version: API_VERSION,
      time: isoUtc(ctx.clock.now()),
      checks: { database: 'ok' },
    };
  });
}
