// Fair sharing (docs/reference/jobs.md#fair-sharing): job claims take turns between customers and serve live before
// test; the activator's calls are shared so that no customer holds more than half while another
// waits. Measured by order and counts (who was claimed before whom), never by wall-clock time.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createSandboxActivator } from '../../src/activators/sandbox.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { createFairSemaphore } from '../../src/core/fair-semaphore.ts';
import { claimJob } from '../../src/core/jobs/states.ts';
import { type JobWorker, runJob, startJobWorker } from '../../src/core/jobs/worker.ts';
import { redeemJobRunner } from '../../src/core/redeem/job-runner.ts';
import { createMerchant, createTestApp, issueTestKey, type Merchant, type TestApp } from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

/** The system time: started_at of claimed jobs must tell their order. */
class RealClock extends ManualClock {
  override now(): Date {
    return new Date();
  }
}

const PLAYER = '5123456789';
let t: TestApp;
let flooder: Merchant;
let other: Merchant;
let flooderLive: string;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  t = await createTestApp({ jobWorker: false, clock: new RealClock() });
  const plan = { daily_limit: null, per_request_usd: '0.001' };
  flooder = await createMerchant(t, { plan, topup: { test: 50, live: 5 } });
  other = await createMerchant(t, { plan, topup: { test: 5 } });
  flooderLive = (await issueTestKey(t, flooder.customerId, { mode: 'live' })).key;
});
afterAll(async () => {
  await t.close();
});

/**
 * Puts claimed jobs back in the queue by hand, as the service would have queued them: with their
 * customers in work_queue (the claims on Citus look there first).
 */
async function requeue(ids: string[]) {
  const r = await t.ctx.db.query<{ customerId: number; mode: string }>(
    `update jobs set status = 'queued', lease_owner = null where id = any($1)
     returning customer_id as "customerId", mode`,
    [ids],
  );
  for (const j of r.rows)
    await t.ctx.db.query("select work_queue_add('job', $1, $2)", [j.customerId, j.mode]);
}

async function queue(key: string, codes: number): Promise<string> {
  const res = await redeem(t, key, {
    player_id: PLAYER,
    codes: Array.from({ length: codes }, () => uniqueCode('FAIR')),
    async: true,
  });
  expect(res.statusCode).toBe(202);
  return (res.json() as { job_id: string }).job_id;
}

interface JobTimes {
  id: string;
  customerId: number;
  mode: string;
  status: string;
  createdAt: Date;
  startedAt: Date | null;
}

async function jobTimes(ids: string[]): Promise<Map<string, JobTimes>> {
  const r = await t.ctx.db.query<JobTimes>(
    `select id, customer_id as "customerId", mode, status, created_at as "createdAt", started_at as "startedAt"
       from jobs where id = any($1)`,
    [ids],
  );
  return new Map(r.rows.map((j) => [j.id, j]));
}

describe('job claims', () => {
  test('round-robin across customers, live before test', async () => {
    const floods = [];
    for (let i = 0; i < 5; i++) floods.push(await queue(flooder.key, 1));
    const single = await queue(other.key, 1);
    const live = await queue(flooderLive, 1);
    const order: string[] = [];
    // Claimed one by one and left running: the flooder's running jobs count against its turn.
    for (let c = await claimJob(t.ctx); c; c = await claimJob(t.ctx)) order.push(c.job.id);
    // First-come-first-served would have put the other customer's job 6th and the live job last.
    // The live job is the flooder's too: once it runs, the other customer has the fewer running.
    expect(order).toEqual([live, single, ...floods]);
    await requeue(order);
    // Run them to the end, so the next test starts from a quiet table.
    const worker = startJobWorker(t.ctx, redeemJobRunner, { pollMs: 20 });
    await waitFinished([...order], worker);
  });

  test('equally few running: the customer served least recently goes first, not the older job', async () => {
    const older = await queue(flooder.key, 1);
    const first = await claimJob(t.ctx);
    expect(first?.job.id).toBe(older);
    // The flooder's job ran to its end: it has none running again, but it just had its turn.
    const flood = [await queue(flooder.key, 1)];
    await runJob(t.ctx, redeemJobRunner, first!.job.id, {}, first!);
    const single = await queue(other.key, 1);
    const order: string[] = [];
    for (let c = await claimJob(t.ctx); c; c = await claimJob(t.ctx)) order.push(c.job.id);
    // Both have none running; the flooder's queued job is older, but the other customer's turn
    // has come (ordering by the older job alone gave the flooder two turns in a row).
    expect(order).toEqual([single, ...flood]);
    await requeue(order);
    const worker = startJobWorker(t.ctx, redeemJobRunner, { pollMs: 20 });
    await waitFinished([first!.job.id, ...order], worker);
  });

  test("a sync redeem in its one call is no worker's job: it costs its customer no turn", async () => {
    // The other customer's sync redeem, caught in its call: running, in no worker.
    const res = await redeem(t, other.key, { player_id: PLAYER, codes: [uniqueCode('FAIR')] });
    expect(res.statusCode).toBe(200);
    const sync = await t.ctx.db.query<{ id: string }>(
      'select id from jobs where customer_id = $1 and not is_async order by created_at desc limit 1',
      [other.customerId],
    );
    const syncId = sync.rows[0]!.id;
    await t.ctx.db.query(`update jobs set status = 'running', finished_at = null where id = $1`, [syncId]);
    // The other customer had its last turn before the flooder's.
    await t.ctx.db.query(
      `insert into job_claim_turns (customer_id, last_turn) values ($1, -2), ($2, -1)
       on conflict (customer_id) do update set last_turn = excluded.last_turn`,
      [other.customerId, flooder.customerId],
    );
    const flood = await queue(flooder.key, 1);
    const single = await queue(other.key, 1);
    const order: string[] = [];
    for (let c = await claimJob(t.ctx); c; c = await claimJob(t.ctx)) order.push(c.job.id);
    // Counting the sync redeem as a running job put the flooder first (migration 0075).
    expect(order).toEqual([single, flood]);
    await t.ctx.db.query(`update jobs set status = 'completed', finished_at = now() where id = $1`, [syncId]);
    await requeue(order);
    const worker = startJobWorker(t.ctx, redeemJobRunner, { pollMs: 20 });
    await waitFinished(order, worker);
  });

  test("a flood of 50-code jobs: another customer's one-code job and a live job jump the queue", async () => {
    const concurrency = 2;
    const delayed = createSandboxActivator({
      db: t.ctx.db,
      codeKey: t.ctx.codeKey,
      delayMs: 5,
    });
    const floods: string[] = [];
    for (let i = 0; i < 8; i++) floods.push(await queue(flooder.key, 50));
    const worker = startJobWorker({ ...t.ctx, activatorFor: () => delayed }, redeemJobRunner, {
      concurrency,
      codeConcurrency: 5,
      pollMs: 20,
    });
    // Once the flooder holds every slot, the others arrive.
    for (;;) {
      const running = [...(await jobTimes(floods)).values()].filter((j) => j.status === 'running');
      if (running.length === concurrency) break;
      await sleep(10);
    }
    // Their arrival is when the 202 came back (the job committed and visible to a claim), not
    // their created_at: a claim between the two cannot see them yet.
    const single = await queue(other.key, 1);
    const singleArrived = new Date();
    const live = await queue(flooderLive, 1);
    const liveArrived = new Date();
    await waitFinished([...floods, single, live], worker);

    const times = await jobTimes([...floods, single, live]);
    const s = times.get(single)!;
    const l = times.get(live)!;
    const startedBetween = (from: Date, to: Date) =>
      floods.filter((id) => {
        const j = times.get(id)!;
        return j.startedAt! > from && j.startedAt! < to;
      }).length;
    // The test can fail: when they arrived, most of the flood was still queued ahead of them.
    const queuedAhead = floods.filter((id) => times.get(id)!.startedAt! > s.createdAt).length;
    expect(queuedAhead).toBeGreaterThanOrEqual(5);
    // No flood job was claimed between their arrival and their start: each took the next free slot.
    expect(startedBetween(singleArrived, s.startedAt!)).toBe(0);
    expect(startedBetween(liveArrived, l.startedAt!)).toBe(0);
    // Live first: the live job started no later than the other customer's test job.
    expect(l.startedAt!.getTime()).toBeLessThanOrEqual(s.startedAt!.getTime());
  }, 60_000);
});

async function waitFinished(ids: string[], worker: JobWorker) {
  for (;;) {
    const times = await jobTimes(ids);
    if ([...times.values()].every((j) => j.status === 'completed')) break;
    expect([...times.values()].filter((j) => j.status === 'failed' || j.status === 'interrupted')).toEqual(
      [],
    );
    await sleep(20);
  }
  expect(await worker.stop(5000)).toBe(0);
}

describe('the activator semaphore', () => {
  test('alone a customer may use every slot', async () => {
    const sem = createFairSemaphore(4);
    const releases = await Promise.all(Array.from({ length: 4 }, () => sem.acquire('a', 1000)));
    expect(releases.every(Boolean)).toBe(true);
    expect(sem.held().get('a')).toBe(4);
    for (const r of releases) r!();
    expect(sem.held().size).toBe(0);
  });

  test('while another customer waits, no customer gets more than half; slots go round-robin', async () => {
    const sem = createFairSemaphore(4);
    const a = await Promise.all(Array.from({ length: 4 }, () => sem.acquire('a', 5000)));
    // a holds all 4 and asks for 4 more; b and c each ask for 2.
    const granted: string[] = [];
    const ask = (key: string) =>
      sem.acquire(key, 5000).then((r) => {
        granted.push(key);
        return r;
      });
    const pending = [
      ...Array.from({ length: 4 }, () => ask('a')),
      ...Array.from({ length: 2 }, () => ask('b')),
      ...Array.from({ length: 2 }, () => ask('c')),
    ];
    expect(sem.waiting()).toBe(8);
    // As a's calls end, free slots go round-robin to whoever may take one: a may not while it
    // holds half (2) or more and others wait, so b and c come first; a gets a turn at 1.
    for (const r of a) {
      r!();
      await sleep(0);
    }
    expect(granted).toEqual(['b', 'c', 'a', 'b']);
    expect(Object.fromEntries(sem.held())).toEqual({ a: 1, b: 2, c: 1 });
    // c's second call is next in line; then a gets the rest as calls end.
    const firstFour = await Promise.all([pending[0], pending[4], pending[5], pending[6]]);
    for (const r of firstFour) r!();
    await sleep(0);
    expect(granted.slice(4, 6).sort()).toEqual(['a', 'c']);
    const rest = await Promise.all([pending[1], pending[2], pending[3], pending[7]]);
    for (const r of rest) r!();
    expect(sem.held().size).toBe(0);
    expect(sem.waiting()).toBe(0);
  });

  test('a customer at half its share waits while another waits, even with a slot free', async () => {
    const sem = createFairSemaphore(4);
    const a1 = await sem.acquire('a', 1000);
    const a2 = await sem.acquire('a', 1000);
    const b1 = await sem.acquire('b', 1000);
    const b2 = await sem.acquire('b', 1000);
    // Full: c waits; then a releases one: c gets it, not a's next call.
    const c = sem.acquire('c', 5000);
    const a3 = sem.acquire('a', 5000);
    a1!();
    expect(await c).toBeTypeOf('function');
    expect(sem.held().get('a')).toBe(1);
    // Every slot is taken (a 1, b 2, c 1): a3 still waits. When b ends a call, a gets it.
    b1!();
    expect(await a3).toBeTypeOf('function');
    expect(sem.held().get('a')).toBe(2);
    // A wait that runs out answers null.
    expect(await sem.acquire('d', 20)).toBeNull();
    for (const r of [a2, b2]) r!();
  });
});
