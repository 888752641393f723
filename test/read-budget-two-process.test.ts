// The read budget across processes (contract 13.8, issue 35 item 12): each process counts the
// reads it accepts in memory and settles them with PostgreSQL in batches (one statement a second,
// and one per 25 unsettled reads of a key), so a read costs no statement of its own; the budget
// may be passed by at most 25 × (N − 1) reads with N processes (core/limits/read-budget.ts).
import { expect, test } from 'vitest';
import { onPostgres } from './helpers/db.ts';
import { createProcessMerchant, type ServerProcess, serverProcesses } from './helpers/process.ts';

const processes = serverProcesses();
const MAX_UNSETTLED = 25;

test.skipIf(!onPostgres)(
  'two processes, one key, 500 reads at once: at least 300 and at most 300 + 25 pass',
  { timeout: 120_000 },
  async () => {
    const servers: ServerProcess[] = [];
    for (let i = 0; i < 2; i++) servers.push(await processes.start(processes.dataDir()));
    const m = await createProcessMerchant(servers[0]!);
    const read = (i: number) =>
      fetch(`${servers[i % 2]!.url}/v1/me`, { headers: { authorization: `Bearer ${m.key}` } }).then(
        async (r) => {
          await r.arrayBuffer();
          return r.status;
        },
      );
    const started = Date.now();
    const statuses: number[] = [];
    // 20 reads in flight, alternating between the processes.
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < 500) {
          const i = next++;
          statuses[i] = await read(i);
        }
      }),
    );
    const elapsedMs = Date.now() - started;
    // Within one window, or the bound says nothing about these reads.
    expect(elapsedMs).toBeLessThan(10_000);
    const passed = statuses.filter((s) => s === 200).length;
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(passed).toBeGreaterThanOrEqual(300);
    expect(passed).toBeLessThanOrEqual(300 + MAX_UNSETTLED * (servers.length - 1));
    // Both processes answered 429s: the budget was shared, not per process (600 would pass).
    const perProcess = [0, 1].map((p) => statuses.filter((s, i) => i % 2 === p && s === 429).length);
    expect(perProcess.every((n) => n > 0)).toBe(true);
  },
);
