// A pooled connection handed on in the same TCP read that ends it, on PostgreSQL only. The server
// process once crashed under the database-loss test with "Unhandled 'error' event": one read from
// the server held both the end of a statement (pg-pool then hands the connection to a waiting
// transaction) and the server's "terminating connection" for it. Nobody listened for that error
// until the transaction's `await pool.connect()` settled, a turn later.
//
// This file puts both in one read on purpose: a TCP proxy between the pool and PostgreSQL holds
// what the server sends, the backend is terminated, and the proxy lets everything through in one
// write. The process must not crash: the statement gets its answer and the transaction is served
// on a fresh connection.
import { createServer, Socket as NetSocket, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { isConnectionError } from '../../src/db/connection-errors.ts';
import { type Database, openPostgres } from '../../src/db/database.ts';
import { onPostgres } from '../helpers/db.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A TCP proxy to PostgreSQL that can hold what the server sends and let it out in one write. */
function holdingProxy(target: { host: string; port: number }) {
  let holding = false;
  const held = new Map<Socket, Buffer[]>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = new NetSocket();
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    upstream.connect(target.port, target.host);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (!holding) return void client.write(chunk);
      held.set(client, [...(held.get(client) ?? []), chunk]);
    });
    // The server's end is passed on only with what was held before it.
    upstream.on('end', () => {
      if (!holding) client.end();
    });
    client.on('close', () => upstream.destroy());
  });
  return {
    async listen(): Promise<number> {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return (server.address() as { port: number }).port;
    },
    hold() {
      holding = true;
    },
    /** Everything held, one write per connection, then the connection's end. */
    release() {
      holding = false;
      for (const [client, chunks] of held) {
        client.write(Buffer.concat(chunks));
        client.end();
      }
      held.clear();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

let proxy: ReturnType<typeof holdingProxy> | undefined;
let db: Database | undefined;
afterAll(async () => {
  await db?.close().catch(() => undefined);
  await proxy?.close();
});

test.runIf(onPostgres)(
  'a connection ended in the same read that frees it for a waiting transaction: no crash, the transaction served on a fresh connection',
  async () => {
    // PostgreSQL itself: through a pooler (DATABASE_DIRECT_URL set) the backend killed would be the
    // pooler's, not this pool's connection.
    const url = new URL((process.env.DATABASE_DIRECT_URL ?? process.env.DATABASE_URL) as string);
    proxy = holdingProxy({ host: url.hostname, port: Number(url.port || 5432) });
    const port = await proxy.listen();
    const viaProxy = new URL(url);
    viaProxy.host = `127.0.0.1:${port}`;
    const errors: unknown[] = [];
    db = await openPostgres(viaProxy.toString(), {
      max: 1,
      poolMode: 'session',
      onConnectionError: (e) => errors.push(e),
    });
    const pid = (await db.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid;
    expect(pid).toBeGreaterThan(0);

    proxy.hold();
    // One pooled statement holds the only connection; a transaction waits for it.
    const statement = db.query<{ n: number }>('select 1 as n');
    const transaction = db.transaction((tx) => tx.query('select 2 as n'));
    await sleep(300); // the statement's answer is held by the proxy
    const killer = new pg.Client({ connectionString: url.toString() });
    await killer.connect();
    try {
      const killed = await killer.query('select pg_terminate_backend($1::int) as ok', [pid]);
      expect(killed.rows[0]?.ok).toBe(true);
    } finally {
      await killer.end();
    }
    await sleep(300); // the server's "terminating connection" is held behind it
    proxy.release();

    expect((await statement).rows).toEqual([{ n: 1 }]);
    // The statement's client goes back to the pool only after the whole read was parsed, so its
    // end is known by then: it is destroyed, not handed on, and the transaction is served on a
    // fresh connection. (When pool.query handed it on in the middle of the read, the transaction
    // got a clear connection error; before connectListening, the process crashed.)
    const answered = await transaction.then(
      (r) => r.rows,
      (err: unknown) => ({ failed: err, connectionError: isConnectionError(err) }),
    );
    expect(answered).toEqual([{ n: 2 }]);
    // The pool is whole again: a new connection serves.
    expect((await db.query<{ n: number }>('select 3 as n')).rows).toEqual([{ n: 3 }]);
  },
);
