// The ceiling of the redeem goal's gateway side: the least an HTTP front can do for a
// sync one-code redeem, run as its own process like the gateway. Each POST runs the very two
// statements pgbench runs for the SQL alone (bench_start, then bench_finish: the gateway's
// redeem_start and redeem_record_outcome, each its own commit), prepared, on a pool of
// QUERY_POOL_MAX connections (the gateway's default, 10), and answers a small JSON body. No key
// check, validation, hashing, encryption, logging or metrics. Its rate against the SQL alone under
// pgbench is the highest ratio any gateway written in Node could reach for a redeem on this
// machine; the gateway's rate against it is what the gateway's own work costs.
// QUERY_DATABASE_URL: a database made like the SQL alone's (bench/pgbench.ts). Prints
// "listening <port>".
import Fastify from 'fastify';
import pg from 'pg';
import { serveChild } from './serve-child.ts';

const url = process.env['QUERY_DATABASE_URL'];
if (!url) throw new Error('QUERY_DATABASE_URL is required');
const pool = new pg.Pool({ connectionString: url, max: Number(process.env['QUERY_POOL_MAX'] ?? 10) });
const customers = 200;
// A number no other run used: pgbench draws its requests' numbers from 1 to 1e12.
let sequence = 2e12 + Date.now() * 1000;

const app = Fastify({ logger: false });
app.post('/v1/redeem', async (request, reply) => {
  const body = request.body as { player_id?: unknown; codes?: unknown };
  if (typeof body.player_id !== 'string' || !Array.isArray(body.codes)) throw new Error('bad body');
  const c = 1 + Math.floor(Math.random() * customers);
  const n = sequence++;
  await pool.query({ name: 'bench_start', text: 'select bench_start($1, $2)', values: [c, n] });
  const r = await pool.query({ name: 'bench_finish', text: 'select bench_finish($1, $2)', values: [c, n] });
  // A redeem that did not end as a sync job finished with its code activated did less than the
  // gateway's: the bench counts it as a failure.
  const result = r.rows[0].bench_finish as { finished?: number };
  if (result.finished !== 200) return reply.code(500).send({ ok: false, result });
  return { ok: true, result };
});
await serveChild(app, () => pool.end());
