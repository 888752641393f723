// PostgreSQL's own commit rate on this machine: pgbench TPC-B (its default script) with the
// bench's client count, on a throwaway database made and dropped here (scale = clients, so the
// clients do not all queue on the same branch rows).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

export async function pgbenchTps(baseUrl: string, clients: number, seconds: number): Promise<number> {
  const name = `bench_tpcb_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  try {
    const url = new URL(baseUrl);
    url.pathname = `/${name}`;
    const target = url.toString();
    await run('pgbench', ['-i', '-q', '-s', String(clients), target], { maxBuffer: 1 << 24 });
    const { stdout } = await run(
      'pgbench',
      ['-M', 'prepared', '-c', String(clients), '-j', '2', '-T', String(seconds), target],
      { maxBuffer: 1 << 24 },
    );
    const tps = /tps = ([\d.]+)/.exec(stdout);
    if (!tps) throw new Error(`pgbench printed no tps:\n${stdout}`);
    return Number(tps[1]);
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}
