// What PostgreSQL spent on a measured run: the CPU of the database's backends (read from /proc,
// so only for a server on this machine) and the transactions it committed (pg_stat_database).
import pg from 'pg';
import { processCpuSeconds } from './processes.ts';

export interface PgSnapshot {
  pids: number[];
  /** CPU seconds of each backend so far (a backend gone since is left out). */
  cpu: Map<number, number>;
  commits: number;
}

/** CPU seconds the backends seen in both snapshots spent between them. */
export function backendCpuBetween(a: PgSnapshot, b: PgSnapshot): number {
  let sum = 0;
  for (const [pid, end] of b.cpu) {
    const start = a.cpu.get(pid);
    if (start !== undefined) sum += end - start;
  }
  return sum;
}

export async function pgSnapshot(url: string, pids?: number[]): Promise<PgSnapshot> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('select pg_stat_clear_snapshot()');
    const r = await client.query<{ pids: number[]; commits: string }>(
      `select array(select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()) as pids,
              (select xact_commit from pg_stat_database where datname = current_database()) as commits`,
    );
    const found = pids ?? r.rows[0]!.pids;
    const cpu = new Map<number, number>();
    for (const pid of found) {
      const seconds = processCpuSeconds(pid);
      if (!Number.isNaN(seconds)) cpu.set(pid, seconds);
    }
    return { pids: found, cpu, commits: Number(r.rows[0]!.commits) };
  } finally {
    await client.end();
  }
}
