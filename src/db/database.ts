// The database seam: one small interface, two implementations (PGlite embedded, `pg` server).
// Every query in the project goes through `Queryable`, so it runs inside or outside a transaction.
import { mkdirSync } from 'node:fs';
import { PGlite, types as pgliteTypes } from '@electric-sql/pglite';
import pg from 'pg';

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>>;
}

export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs `fn` in one transaction; commits on return, rolls back on throw. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs parameterless, possibly multi-statement SQL (migrations). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

/** PostgreSQL error codes we branch on (named, never bare strings in the code). */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_SERIALIZATION_FAILURE = '40001';
export const PG_DEADLOCK_DETECTED = '40P01';

const INT8_OID = 20;

/** int8 always becomes a JS number: money is integer micro-dollars, far below 2^53. */
function parseInt8(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`int8 value out of safe range: ${value}`);
  return n;
}

export async function openPglite(dataDir: string | undefined): Promise<Database> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create(dataDir, {
    parsers: { [pgliteTypes.INT8]: parseInt8 },
  });
  // PGlite has a single connection; its own mutex serialises queries and transactions.
  const wrap = (q: { query: PGlite['query'] }): Queryable => ({
    async query<T>(sql: string, params: readonly unknown[] = []) {
      const r = await q.query<T>(sql, params as unknown[]);
      return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
    },
  });
  const base = wrap(db);
  return {
    kind: 'pglite',
    query: base.query,
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    async exec(sql) {
      // One bad statement must not leave the single connection inside a failed transaction.
      try {
        await db.exec(sql);
      } catch (err) {
        await db.exec('ROLLBACK').catch(() => undefined);
        throw err;
      }
    },
    close: () => db.close(),
  };
}

export async function openPostgres(url: string, options: { max?: number } = {}): Promise<Database> {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID
          ? parseInt8
          : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => undefined);
  await pool.query('select 1');
  const query = async <T>(client: pg.Pool | pg.PoolClient, sql: string, params: readonly unknown[] = []) => {
    const r = await client.query(sql, params as unknown[]);
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  };
  return {
    kind: 'postgres',
    query: (sql, params) => query(pool, sql, params),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn({ query: (sql, params) => query(client, sql, params) });
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    async exec(sql) {
      await pool.query(sql);
    },
    close: () => pool.end(),
  };
}

/** Opens PostgreSQL when a URL is given, else the embedded database in `dataDir`. */
export function openDatabase(opts: { databaseUrl?: string | undefined; dataDir?: string | undefined }) {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl) : openPglite(opts.dataDir);
}

export function isPgError(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}
