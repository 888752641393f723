// PostgreSQL's own limits on this machine, measured with pgbench on throwaway databases made and
// dropped here:
// - pgbenchTps: TPC-B (pgbench's default script) with the bench's client count (scale = clients,
//   so the clients do not all queue on the same branch rows);
// - sqlRedeemTps: a sync one-code redeem's SQL alone, no Node and no HTTP: the two statements the
//   gateway sends (redeem_start, then redeem_record_outcome, each its own commit) on the real
//   schema and functions, with fixtures like the gateway bench's (200 customers on a free uncapped
//   plan, a cached key re-checked and its burst slot taken in the statement). Its ratio to TPC-B
//   is the most the gateway's redeem ratio can reach with this SQL, however fast Node gets.
// Both report the machine's busy CPU (all processes, /proc/stat) per transaction.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { openPostgres } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { machineCpu } from './processes.ts';

const run = promisify(execFile);

export interface PgbenchResult {
  tps: number;
  /** The machine's busy CPU milliseconds (all processes) per transaction. */
  cpuMsPerTx: number;
  /**
   * Bytes of write-ahead log per transaction (the server's whole log over the run; nothing else
   * writes during it). Unlike tps it does not move with the machine's noise: the write set's
   * own measure. Under load the SQL alone waits mostly on the log's flush (LWLock:WALWrite).
   */
  walBytesPerTx: number;
  transactions: number;
}

export async function pgbenchTps(baseUrl: string, clients: number, seconds: number): Promise<PgbenchResult> {
  return withThrowawayDatabase(baseUrl, 'bench_tpcb', async (target) => {
    await run('pgbench', ['-i', '-q', '-s', String(clients), target], { maxBuffer: 1 << 24 });
    return pgbench(target, ['-M', 'prepared', '-c', String(clients), '-j', '2', '-T', String(seconds)]);
  });
}

export async function sqlRedeemTps(
  baseUrl: string,
  clients: number,
  seconds: number,
): Promise<PgbenchResult> {
  return withSqlRedeemDatabase(baseUrl, async (target) => {
    const dir = mkdtempSync(join(tmpdir(), 'sql-redeem-'));
    try {
      const script = join(dir, 'redeem.sql');
      writeFileSync(script, SCRIPT);
      const result = await pgbench(target, [
        '-n',
        '-M',
        'prepared',
        '-c',
        String(clients),
        '-j',
        '2',
        '-T',
        String(seconds),
        '-f',
        script,
      ]);
      // Every transaction must have been a real redeem: a job completed with its code activated
      // and billed (a refusal would also commit, and count, without doing the work).
      const check = new pg.Client({ connectionString: target });
      await check.connect();
      try {
        const r = await check.query<{ n: string }>(
          `select count(*) as n from jobs j join job_codes c on c.job_id = j.id
            where j.status = 'completed' and c.status = 'activated' and j.captured_wallet = 1`,
        );
        if (Number(r.rows[0]!.n) !== result.transactions)
          throw new Error(
            `SQL-only redeem: ${r.rows[0]!.n} redeems done for ${result.transactions} transactions`,
          );
      } finally {
        await check.end();
      }
      return result;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/**
 * A throwaway database with the gateway's schema and functions and the SQL alone's fixtures
 * (bench_start, bench_finish), dropped when `body` ends.
 */
export function withSqlRedeemDatabase<T>(baseUrl: string, body: (url: string) => Promise<T>): Promise<T> {
  return withThrowawayDatabase(baseUrl, 'bench_sql_redeem', async (target) => {
    const db = await openPostgres(target);
    try {
      await migrate(db);
      for (const statement of SQL_REDEEM_FIXTURES) await db.query(statement);
    } finally {
      await db.close();
    }
    return body(target);
  });
}

async function withThrowawayDatabase<T>(
  baseUrl: string,
  prefix: string,
  body: (url: string) => Promise<T>,
): Promise<T> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  try {
    const url = new URL(baseUrl);
    url.pathname = `/${name}`;
    return await body(url.toString());
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

async function pgbench(target: string, args: string[]): Promise<PgbenchResult> {
  const walBefore = await walLsn(target);
  const before = machineCpu();
  const { stdout } = await run('pgbench', [...args, target], { maxBuffer: 1 << 24 });
  const after = machineCpu();
  const walAfter = await walLsn(target);
  const tps = /tps = ([\d.]+)/.exec(stdout);
  const done = /actually processed: (\d+)/.exec(stdout);
  if (!tps || !done) throw new Error(`pgbench printed no tps:\n${stdout}`);
  // /proc/stat counts in ticks of 10 ms.
  const transactions = Number(done[1]);
  return {
    tps: Number(tps[1]),
    cpuMsPerTx: ((after.busy - before.busy) * 10) / transactions,
    walBytesPerTx: Number(walAfter - walBefore) / transactions,
    transactions,
  };
}

/** The server's current write-ahead log position, in bytes. */
async function walLsn(target: string): Promise<bigint> {
  const client = new pg.Client({ connectionString: target });
  await client.connect();
  try {
    const r = await client.query<{ lsn: string }>(`select pg_current_wal_lsn()::text as lsn`);
    const [hi, lo] = r.rows[0]!.lsn.split('/');
    return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
  } finally {
    await client.end();
  }
}

/** The SQL-only redeem's fixtures and its two wrapper functions (also used by pglite-sql-redeem.ts). */
export const SQL_REDEEM_FIXTURES = [
  `insert into customers (name, created_at) select 'bench ' || g, now() from generate_series(1, 200) g`,
  `insert into plans (customer_id, label, daily_limit, per_request_micros, overage, active, updated_at)
   select id, 'bench', null, 0, true, true, now() from customers`,
  `insert into api_keys (id, customer_id, mode, key_sha256, key_prefix, scopes, created_at)
   select 'key' || id, id, 'test', md5(id::text), 'rg_test_' || id, '{redeem}', now() from customers`,
  // The parameters the gateway's startRedeem and recordOutcome build, from two numbers (pgbench
  // variables have no text type): the customer and a random request number.
  `create function bench_start(c bigint, n bigint) returns jsonb language plpgsql as $$
   begin
     return redeem_start(
       'key' || c, true, true, (extract(epoch from clock_timestamp()) * 1000)::bigint, 10000, 1000000,
       c, 'test', clock_timestamp(), 'idem' || n, md5(n::text),
       'job' || n, current_date, 'req' || n, false, 'codes', '5123456789', null, 'bench',
       clock_timestamp() + interval '30 s', clock_timestamp() + interval '1 day', 4,
       jsonb_build_array(jsonb_build_object('position', 0, 'hash', md5('code' || n),
         'encrypted', 'v2:bench:' || md5('code' || n), 'last4', right(n::text, 4),
         'stock_id', null, 'category', null, 'uc', null)));
   end $$`,
  `create function bench_finish(c bigint, n bigint) returns jsonb language plpgsql as $$
   begin
     return redeem_record_outcome(
       'job' || n, 0, 'sending', 'activated', null, 'consumed', true, '60', 60, clock_timestamp(),
       clock_timestamp() + interval '30 s', null, true, null, 'bench', c, 'test', current_date, 'req' || n,
       -- The test-mode sandbox's memory of the code, written with the outcome.
       'test', md5('code' || n), '5123456789', 'code_used', 'CODE_USED', 'deleted', true, 'deleted');
   end $$`,
];

const SCRIPT = `\\set c random(1, 200)
\\set n random(1, 1000000000000)
select bench_start(:c, :n);
select bench_finish(:c, :n);
`;
