// Two server processes on one PostgreSQL database enforce one burst limit per key
// (docs/reference/limits.md#redeem-burst-limit: the limit is per key, not per process).
import { expect, test } from 'vitest';
import { onPostgres } from '../helpers/db.ts';
import { createProcessMerchant, type ServerProcess, serverProcesses } from '../helpers/process.ts';

const processes = serverProcesses();

test.skipIf(!onPostgres)(
  '40 redeems split over two processes: exactly 30 pass',
  { timeout: 120_000 },
  async () => {
    const servers: ServerProcess[] = [];
    for (let i = 0; i < 2; i++) {
      servers.push(await processes.start(processes.dataDir()));
    }
    const m = await createProcessMerchant(servers[0]!);
    const tag = Date.now().toString(36).toUpperCase();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        fetch(`${servers[i % 2]!.url}/v1/redeem`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${m.key}`,
            'idempotency-key': `b-${i}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ player_id: '5123456789', codes: [`BURST-${tag}-${i}`] }),
        }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    const limited = answers.find((a) => a.status === 429)!;
    const body = (await limited.json()) as { error_code: string; retry_after_sec: number };
    expect(body.error_code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBe(body.retry_after_sec);
    // Each process saw only 20 requests: per-process limits would have accepted all 40.
  },
);
