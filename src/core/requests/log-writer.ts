// The request log's writer: refused and failed answers are recorded off the request path.
// `record` only pushes to a bounded buffer (never a statement, never a throw); a background loop
// writes what the buffer holds every `flushMs`, in batches of at most `batchRows` rows (one
// multi-row insert, one transaction each). The buffer's bound is also the writes' rate: at most
// `maxBuffered` rows per `flushMs` (1,000 a second by default), so a flood of refusals costs the
// database, and on PGlite its one connection, a bounded amount of work whatever its rate (measured:
// bench/request-log.ts). Each subject (a customer, or the unidentified callers together) may hold
// `subjectShare` rows of the buffer, and more only while the buffer is less than half full, so one
// subject's flood cannot crowd another's rows out: the flood is sampled (its first rows of each
// pass are kept) and the rest counted.
// What cannot be kept is counted, never waited for:
//   - the subject's share of the buffer used (`sampled`), or the whole buffer full (`buffer_full`);
//   - the subject's cap reached, as this process counted it: dropped before the buffer, so a
//     flood past its cap costs no statement at all (the database's count holds across processes);
//   - a row the database refused (`write_failed`): a batch that fails is written again row by row,
//     so only the row that cannot be written is lost; when the database is away the batch is
//     dropped with one log line (a refusal log is not worth a retry queue that would grow while
//     the database is away).
import type { Logger } from 'pino';
import { isConnectionError } from '../../db/connection-errors.ts';
import type { Database } from '../../db/database.ts';
import { startBackgroundLoop } from '../background-loop.ts';
import {
  capOf,
  completeEntry,
  type RequestLogCaps,
  type RequestLogEntry,
  subjectOf,
  utcDay,
  writeRequestLogBatch,
} from './request-log.ts';

/** Why rows were not written. */
export type RequestLogDrop = 'buffer_full' | 'sampled' | 'cap' | 'write_failed';

export interface RequestLogCounters {
  written(n: number): void;
  dropped(reason: RequestLogDrop, n: number): void;
}

export interface RequestLogWriterOptions {
  db: Database;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  caps: RequestLogCaps;
  /** Longest wait before a row is written (default 1000 ms). */
  flushMs?: number;
  /** Rows per batch (one multi-row insert; default 200). */
  batchRows?: number;
  /**
   * Rows the buffer holds at most, so rows written per `flushMs` at most (default 1,000); beyond
   * it rows are dropped and counted.
   */
  maxBuffered?: number;
  /** Rows one subject may hold in the buffer at most (default a tenth of `maxBuffered`). */
  subjectShare?: number;
  counters?: RequestLogCounters;
}

export interface RequestLogWriter {
  /** Takes one row; costs no statement and never throws. */
  record(entry: RequestLogEntry): void;
  /** Writes everything buffered now (tests, a stop). */
  flush(): Promise<void>;
  /** Stops the loop and writes what is buffered. */
  stop(): Promise<void>;
  /** Rows waiting in the buffer. */
  buffered(): number;
}

export function startRequestLogWriter(opts: RequestLogWriterOptions): RequestLogWriter {
  const batchRows = opts.batchRows ?? 200;
  const maxBuffered = opts.maxBuffered ?? 1_000;
  const subjectShare = opts.subjectShare ?? Math.max(1, Math.floor(maxBuffered / 10));
  let buffer: RequestLogEntry[] = [];
  // Rows each subject holds in the buffer now.
  let held = new Map<string, number>();
  // Rows this process took per subject on `day`: a subject past its cap is dropped here.
  let day = '';
  const takenToday = new Map<string, number>();
  let writing: Promise<void> = Promise.resolve();

  const writeRows = async (rows: RequestLogEntry[]) => {
    const r = await opts.db.transaction((tx) => writeRequestLogBatch(tx, rows, opts.caps));
    opts.counters?.written(r.written);
    if (r.capped > 0) opts.counters?.dropped('cap', r.capped);
  };
  const writeBatch = async (batch: RequestLogEntry[]) => {
    try {
      await writeRows(batch);
    } catch (err) {
      if (isConnectionError(err) || batch.length === 1) {
        opts.counters?.dropped('write_failed', batch.length);
        opts.logger.warn({ err, rows: batch.length }, 'request log batch dropped: its write failed');
        return;
      }
      // One bad row fails the whole insert: each row again on its own, so only it is lost.
      let failed = 0;
      let firstError: unknown;
      for (const row of batch) {
        try {
          await writeRows([row]);
        } catch (e) {
          failed += 1;
          firstError ??= e;
        }
      }
      if (failed > 0) {
        opts.counters?.dropped('write_failed', failed);
        opts.logger.warn(
          { err: firstError, rows: failed, batch: batch.length },
          'request log rows dropped: the database refused them',
        );
      }
    }
  };
  // Writes what the buffer holds now (rows that come meanwhile wait for the next pass), one
  // batch after another; one pass at a time, whether the loop or a flush asked for it.
  const writeBuffered = async () => {
    const taken = buffer;
    buffer = [];
    held = new Map();
    for (let i = 0; i < taken.length; i += batchRows) await writeBatch(taken.slice(i, i + batchRows));
  };
  const serialised = () => {
    const next = writing.then(writeBuffered);
    writing = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  };

  const loop = startBackgroundLoop({
    name: 'request log',
    intervalMs: opts.flushMs ?? 1000,
    pass: serialised,
    logger: opts.logger,
  });

  return {
    record(raw) {
      const entry = completeEntry(raw);
      const d = utcDay(entry.at);
      if (d !== day) {
        day = d;
        takenToday.clear();
      }
      const subject = subjectOf(entry.customerId, entry.at);
      const taken = takenToday.get(subject) ?? 0;
      if (taken >= capOf(opts.caps, subject)) {
        opts.counters?.dropped('cap', 1);
        return;
      }
      if (buffer.length >= maxBuffered) {
        opts.counters?.dropped('buffer_full', 1);
        return;
      }
      // Past its share, a subject may still use the buffer's first half: a lone burst is kept
      // whole, while the second half stays for the subjects under their share.
      const holds = held.get(subject) ?? 0;
      if (holds >= subjectShare && buffer.length >= maxBuffered / 2) {
        opts.counters?.dropped('sampled', 1);
        return;
      }
      takenToday.set(subject, taken + 1);
      held.set(subject, holds + 1);
      buffer.push(entry);
    },
    async flush() {
      while (buffer.length > 0) await serialised();
      await writing;
    },
    async stop() {
      await loop.stop();
      while (buffer.length > 0) await serialised();
      await writing;
    },
    buffered: () => buffer.length,
  };
}
