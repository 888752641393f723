// Wake-ups across processes (src/db/listener.ts, src/db/functions/wake.sql): with the workers'
// polls set to a minute, a job queued through one process whose worker is busy is started at
// once by the idle worker of another process, woken by PostgreSQL's NOTIFY. And the listening
// connection comes back by itself after its backend is terminated.
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { LISTENER_APPLICATION_NAME } from '../../src/db/listener.ts';
import { onPostgres } from '../helpers/db.ts';
import {
  createProcessMerchant,
  type ServerProcess,
  serverProcesses,
  submitAsyncRedeem,
  waitUntil,
} from '../helpers/process.ts';

const processes = serverProcesses();
let sql: pg.Client;
beforeAll(async () => {
  if (!onPostgres) return;
  sql = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await sql.connect();
});
afterAll(async () => {
  await sql?.end();
});

/** The backends of the processes' listening connections. */
async function listenerPids(): Promise<number[]> {
  const r = await sql.query<{ pid: number }>(
    `select pid from pg_stat_activity where datname = current_database() and application_name = $1 order by pid`,
    [LISTENER_APPLICATION_NAME],
  );
  return r.rows.map((row) => row.pid);
}

interface JobTimes {
  status: string;
  started: Date | null;
  finished: Date | null;
}

async function jobTimes(id: string): Promise<JobTimes> {
  const r = await sql.query<JobTimes>(
    'select status, started_at as started, finished_at as finished from jobs where id = $1',
    [id],
  );
  return r.rows[0]!;
}

/**
 * A slow job through process a, then a quick one through a too. a's single worker slot is taken
 * by whichever job it runs; the quick job must start before the slow one ends, which only the
 * other process's worker can do, and only if something wakes it before its one-minute poll.
 */
async function quickJobStartsBeforeSlowOneEnds(a: ServerProcess, key: string, tag: string) {
  const slow = await submitAsyncRedeem(a, key, `SLOW-${tag}-1`);
  await waitUntil('the slow job to start', async () => ((await jobTimes(slow)).started ? true : undefined));
  const quick = await submitAsyncRedeem(a, key, `QUICK-${tag}-2`);
  const done = await waitUntil('the quick job to finish', async () => {
    const j = await jobTimes(quick);
    return j.status === 'completed' ? j : undefined;
  });
  const slowNow = await jobTimes(slow);
  expect(slowNow.finished === null || done.started!.getTime() < slowNow.finished.getTime()).toBe(true);
  await waitUntil('the slow job to finish', async () =>
    (await jobTimes(slow)).status === 'completed' ? true : undefined,
  );
}

test.skipIf(!onPostgres)(
  'a job queued through a busy process starts at once in an idle one, also after the listener lost its connection',
  { timeout: 120_000 },
  async () => {
    const env = { JOB_CONCURRENCY: '1', WORKER_POLL_MS: '60000', SANDBOX_SLOW_MS: '4000' };
    const a = await processes.start(processes.dataDir(), env);
    await processes.start(processes.dataDir(), env);
    const m = await createProcessMerchant(a);
    const before = await waitUntil('both processes to listen', async () => {
      const pids = await listenerPids();
      return pids.length === 2 ? pids : undefined;
    });
    await quickJobStartsBeforeSlowOneEnds(a, m.key, `W1${Date.now().toString(36).toUpperCase()}`);

    // Both listening backends terminated: each process reconnects by itself.
    for (const pid of before) await sql.query('select pg_terminate_backend($1::int)', [pid]);
    await waitUntil('both listeners to come back', async () => {
      const pids = await listenerPids();
      return pids.length === 2 && pids.every((p) => !before.includes(p)) ? pids : undefined;
    });
    await quickJobStartsBeforeSlowOneEnds(a, m.key, `W2${Date.now().toString(36).toUpperCase()}`);
  },
);
