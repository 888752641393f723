// GET /admin/v1/backup: a consistent copy of the embedded database while the server runs
// (contract 13.10), for `redeem-gateway backup`. The body is PGlite's gzip'd tarball of its data
// directory; the CLI adds the data directory's secrets from disk, so they never cross HTTP.
// On PostgreSQL: 400, backups are PostgreSQL's own (pg_dump, base backups; README).
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../core/errors.ts';
import type { ServerContext } from '../../http/context.ts';

export function registerAdminBackupRoute(app: FastifyInstance, ctx: ServerContext) {
  app.get('/admin/v1/backup', async (request, reply) => {
    if (!ctx.db.dump)
      throw new ApiError(
        'bad_request',
        'this server runs on PostgreSQL: back it up with PostgreSQL tools (pg_dump, or base backups with WAL archiving)',
      );
    const started = Date.now();
    const tarball = Buffer.from(await (await ctx.db.dump()).arrayBuffer());
    request.log.info({ bytes: tarball.length, ms: Date.now() - started }, 'backup taken');
    return reply
      .header('Cache-Control', 'no-store')
      .header('Content-Disposition', 'attachment; filename="redeem-gateway-pglite.tar.gz"')
      .type('application/gzip')
      .send(tarball);
  });
}
