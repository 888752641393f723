// GET /admin/v1/encryption and POST /admin/v1/encryption/rotate (docs/reference/operators-and-audit.md#encryption-key-rotation): the key ids of
// the keyring, the stored rows by the key id they are encrypted under, and the rotation's state;
// starting a rotation to the first key of the keyring. Key ids are public fingerprints, never keys.
import type { FastifyInstance } from 'fastify';
import { isoUtc } from '../../core/clock.ts';
import { type EncryptionStatus, encryptionStatus, startRotation } from '../../core/sweeper/rotation.ts';
import { actorOf } from '../../http/admin-door.ts';
import type { ServerContext } from '../../http/context.ts';

function view(requestId: string, s: EncryptionStatus) {
  return {
    ok: true,
    request_id: requestId,
    current_key_id: s.currentKeyId,
    key_ids: s.keyIds,
    rows_by_key_id: s.rowsByKeyId,
    rotation: s.rotation,
    rows_rewritten: s.rowsRewritten,
    started_at: s.startedAt ? isoUtc(s.startedAt) : null,
    finished_at: s.finishedAt ? isoUtc(s.finishedAt) : null,
  };
}

export function registerAdminEncryptionRoutes(app: FastifyInstance, ctx: ServerContext) {
  app.get('/admin/v1/encryption', async (request) => view(request.id, await encryptionStatus(ctx)));

  // 202: the rows are rewritten in the background (core/sweeper/rotation.ts); GET shows progress.
  app.post('/admin/v1/encryption/rotate', async (request, reply) => {
    const status = await startRotation(ctx, actorOf(request));
    return reply.code(202).send(view(request.id, status));
  });
}
