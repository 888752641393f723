// On a Citus coordinator only (skipped elsewhere with the reason): the statements of a merchant's
// reads that join several customer tables are planned on the customer's worker alone, at a
// prepared statement's first run and at its seventh (PostgreSQL may switch to a generic plan after
// five; docs/running/citus.md#one-worker-per-statement). A statement planned on every shard still
// answers, but slower, and fails for every customer while any one worker is down: GET /v1/me
// and GET /v1/jobs/{id} did, until their subqueries named the customer's parameter, and so did a
// job's lease heartbeat, by the job's id alone.
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { loadKeyAccountState } from '../../src/core/accounts/accounts.ts';
import { systemClock } from '../../src/core/clock.ts';
import type { RedeemDeps } from '../../src/core/context.ts';
import { loadJobCodesJson, loadKeyJob } from '../../src/core/jobs/jobs.ts';
import { extendLease } from '../../src/core/jobs/states.ts';
import { recordOutcome } from '../../src/core/redeem/outcome.ts';
import type { Queryable } from '../../src/db/database.ts';

const workers = inject('citusWorkers');
let client: pg.Client | undefined;
beforeAll(async () => {
  if (workers.length === 0) return;
  client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
});

/** The one statement `run` sends, with its parameters (nothing is executed). */
async function statementOf(
  run: (q: Queryable) => Promise<unknown>,
): Promise<{ sql: string; params: unknown[] }> {
  const sent: { sql: string; params: unknown[] }[] = [];
  const q = {
    query: async (sql: string, params: unknown[] = []) => {
      sent.push({ sql, params });
      return { rows: [], rowCount: 0 };
    },
  } as unknown as Queryable;
  await run(q);
  expect(sent).toHaveLength(1);
  return sent[0]!;
}

/**
 * Citus's task count for the statement as a prepared statement: its first run (a custom plan, the
 * parameters known) and its seventh (PostgreSQL may have switched to a generic plan by then), as
 * the service's named statements run.
 */
async function taskCounts(c: pg.Client, s: { sql: string; params: unknown[] }) {
  await c.query('deallocate all');
  await c.query(`prepare routed as ${s.sql}`);
  const args = s.params
    .map((v) => (v === null ? 'null' : c.escapeLiteral(v instanceof Date ? v.toISOString() : String(v))))
    .join(', ');
  const tasks = async () => {
    const plan = await c.query<{ 'QUERY PLAN': string }>(`explain execute routed(${args})`);
    const line = plan.rows.map((r) => r['QUERY PLAN']).find((l) => /Task Count:/.test(l)) ?? '';
    return Number(/Task Count: (\d+)/.exec(line)?.[1] ?? Number.NaN);
  };
  const first = await tasks();
  for (let i = 0; i < 6; i++) await c.query(`execute routed(${args})`);
  return { first, seventh: await tasks() };
}

const key = { id: 'key_routing_test', customerId: 7 };
const statements: [string, (q: Queryable) => Promise<unknown>][] = [
  ['GET /v1/me (key_account_state)', (q) => loadKeyAccountState(q, key, '2026-11-29')],
  ['GET /v1/jobs/{id} (key_job)', (q) => loadKeyJob(q, key, 'job_routing_test', '2026-11-29')],
  ['GET /v1/jobs/{id} of no job (key_job)', (q) => loadKeyJob(q, key, null, '2026-11-29')],
  ["a claimed job's codes (job_codes_json)", (q) => loadJobCodesJson(q, 7, 'job_routing_test')],
  [
    "a running job's lease heartbeat (job_lease_extend)",
    (q) =>
      extendLease(
        { db: q, clock: systemClock } as unknown as RedeemDeps,
        { id: 'job_routing_test', customerId: 7 },
        {
          until: 0,
        },
      ),
  ],
];

// The two statements of a sync redeem, each a call of a distributed function (src/db/citus.ts
// DISTRIBUTED_FUNCTIONS): the call is sent whole to the customer's worker. Executed here with a
// key that does not exist and a job that does not exist, so each changes nothing.
statements.push(
  [
    "a redeem's outcome (redeem_record_outcome)",
    (q) =>
      recordOutcome(
        { db: q, clock: systemClock } as unknown as RedeemDeps,
        // A sync job whose hold charges no wallet: no ledger row, so the call goes to the worker.
        {
          id: 'job_routing_test',
          source: 'codes',
          mode: 'live',
          customerId: 7,
          channel: 'api',
          walletCharges: 0,
        },
        { position: 0 },
        { status: 'activated' },
        'sending',
        // The stand-in that takes the statement answers no row.
      ).catch(() => undefined),
  ],
  [
    "a redeem's phase 1 (redeem_start)",
    async (q) =>
      q.query(
        `select redeem_start($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
                             $19, $20, $21, $22, $23) as r`,
        // A re-check of a key that is not there: answered {"kind": "recheck"} before any write.
        [
          'key_routing_test',
          true,
          false,
          0,
          10_000,
          30,
          7,
          'live',
          new Date(0),
          'idem',
          'fp',
          'job_routing_test',
          '2026-11-29',
          'req_routing_test',
          false,
          'codes',
          '5123456789',
          'ref',
          'owner',
          new Date(0),
          new Date(0),
          1,
          '[]',
        ],
      ),
  ],
);

test.for(statements)('%s runs on one worker', async ([_name, run], ctx) => {
  if (!client) return ctx.skip('DATABASE_URL is not a Citus coordinator');
  const counts = await taskCounts(client, await statementOf(run));
  expect(counts).toEqual({ first: 1, seventh: 1 });
});
