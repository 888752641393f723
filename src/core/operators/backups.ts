// An online backup of the embedded database (docs/reference/running.md#backups), as an operator's act: one at a time
// (each holds the database's lock while its files are copied, and a copy of it on disk until it
// is sent: src/db/pglite/backup-file.ts), and audited as `backup.create` (docs/reference/operators-and-audit.md#audit-log: the file holds every customer, ledger and
// encrypted secret, so who took one must be known).
//
// The audit row is written right after the copy, not in the copy's transaction: the copy changes
// nothing to commit with it, and a row written before the copy would be in the copy (a restored
// database would show its own backup). A copy that fails writes no row.
import type { Readable } from 'node:stream';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { recordAudit } from './audit.ts';

/** The databases with a backup under way in this process (PGlite has one process). */
const running = new WeakSet<object>();

/**
 * Takes a backup: its size and its bytes as a stream. The next may start once this stream has
 * closed (sent, or the client gone).
 */
export async function takeBackup(
  db: Pick<Database, 'dump' | 'query'>,
  actor: Actor,
  clock: Clock,
): Promise<{ bytes: number; stream: Readable }> {
  if (!db.dump)
    throw new ApiError(
      'bad_request',
      'this server runs on PostgreSQL: back it up with PostgreSQL tools (pg_dump, or base backups with WAL archiving)',
    );
  if (running.has(db))
    throw new ApiError('conflict', 'a backup is being taken already: try again when it has finished');
  running.add(db);
  let backup: { bytes: number; stream: Readable } | undefined;
  try {
    backup = await db.dump();
    await recordAudit(
      db,
      actor,
      { action: 'backup.create', customerId: null, target: null, details: { bytes: backup.bytes } },
      clock,
    );
  } catch (err) {
    backup?.stream.destroy();
    running.delete(db);
    throw err;
  }
  // Taken once its bytes are read to the end (or it is closed unread): the file's removal after
  // that need not hold up the next backup, which sweeps what is left.
  const done = () => running.delete(db);
  backup.stream.once('end', done);
  backup.stream.once('close', done);
  return backup;
}
