// An online backup of the embedded database (contract 13.10), as an operator's act: one at a time
// (each holds a copy of the whole database in memory and the database's lock while its files
// are read), and audited as `backup.create` (13.2: the file holds every customer, ledger and
// encrypted secret, so who took one must be known).
//
// The audit row is written right after the copy, not in the copy's transaction: the copy changes
// nothing to commit with it, and a row written before the copy would be in the copy (a restored
// database would show its own backup). A copy that fails writes no row.
import type { Database } from '../../db/database.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { recordAudit } from './audit.ts';

/** The databases with a backup under way in this process (PGlite has one process). */
const running = new WeakSet<object>();

export async function takeBackup(
  db: Pick<Database, 'dump' | 'query'>,
  actor: Actor,
  clock: Clock,
): Promise<Buffer> {
  if (!db.dump)
    throw new ApiError(
      'bad_request',
      'this server runs on PostgreSQL: back it up with PostgreSQL tools (pg_dump, or base backups with WAL archiving)',
    );
  if (running.has(db))
    throw new ApiError('conflict', 'a backup is being taken already: try again when it has finished');
  running.add(db);
  try {
    const tarball = Buffer.from(await (await db.dump()).arrayBuffer());
    await recordAudit(
      db,
      actor,
      { action: 'backup.create', customerId: null, target: null, details: { bytes: tarball.length } },
      clock,
    );
    return tarball;
  } finally {
    running.delete(db);
  }
}
