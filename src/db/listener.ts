// Wake-ups across processes on PostgreSQL (LISTEN/NOTIFY): one dedicated connection per process
// (not from the pool: a pooled connection is handed to other work between queries, and its
// LISTEN would go with it) listens on a few channels; the database notifies them itself, from
// triggers (src/db/functions/wake.sql), when an async job is queued or a webhook event is written,
// whichever process wrote it. A notification only cuts a worker's sleep short: the workers still
// poll, so a lost notification (this connection down, a restart) delays work by one poll at most.
//
// The connection is reconnected after any loss (server restart, pg_terminate_backend, network)
// with a capped backoff; each (re)connect wakes every handler once, for what was missed meanwhile.
// It never throws into the process. A notification carries the application_name of the
// connection whose commit sent it; a process ignores its own (it wakes its workers itself).
import pg from 'pg';
import type { Logger } from 'pino';
import { describeConnectionError } from './database.ts';

export interface Listener {
  /** Stops listening and closes the connection. */
  stop(): Promise<void>;
}

/** The application_name of the listening connection (pg_stat_activity shows it). */
export const LISTENER_APPLICATION_NAME = 'redeem-gateway listener';

/** The application_name of a process's pooled connections: its notifications are signed so. */
export const processApplicationName = (instanceId: string) => `redeem-gateway ${instanceId}`;

export function startListener(opts: {
  url: string;
  /** Channel → what to do when it is notified. */
  channels: Record<string, () => void>;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Longest wait between reconnect attempts (default 30000 ms); the first waits 250 ms. */
  maxBackoffMs?: number;
  /** Time allowed to connect (default 5000 ms). */
  connectTimeoutMs?: number;
  /** Notifications whose payload is this (this process's own writes) are ignored. */
  ignoreFrom?: string;
}): Listener {
  const maxBackoffMs = opts.maxBackoffMs ?? 30_000;
  const channels = Object.keys(opts.channels);
  let stopped = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;
  let failures = 0;

  const wakeAll = () => {
    for (const wake of Object.values(opts.channels)) wake();
  };

  const scheduleReconnect = (err: unknown) => {
    if (stopped || retry) return;
    const delay = Math.min(maxBackoffMs, 250 * 2 ** failures);
    // One line per outage, not one per attempt.
    if (failures === 0)
      opts.logger.warn(
        { err: describeConnectionError(err), retryInMs: delay },
        'wake-up listener lost its connection; workers poll until it is back',
      );
    failures += 1;
    retry = setTimeout(() => {
      retry = null;
      void connect();
    }, delay);
    retry.unref();
  };

  const connect = async () => {
    if (stopped) return;
    const c = new pg.Client({
      connectionString: opts.url,
      application_name: LISTENER_APPLICATION_NAME,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
      keepAlive: true,
    });
    client = c;
    let lost = false;
    const onLost = (err: unknown) => {
      if (lost) return;
      lost = true;
      if (client === c) client = null;
      c.end().catch(() => undefined);
      scheduleReconnect(err);
    };
    c.on('error', onLost);
    c.on('end', () => onLost(new Error('connection ended')));
    c.on('notification', (n) => {
      if (opts.ignoreFrom !== undefined && n.payload === opts.ignoreFrom) return;
      opts.channels[n.channel]?.();
    });
    try {
      await c.connect();
      for (const channel of channels) await c.query(`listen ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      onLost(err);
      return;
    }
    if (stopped) {
      await c.end().catch(() => undefined);
      return;
    }
    if (failures > 0) opts.logger.info({ after: failures }, 'wake-up listener reconnected');
    failures = 0;
    // Anything notified while we were away was not heard: look now.
    wakeAll();
  };

  void connect();
  return {
    async stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = null;
      if (c) {
        c.removeAllListeners('end');
        await c.end().catch(() => undefined);
      }
    },
  };
}
