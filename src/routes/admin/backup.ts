// GET /admin/v1/backup: a consistent copy of the embedded database while the server runs
// (docs/reference/running.md#backups), for `redeem-gateway backup`. The body is the gzip'd tarball of its data
// directory (as PGlite's dumpDataDir makes it), streamed from a file; the CLI adds the data directory's secrets from disk, so they never cross HTTP.
// Role `admin` only, one at a time, audited (core/operators/backups.ts). On PostgreSQL: 400,
// backups are PostgreSQL's own (pg_dump, base backups; README).
import type { FastifyInstance } from 'fastify';
import { takeBackup } from '../../core/operators/backups.ts';
import { actorOf } from '../../http/admin-door.ts';
import type { ServerContext } from '../../http/context.ts';

export function registerAdminBackupRoute(app: FastifyInstance, ctx: ServerContext) {
  app.get('/admin/v1/backup', { config: { adminOnly: 'take a backup' } }, async (request, reply) => {
    const started = Date.now();
    const backup = await takeBackup(ctx.db, actorOf(request), ctx.clock);
    request.log.info({ bytes: backup.bytes, ms: Date.now() - started }, 'backup taken');
    return reply
      .header('Cache-Control', 'no-store')
      .header('Content-Disposition', 'attachment; filename="redeem-gateway-pglite.tar.gz"')
      .header('Content-Length', String(backup.bytes))
      .type('application/gzip')
      .send(backup.stream);
  });
}
