// The read budget across processes (docs/reference/limits.md#read-budget): each process counts the
// reads it accepts in memory and settles them with PostgreSQL in batches (one statement a second,
// and one per 25 unsettled reads of a key), so a read costs no statement of its own; the budget
// may be passed by at most 25 × (N − 1) reads with N processes (core/limits/read-budget.ts).
import { expect, test } from 'vitest';
import { onPostgres } from '../helpers/db.ts';
import { createProcessMerchant, type ServerProcess, serverProcesses } from '../helpers/process.ts';

const processes = serverProcesses();
const MAX_UNSETTLED = 25;

test.skipIf(!onPostgres)(
  'two processes, one key, 500 reads at once: at least 300 and at most 300 + 25 pass',
  { timeout: 120_000 },
  async () => {
    const servers: ServerProcess[] = [];
    for (let i = 0; i < 2; i++) servers.push(await processes.start(processes.dataDir()));
    const m = await createProcessMerchant(servers[0]!);
    const read = async (i: number) => {
      const start = performance.now();
      const r = await fetch(`${servers[i % 2]!.url}/v1/me`, {
        headers: { authorization: `Bearer ${m.key}` },
      });
      await r.arrayBuffer();
      return { status: r.status, start, end: performance.now() };
    };
    const answers: { status: number; start: number; end: number }[] = [];
    // 20 reads in flight, alternating between the processes.
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < 500) {
          const i = next++;
          answers[i] = await read(i);
        }
      }),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const passed = answers.filter((a) => a.status === 200);
    expect(passed.length).toBeGreaterThanOrEqual(300);
    // The bound, in any sliding 10 s: a read answered 200 between its start and its end was
    // accepted then, so the reads wholly inside a window were accepted in it (a slow machine
    // spreads them over more windows, and the check still holds).
    const most = Math.max(
      ...passed.map((w) => passed.filter((a) => a.start >= w.start && a.end < w.start + 10_000).length),
    );
    expect(most).toBeLessThanOrEqual(300 + MAX_UNSETTLED * (servers.length - 1));
    // Within one window, both processes answered 429s: the budget is shared, not per process
    // (two budgets would pass all 500).
    const spanMs = Math.max(...answers.map((a) => a.end)) - Math.min(...answers.map((a) => a.start));
    if (spanMs < 10_000) {
      const perProcess = [0, 1].map((p) => statuses.filter((s, i) => i % 2 === p && s === 429).length);
      expect(perProcess.every((n) => n > 0)).toBe(true);
      expect(most).toBeGreaterThanOrEqual(300);
    }
  },
);
