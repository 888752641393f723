// How the embedded database runs one statement. PGlite's own query() makes six
// exchanges with its WASM backend per statement (parse, describe the statement, bind, describe
// the portal, execute, sync), each a pass through PostgreSQL's main loop and PGlite's message
// parser, and parses and plans the statement every time. Here a statement is one exchange: the
// extended-protocol messages in one buffer, as the `pg` client sends them to a server. A named
// (hot-path) statement is parsed once per database handle, as `pg` prepares it once per
// connection, and then only bound and run; PostgreSQL keeps its plan. The numbers: bench/history.md,
// "the embedded database's statements, and its own thread" (2026-11-25). This runs on that thread
// (src/db/pglite/worker.ts), and on the bench's own for the SQL alone.
import { PGlite, parse, types as pgliteTypes, type Results } from '@electric-sql/pglite';
// The `pg` client's message writer: PGlite bundles an older copy whose bind of a hot-path
// statement's 27 values took ~33 µs against ~5 µs here.
import { serialize } from 'pg-protocol';
import { parseInt8 } from '../int8.ts';
import type { WireValue } from '../wire-values.ts';
import { pgliteStartParams } from './memory.ts';

const SYNC = serialize.sync();
const DESCRIBE_PORTAL = serialize.describe({ type: 'P' });
const EXECUTE = serialize.execute({});

/** PGlite on `dataDir` (in memory when undefined) as the service opens it: its start parameters, int8 as numbers. */
export function createPglite(dataDir: string | undefined): Promise<PGlite> {
  return PGlite.create(dataDir, {
    parsers: { [pgliteTypes.INT8]: parseInt8 },
    startParams: pgliteStartParams(),
  });
}

export type PgliteRunner = <T>(
  sql: string,
  values: readonly WireValue[],
  name: string | undefined,
  inTransaction: boolean,
) => Promise<Results<T>>;

/**
 * A runner of single statements on `db`. `inTransaction`: the caller holds PGlite's transaction
 * (inside `db.transaction`); otherwise the statement waits for any open transaction to end, as
 * PGlite's query() does, and the files are synced after it.
 */
export function pgliteRunner(db: PGlite): PgliteRunner {
  /** Named statements this handle has parsed, with their text: one name, one text (as `pg`). */
  const parsed = new Map<string, string>();

  const exchange = async <T>(
    sql: string,
    values: readonly WireValue[],
    name: string | undefined,
    sync: boolean,
  ) => {
    const known = name === undefined ? undefined : parsed.get(name);
    if (known !== undefined && known !== sql)
      throw new Error(`the statement name '${name}' was used for a different statement`);
    if (name !== undefined && known === undefined) {
      // On its own, once: a statement that does not parse is not remembered as parsed.
      await db.execProtocolStream(Buffer.concat([serialize.parse({ name, text: sql, types: [] }), SYNC]), {
        syncToFs: false,
      });
      parsed.set(name, sql);
    }
    const head = name === undefined ? [serialize.parse({ text: sql, types: [] })] : [];
    const bind = serialize.bind({
      statement: name ?? '',
      // Bytes arrive from another thread as a plain Uint8Array; pg-protocol sends a Buffer as such.
      values: values.map((v) => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v) : v)),
    });
    const messages = await db.execProtocolStream(
      Buffer.concat([...head, bind, DESCRIBE_PORTAL, EXECUTE, SYNC]),
      {
        syncToFs: sync,
      },
    );
    return parse.parseResults(messages, db.parsers)[0] as Results<T>;
  };

  return (sql, values, name, inTransaction) =>
    inTransaction
      ? db._runExclusiveQuery(() => exchange(sql, values, name, false))
      : db._runExclusiveTransaction(() => db._runExclusiveQuery(() => exchange(sql, values, name, true)));
}
