// The database baselines: Fastify answering each request with one database query,
// run as its own process like the gateway. QUERY_DATABASE_URL set: one named (prepared) `pg`
// query on a pool of QUERY_POOL_MAX connections (the gateway's default pool, 10); unset: one
// named query on an embedded in-memory PGlite, through the gateway's own database seam (its
// statements are one exchange with PGlite each, src/db/pglite/statements.ts). Prints
// "listening <port>".
import Fastify from 'fastify';
import pg from 'pg';
import { openPglite } from '../src/db/database.ts';
import { serveChild } from './serve-child.ts';

const url = process.env['QUERY_DATABASE_URL'];
// A row read by primary key, like the gateway's key and account reads.
const SETUP = `create temporary table if not exists bench_one (id int primary key, n int not null);
  insert into bench_one values (1, 42) on conflict do nothing`;
const QUERY = 'select n from bench_one where id = $1';

let run: () => Promise<unknown>;
let close: () => Promise<void>;
if (url) {
  const pool = new pg.Pool({ connectionString: url, max: Number(process.env['QUERY_POOL_MAX'] ?? 10) });
  // A real table, not temporary: every pooled connection reads it.
  await pool.query('create table if not exists bench_one (id int primary key, n int not null)');
  await pool.query('insert into bench_one values (1, 42) on conflict do nothing');
  run = () => pool.query({ name: 'bench_one', text: QUERY, values: [1] });
  close = () => pool.end();
} else {
  const db = await openPglite(undefined);
  await db.exec(SETUP);
  run = () => db.query(QUERY, [1], 'bench_one');
  close = () => db.close();
}

const app = Fastify({ logger: false });
app.get('/', async () => ({ rows: ((await run()) as { rows: unknown[] }).rows }));
await serveChild(app, close);
