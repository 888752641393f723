// Two server processes on one PostgreSQL database: their job workers never run the same job
// (FOR UPDATE SKIP LOCKED claims), and every job runs exactly once.
import { expect, test } from 'vitest';
import { onPostgres } from '../helpers/db.ts';
import { createProcessMerchant, type ServerProcess, serverProcesses } from '../helpers/process.ts';

const processes = serverProcesses();

test.skipIf(!onPostgres)(
  '24 async jobs over two workers: each runs once, every code activates once',
  { timeout: 120_000 },
  async () => {
    const servers: ServerProcess[] = [];
    for (let i = 0; i < 2; i++) {
      servers.push(await processes.start(processes.dataDir(), { SANDBOX_DELAY_MS: '30' }));
    }
    const tag = Date.now().toString(36).toUpperCase();
    // Several merchants, so the burst limit (30 per key per 10 s) is not what is measured.
    const merchants = await Promise.all([0, 1, 2].map(() => createProcessMerchant(servers[0]!)));
    const jobs = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const m = merchants[i % 3]!;
        const res = await fetch(`${servers[i % 2]!.url}/v1/redeem`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${m.key}`,
            'idempotency-key': `w-${tag}-${i}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({
            player_id: '5123456789',
            codes: [0, 1, 2].map((c) => `W-${tag}-${i}-${c}`),
            async: true,
          }),
        });
        expect(res.status).toBe(202);
        return { key: m.key, id: ((await res.json()) as { job_id: string }).job_id };
      }),
    );
    const results = await Promise.all(
      jobs.map(async ({ key, id }, i) => {
        for (let n = 0; n < 300; n++) {
          const job = (await (
            await fetch(`${servers[(i + 1) % 2]!.url}/v1/jobs/${id}`, {
              headers: { authorization: `Bearer ${key}` },
            })
          ).json()) as {
            status: string;
            result: { codes: { status: string }[]; billed_requests: number } | null;
          };
          if (job.status !== 'queued' && job.status !== 'running') return job;
          await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error(`job ${id} did not finish`);
      }),
    );
    for (const job of results) {
      expect(job.status).toBe('completed');
      // A second run of a job would have met its own codes as code_used (or in flight).
      expect(job.result!.codes.map((c) => c.status)).toEqual(['activated', 'activated', 'activated']);
      expect(job.result!.billed_requests).toBe(3);
    }
    for (const m of merchants) {
      const me = (await (
        await fetch(`${servers[0]!.url}/v1/me`, { headers: { authorization: `Bearer ${m.key}` } })
      ).json()) as {
        quota: { used_today: number };
      };
      expect(me.quota.used_today).toBe(24);
    }
  },
);
