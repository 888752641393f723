// The embedded database's own thread. PGlite is PostgreSQL compiled to WebAssembly and
// runs wherever it is called: on the serving thread, every statement's time was time that
// thread could not parse HTTP, hash codes or write answers, and a redeem's statements are most
// of its cost. Here it runs on a worker thread of the same process, so the two overlap on two
// cores. src/db/pglite/thread.ts is the other end; the messages are typed there.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parentPort, workerData } from 'node:worker_threads';
import { gzip } from 'node:zlib';
import { backupFileOf, copyDataDir, writeBackupFile } from './backup-file.ts';
import { releaseBackupMemory, releaseSeedMemory } from './memory.ts';
import { createPglite, pgliteRunner } from './statements.ts';
import type { PgliteReply, PgliteRequest, PgliteWorkerData } from './thread.ts';

const port = parentPort!;
const gzipAsync = promisify(gzip);
const { dataDir } = workerData as PgliteWorkerData;

/** Thrown inside a transaction's callback to make PGlite roll it back. */
const ROLLBACK = Symbol('rollback');

async function main(): Promise<void> {
  // Only a data directory made now (the serving process's first start); not an in-memory one.
  const seeding = dataDir !== undefined && !existsSync(join(dataDir, 'PG_VERSION'));
  const db = await createPglite(dataDir);
  if (seeding) await releaseSeedMemory();
  const run = pgliteRunner(db);
  /** Open transactions: `end` settles the callback PGlite holds its transaction lock for. */
  const open = new Map<number, { end: (commit: boolean) => void; done: Promise<unknown> }>();

  const handle = async (req: PgliteRequest): Promise<unknown> => {
    switch (req.op) {
      case 'query': {
        const r = await run(req.sql, req.values, req.name, req.tx !== undefined);
        return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
      }
      case 'begin': {
        let started!: () => void;
        const inside = new Promise<void>((resolve) => (started = resolve));
        let end!: (commit: boolean) => void;
        const decided = new Promise<boolean>((resolve) => (end = resolve));
        const done = db.transaction(async () => {
          started();
          if (!(await decided)) throw ROLLBACK;
        });
        open.set(req.tx, { end, done });
        try {
          // BEGIN failed (the database closed): the transaction never started.
          await Promise.race([inside, done]);
        } catch (err) {
          open.delete(req.tx);
          throw err;
        }
        return null;
      }
      case 'end': {
        const t = open.get(req.tx);
        if (!t) throw new Error(`no open transaction ${req.tx}`);
        open.delete(req.tx);
        t.end(req.commit);
        try {
          await t.done;
        } catch (err) {
          if (err !== ROLLBACK) throw err;
        }
        return null;
      }
      case 'exec':
        // One bad statement must not leave the single connection inside a failed transaction.
        try {
          await db.exec(req.sql);
        } catch (err) {
          await db.exec('ROLLBACK').catch(() => undefined);
          throw err;
        }
        return null;
      case 'dump': {
        // A checkpoint first, so a restore replays little WAL; then the files, inside a
        // transaction of our own: PGlite runs every statement and transaction under that lock.
        // The files are copied under the lock; archiving and compressing them (two thirds of the
        // time: a /v1/me once waited 1.7 s behind a backup) happens after the lock is released,
        // while the database serves again. On disk (backup-file.ts), a chunk at a time: the
        // answer is a file's name, not the backup.
        await db.query('checkpoint');
        if (dataDir !== undefined) {
          const dir = await db.transaction(() => copyDataDir(dataDir));
          return writeBackupFile(dir);
        }
        // An in-memory database (tests) has no directory to copy: PGlite's own dump, in memory.
        const blob = await db.transaction(() => db.dumpDataDir('none'));
        return backupFileOf(await gzipAsync(new Uint8Array(await blob.arrayBuffer())));
      }
      case 'close':
        await db.close();
        return null;
    }
  };

  port.on('message', (req: PgliteRequest) => {
    handle(req).then(
      (value) => {
        const reply: PgliteReply = { id: req.id, ok: true, value };
        try {
          port.postMessage(reply, value instanceof Uint8Array ? [value.buffer as ArrayBuffer] : []);
        } catch (err) {
          // A value that cannot cross threads fails its statement, not the thread.
          port.postMessage({ id: req.id, ok: false, error: plainError(err) } satisfies PgliteReply);
        }
        if (req.op === 'dump') void releaseBackupMemory();
      },
      (err: unknown) =>
        port.postMessage({ id: req.id, ok: false, error: plainError(err) } satisfies PgliteReply),
    );
  });
  port.postMessage({ id: 0, ok: true, value: 'ready' } satisfies PgliteReply);
}

/** An error as data that crosses threads with its fields (a database error's code, constraint). */
function plainError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err) };
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err)) if (v === undefined || typeof v !== 'object') fields[k] = v;
  return { ...fields, name: err.name, message: err.message };
}

main().catch((err: unknown) =>
  port.postMessage({ id: 0, ok: false, error: plainError(err) } satisfies PgliteReply),
);
