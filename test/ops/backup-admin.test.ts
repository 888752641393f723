// GET /admin/v1/backup as an admin change (docs/reference/operators-and-audit.md#operators-and-roles, docs/reference/operators-and-audit.md#audit-log, docs/reference/running.md#backups): role `admin` only
// (a viewer gets 403 and nothing is taken), one backup at a time (a second one meanwhile → 409
// conflict), and each backup taken is audited as `backup.create` by its operator.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../helpers/app.ts';
import { onPostgres } from '../helpers/db.ts';
import { addOperator, auditCount, send } from '../helpers/operators.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
});
afterAll(() => t.close());

describe('GET /admin/v1/backup', () => {
  test('a viewer is refused with 403 forbidden, and no backup is audited', async () => {
    const { token: viewer } = await addOperator(t.admin, 'backup-viewer', 'viewer');
    const before = await auditCount(t);
    const res = await send(t.admin, viewer, 'GET', '/admin/v1/backup');
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 403,
      body: {
        ok: false,
        error_code: 'forbidden',
        message: 'the operator backup-viewer is a viewer and may not take a backup',
        request_id: res.headers['x-request-id'],
      },
    });
    expect(await auditCount(t)).toBe(before);
  });

  test.skipIf(onPostgres)(
    'an admin takes one, audited as backup.create; a second meanwhile is 409',
    async () => {
      const [first, second] = await Promise.all([
        send(t.admin, ADMIN_TOKEN, 'GET', '/admin/v1/backup'),
        new Promise((r) => setTimeout(r, 5)).then(() =>
          send(t.admin, ADMIN_TOKEN, 'GET', '/admin/v1/backup'),
        ),
      ]);
      expect(first.statusCode).toBe(200);
      expect(first.headers['content-type']).toBe('application/gzip');
      expect(first.rawPayload.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
      expect({ status: second.statusCode, body: second.json() }).toEqual({
        status: 409,
        body: {
          ok: false,
          error_code: 'conflict',
          message: 'a backup is being taken already: try again when it has finished',
          request_id: second.headers['x-request-id'],
        },
      });
      const audit = await t.ctx.db.query<Record<string, unknown>>(
        `select actor, action, customer_id as "customerId", target, request_id as "requestId", details
         from audit_events where action = 'backup.create'`,
      );
      expect(audit.rows).toEqual([
        {
          actor: 'root',
          action: 'backup.create',
          customerId: null,
          target: null,
          requestId: first.headers['x-request-id'],
          details: { bytes: first.rawPayload.length },
        },
      ]);
      // Finished: the next one is taken.
      expect((await send(t.admin, ADMIN_TOKEN, 'GET', '/admin/v1/backup')).statusCode).toBe(200);
    },
  );
});
