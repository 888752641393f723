// Which errors mean "the database is away" (refused, lost, timed out, shutting down) rather than
// "this statement is wrong". One list, used by the HTTP error handler (503 unavailable instead of
// 500), by transactions (a broken connection is destroyed, not reused) and by the workers.
// Kept apart from database.ts so the HTTP layer can use it without loading the drivers.

/** The server is going away or refuses connections (restart, failover, pg_terminate_backend). */
export const PG_ADMIN_SHUTDOWN = '57P01';
export const PG_CRASH_SHUTDOWN = '57P02';
export const PG_CANNOT_CONNECT_NOW = '57P03';
export const PG_TOO_MANY_CONNECTIONS = '53300';
/** statement_timeout (57014 query_canceled) and idle_in_transaction_session_timeout (25P03). */
export const PG_QUERY_CANCELED = '57014';
export const PG_IDLE_IN_TRANSACTION_TIMEOUT = '25P03';
/** Class 08: connection exceptions. */
const PG_CONNECTION_EXCEPTION_CLASS = '08';

/** Socket-level failures of a connection to the database. */
const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Messages of `pg` itself for a lost or unobtainable connection (it gives them no code). */
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
  'Connection terminated unexpectedly',
];

/**
 * True when an error means "the database is away" (connection refused or lost, a timeout, the
 * server shutting down) rather than something wrong with the statement: the caller answers
 * 503 unavailable and retries later; everything else stays a bug (500).
 */
export function isConnectionError(err: unknown): boolean {
  for (
    let e = err as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown } | null, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (NETWORK_ERROR_CODES.has(code)) return true;
    if (
      code === PG_ADMIN_SHUTDOWN ||
      code === PG_CRASH_SHUTDOWN ||
      code === PG_CANNOT_CONNECT_NOW ||
      code === PG_TOO_MANY_CONNECTIONS ||
      code === PG_QUERY_CANCELED ||
      code === PG_IDLE_IN_TRANSACTION_TIMEOUT ||
      (code.length === 5 && code.startsWith(PG_CONNECTION_EXCEPTION_CLASS))
    )
      return true;
    if (Array.isArray(e.errors) && e.errors.some((x) => isConnectionError(x))) return true;
    const message = typeof e.message === 'string' ? e.message : '';
    if (CONNECTION_MESSAGES.some((m) => message.includes(m))) return true;
  }
  return false;
}

/**
 * True when a Citus coordinator answered that one of its workers did not (stopped, restarting,
 * unreachable): `08006` with "connection to the remote node …" or "could not establish any
 * connections to the node …". The coordinator itself is fine,
 * so work for the customers on other workers goes on (the claims skip that customer,
 * docs/running/citus.md#a-worker-that-stops).
 */
export function isWorkerUnreachable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return (
    !!e &&
    e.code === '08006' &&
    typeof e.message === 'string' &&
    WORKER_UNREACHABLE.some((start) => (e.message as string).startsWith(start))
  );
}

/** How a Citus coordinator words it (its connection's refusal or loss, or its connection timeout). */
const WORKER_UNREACHABLE = [
  'connection to the remote node ',
  'could not establish any connections to the node ',
];
