// The database seam: one small interface, two implementations (PGlite embedded, `pg` server).
// Every query in the project goes through `Queryable`, so it runs inside or outside a transaction.
import { mkdirSync } from 'node:fs';
import type { Readable } from 'node:stream';
import pg from 'pg';
import { isConnectionError, isWorkerUnreachable } from './connection-errors.ts';
import { parseInt8 } from './int8.ts';
import { type BackupFile, readBackupFile } from './pglite/backup-file.ts';
import { startPgliteThread } from './pglite/thread.ts';
import { type PoolMode, poolModeFromEnv } from './pool-mode.ts';
import { toWire } from './wire-values.ts';

export { isConnectionError };

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  /**
   * `name`: a hot-path statement, prepared once per connection (PostgreSQL's, and PGlite's one)
   * and then only bound and run (no parse and plan per call). One name, one text; never name
   * SQL built at run time.
   */
  query<T = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
    name?: string,
  ): Promise<QueryResult<T>>;
}

export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** What this handle has sent so far: the hot path's cost is counted here (test/hot-path-cost). */
  readonly counters: DatabaseCounters;
  /**
   * Runs `fn` in one transaction; commits on return, rolls back on throw. `unbounded`: without
   * the statement deadlines (migrations, which may build an index or wait for another process).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: { unbounded?: boolean }): Promise<T>;
  /** Runs parameterless, possibly multi-statement SQL (migrations). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
  /** The connection pool now, for metrics. PGlite has one connection and tells only that. */
  poolStats?(): PoolStats;
  /**
   * The embedded database's files as a gzip'd tarball, taken while no transaction is half-done
   * (PGlite only; src/cli/backup.ts), written to a file: its size, and its bytes as a stream that
   * removes the file when it closes (destroy it if it is not read). PostgreSQL is backed up with
   * its own tools.
   */
  dump?(): Promise<{ bytes: number; stream: Readable }>;
}

/**
 * Work sent through one database handle since it opened. A round trip is one message exchange
 * with the server (a statement, BEGIN, COMMIT); a commit is a statement run on its own or a
 * transaction that committed (what PostgreSQL's pg_stat_database.xact_commit counts).
 */
export interface DatabaseCounters {
  statements: number;
  roundTrips: number;
  commits: number;
}

function newCounters(): DatabaseCounters {
  return { statements: 0, roundTrips: 0, commits: 0 };
}

/** The counters' values now, to subtract from a later copy. */
export function countersNow(db: Pick<Database, 'counters'>): DatabaseCounters {
  return { ...db.counters };
}

export interface PoolStats {
  /** Most connections the pool opens. */
  max: number;
  /** Connections open now. */
  total: number;
  /** Open connections not in use (unknown for PGlite). */
  idle?: number;
  /** Queries waiting for a connection (unknown for PGlite). */
  waiting?: number;
}

/** PostgreSQL error codes we branch on (named, never bare strings in the code). */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_SERIALIZATION_FAILURE = '40001';
export const PG_DEADLOCK_DETECTED = '40P01';
const INT8_OID = 20;

/** A statement sent through a transaction's handle after the transaction ended (both databases). */
function closedTransaction(): Error {
  return new Error('the transaction has ended: its handle runs no more statements');
}

export async function openPglite(dataDir: string | undefined): Promise<Database> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  // PGlite runs on a thread of its own (src/db/pglite/worker.ts); it has a single connection,
  // and its own locks there serialise statements and transactions as they arrive.
  const thread = await startPgliteThread(dataDir);
  const counters = newCounters();
  let nextTx = 1;
  const wrap = (tx: number | undefined, open = () => true): Queryable => ({
    async query<T>(sql: string, params: readonly unknown[] = [], name?: string) {
      if (!open()) throw closedTransaction();
      counters.statements++;
      counters.roundTrips++;
      const r = await thread.call<QueryResult<T>>({ op: 'query', sql, values: toWire(params), name, tx });
      if (tx === undefined) counters.commits++;
      return r;
    },
  });
  const base = wrap(undefined);
  return {
    kind: 'pglite',
    counters,
    query: base.query,
    async transaction(fn) {
      counters.roundTrips += 2; // BEGIN and COMMIT (or ROLLBACK)
      const tx = nextTx++;
      await thread.call({ op: 'begin', tx });
      let open = true;
      let result: Awaited<ReturnType<typeof fn>>;
      try {
        result = await fn(wrap(tx, () => open));
      } catch (err) {
        open = false;
        await thread.call({ op: 'end', tx, commit: false }).catch(() => undefined);
        throw err;
      }
      open = false;
      await thread.call({ op: 'end', tx, commit: true });
      counters.commits++;
      return result;
    },
    async exec(sql) {
      counters.roundTrips++;
      await thread.call({ op: 'exec', sql });
    },
    async close() {
      await thread.call({ op: 'close' });
      await thread.stop();
    },
    poolStats: () => ({ max: 1, total: 1 }),
    async dump() {
      const file = await thread.call<BackupFile>({ op: 'dump' });
      return { bytes: file.bytes, stream: readBackupFile(file) };
    },
  };
}

export interface PostgresOptions {
  /** Connections in the pool (DATABASE_POOL_MAX, default 10). */
  max?: number;
  /** Longest wait for a connection, new or from the pool (DATABASE_TIMEOUT_MS, default 5000). */
  connectTimeoutMs?: number;
  /** Server-side limit of one statement (DATABASE_STATEMENT_TIMEOUT_MS, default 5000; 0: none). */
  statementTimeoutMs?: number;
  /** Server-side limit of a transaction left idle (DATABASE_IDLE_TX_TIMEOUT_MS, default 10000; 0: none). */
  idleInTransactionTimeoutMs?: number;
  /** Told about connection errors that nothing else was waiting for (a killed idle connection). */
  onConnectionError?: (err: Error) => void;
  /** The pool's connections' application_name (pg_stat_activity; the wake-up triggers send it). */
  applicationName?: string;
  /**
   * `transaction`: DATABASE_URL is a pooler in transaction mode (PgBouncer), where each
   * transaction may run on another server connection: no named prepared statements, no
   * session settings sent at connect (src/db/pool-mode.ts). Default: DATABASE_POOL_MODE.
   */
  poolMode?: PoolMode;
}

/** The message of a connection problem without the URL's password: for one-line start errors. */
export function describeConnectionError(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown; errors?: unknown[] } | null;
  // A refused connection to "localhost" is an AggregateError of one error per address.
  const first = Array.isArray(e?.errors) && e.errors.length > 0 ? (e.errors[0] as typeof e) : e;
  const code = typeof first?.code === 'string' ? first.code : undefined;
  const message = typeof first?.message === 'string' ? first.message : String(err);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/**
 * The `pg` pool of a PostgreSQL database. Behind a transaction pooler (`pooled`) no session setting
 * is sent at connect: PgBouncer refuses them as startup parameters.
 */
function newPool(url: string, options: PostgresOptions, pooled: boolean): pg.Pool {
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000;
  const idleTxMs = options.idleInTransactionTimeoutMs ?? 10_000;
  return new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    // Also bounds the wait for a free pooled connection: while the database is away a request
    // fails within this instead of queueing forever.
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    ...(statementTimeoutMs > 0
      ? {
          ...(pooled ? {} : { statement_timeout: statementTimeoutMs }),
          // A silent network (no reset, no answer) is noticed by the client a little after the
          // server would have cancelled the statement.
          query_timeout: statementTimeoutMs + 1000,
        }
      : {}),
    ...(idleTxMs > 0 && !pooled ? { idle_in_transaction_session_timeout: idleTxMs } : {}),
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(options.applicationName ? { application_name: options.applicationName } : {}),
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID
          ? parseInt8
          : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
}

export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<Database> {
  const pooled = (options.poolMode ?? poolModeFromEnv()) === 'transaction';
  const onConnectionError = options.onConnectionError ?? (() => undefined);
  const pool = newPool(url, options, pooled);
  // An idle client that errors (server restart, pg_terminate_backend) must not crash the process;
  // the pool drops it and opens a new one when needed.
  pool.on('error', (err) => onConnectionError(hideClient(err)));
  await pool.query('select 1').catch(async (err: unknown) => {
    await pool.end().catch(() => undefined);
    throw err;
  });
  const counters = newCounters();
  const query = async <T>(
    client: pg.Pool | pg.PoolClient,
    sql: string,
    params: readonly unknown[] = [],
    unbounded = false,
    name?: string,
    autocommit = false,
  ) => {
    counters.statements++;
    counters.roundTrips++;
    try {
      const r = await client.query({
        text: sql,
        values: params as unknown[],
        ...(name && !pooled ? { name } : {}),
        // The longest timer Node keeps: in effect no client-side deadline.
        ...(unbounded ? { query_timeout: 2_147_483_647 } : {}),
      });
      if (autocommit) counters.commits++;
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    } catch (err) {
      throw hideClient(err);
    }
  };
  return {
    kind: 'postgres',
    counters,
    // On a client of its own rather than pool.query, which destroys the client on any error: a
    // Citus worker that did not answer leaves the coordinator's connection as good as it was, and
    // opening a new one for each such error starved the pool for every other customer.
    async query(sql, params, name) {
      let broken: Error | undefined;
      const onError = (err: Error) => {
        broken ??= err;
      };
      const client = await connectListening(pool, onError).catch((err: unknown) => {
        throw hideClient(err);
      });
      try {
        return await query(client, sql, params, false, name, true);
      } catch (err) {
        // As pool.query did, the client goes on any other error (a plan a migration changed, a
        // timeout): the next statement gets a fresh connection.
        if (!isWorkerUnreachable(err)) broken ??= err as Error;
        throw err;
      } finally {
        client.removeListener('error', onError);
        client.release(broken ?? false);
      }
    },
    async transaction(fn, opts = {}) {
      const unbounded = opts.unbounded === true;
      // A held client whose connection dies emits 'error' with nobody listening: that event
      // crashed the process. The statement in flight fails on its own; this only records that
      // the connection is gone, so it is destroyed instead of going back to the pool.
      let broken: Error | undefined;
      let open = true;
      const onError = (err: Error) => {
        broken ??= err;
        onConnectionError(err);
      };
      const client = await connectListening(pool, onError).catch((err: unknown) => {
        throw hideClient(err);
      });
      try {
        counters.roundTrips++;
        await client.query('BEGIN');
        if (unbounded) {
          counters.roundTrips++;
          await client.query('set local statement_timeout = 0');
        }
        const result = await fn({
          query: (sql, params, name) =>
            open ? query(client, sql, params, unbounded, name) : Promise.reject(closedTransaction()),
        });
        counters.roundTrips++;
        await client.query('COMMIT');
        counters.commits++;
        return result;
      } catch (err) {
        // Any connection error, a Citus worker's included, ends the client: a coordinator whose
        // remote connection failed mid-transaction may not answer a ROLLBACK (seen on Citus with
        // the backends terminated again and again: requests hung behind such a client).
        if (!broken && !isConnectionError(err)) {
          counters.roundTrips++;
          await client.query('ROLLBACK').catch(() => undefined);
        } else broken ??= err as Error;
        throw err;
      } finally {
        open = false;
        client.removeListener('error', onError);
        client.release(broken ?? false);
      }
    },
    async exec(sql) {
      counters.roundTrips++;
      await pool.query(sql);
    },
    close: () => pool.end(),
    poolStats: () => ({
      max: pool.options.max ?? 10,
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    }),
  };
}

/**
 * Takes a pooled client with `onError` already listening. pg-pool stops listening for a client's
 * errors the moment it hands it out; awaiting `pool.connect()` would leave a gap until the promise
 * settles, and one TCP read can hold both the previous statement's end (which hands the client on)
 * and the server's "terminating connection" (emitted at once): with nobody listening, that
 * crashed the process. The callback form runs in the same turn as the hand-over.
 */
function connectListening(pool: pg.Pool, onError: (err: Error) => void): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((err, client) => {
      if (err || !client) return reject(err ?? new Error('no client'));
      client.on('error', onError);
      resolve(client);
    });
  });
}

/** The same database with transactions free of the statement deadlines (for migrations). */
export function withoutDeadlines(db: Database): Database {
  return { ...db, transaction: (fn) => db.transaction(fn, { unbounded: true }) };
}

/**
 * pg-pool attaches the failed client to an idle connection's error; logged, it would print the
 * connection parameters (a password among them). Kept, but out of serialisation.
 */
function hideClient<E>(err: E): E {
  if (err && typeof err === 'object' && Object.hasOwn(err, 'client'))
    Object.defineProperty(err, 'client', { enumerable: false });
  return err;
}

/** Opens PostgreSQL when a URL is given, else the embedded database in `dataDir`. */
export function openDatabase(opts: {
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
  postgres?: PostgresOptions;
}) {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl, opts.postgres) : openPglite(opts.dataDir);
}

export function isPgError(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}
