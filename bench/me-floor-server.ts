// The ceiling of the GET /v1/me goal: the least a /v1/me can do, run as its own process
// like the gateway. The same work the rules ask of the answer: the key's SHA-256 digest looked
// up in an in-process map (one query on a miss, like the gateway's key cache), the gateway's own
// statement (`loadKeyAccountState`, prepared), the read counted in the key's read budget of
// docs/reference/limits.md#read-budget in memory (as every /v1/me must, core/limits/read-budget.ts), the same headers and the same body built by the
// gateway's own functions. What it leaves out is everything around that work: the gateway's
// hooks, request logger, metrics, graceful-stop accounting, error handling, revocation, expiry and
// scope checks. Its rate against "Fastify + one prepared pg query" is the highest ratio any
// gateway could reach for /me on this machine; the gateway's rate against it is what its own
// framework costs. QUERY_DATABASE_URL: a gateway database with keys (the bench's fixtures).
// Prints "listening <port>".
import Fastify from 'fastify';
import pg from 'pg';
import { loadKeyAccountState, meView, today } from '../src/core/accounts/accounts.ts';
import { systemClock } from '../src/core/clock.ts';
import { sha256Hex } from '../src/core/hash.ts';
import { newRequestId } from '../src/core/ids.ts';
import { createReadBudget } from '../src/core/limits/read-budget.ts';
import type { Queryable } from '../src/db/database.ts';
import { EVERY_RESPONSE_HEADERS, setAccountHeaders } from '../src/http/headers.ts';
import { serveChild } from './serve-child.ts';

const url = process.env['QUERY_DATABASE_URL'];
if (!url) throw new Error('QUERY_DATABASE_URL is required');
const INT8_OID = 20;
const pool = new pg.Pool({
  connectionString: url,
  max: Number(process.env['QUERY_POOL_MAX'] ?? 10),
  // Money columns are int8, read as numbers as the gateway's database seam does.
  types: {
    getTypeParser: ((oid: number, format?: string) =>
      oid === INT8_OID
        ? Number
        : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
  },
});
const db: Queryable = {
  query: async (text, values, name) => {
    const r = await pool.query({ text, values: values as unknown[], ...(name ? { name } : {}) });
    return { rows: r.rows, rowCount: r.rowCount ?? 0 };
  },
};

interface Facts {
  id: string;
  customerId: number;
  mode: string;
  keyPrefix: string;
  scopes: string[];
}
const keys = new Map<string, Facts>();
async function keyFacts(token: string): Promise<Facts | undefined> {
  const digest = sha256Hex(token);
  const cached = keys.get(digest);
  if (cached) return cached;
  const r = await db.query<Facts>(
    `select id, customer_id as "customerId", mode, key_prefix as "keyPrefix", scopes
       from api_keys where key_sha256 = $1`,
    [digest],
  );
  const found = r.rows[0];
  if (found) keys.set(digest, found);
  return found;
}

// The read budget of docs/reference/limits.md#read-budget at its default (300 per key per sliding 10 s), counted in
// memory as the gateway counts it (core/limits/read-budget.ts), exact: this one process.
const READ_RULE = { bucket: 'read', what: 'reads for this key', limit: 300, windowMs: 10_000 };
const budget = createReadBudget(db, READ_RULE, { shared: false });

const app = Fastify({ logger: false, genReqId: newRequestId });
app.get('/v1/me', async (request, reply) => {
  const header = request.headers.authorization ?? '';
  const key = header.startsWith('Bearer ') ? await keyFacts(header.slice(7)) : undefined;
  const slot = key && budget.take(key.id, Date.now());
  if (slot && !(slot instanceof Promise) && !slot.allowed)
    return reply.code(429).send({ ok: false, error_code: 'rate_limited' });
  const found = key && (await loadKeyAccountState(db, key, today(systemClock)));
  if (!key || !found) return reply.code(401).send({ ok: false, error_code: 'unauthorized' });
  reply
    .header('X-Request-Id', request.id)
    .header('Cache-Control', 'no-store')
    .headers(EVERY_RESPONSE_HEADERS);
  setAccountHeaders(reply, found.state);
  return meView(request.id, key, found.state, systemClock.now());
});
await serveChild(app, () => pool.end());
