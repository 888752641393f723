// A Citus cluster changed under a serving process (docs/running/citus.md#adding-a-worker-rebalancing
// and docs/running/citus.md#a-worker-that-stops): a merchant's shard group moved to the other
// worker while its redeems run, and a worker stopped and started again. Live redeems through a real
// server process against the upstream simulator; the clients retry a 503 with the same
// Idempotency-Key. Afterwards every request has a final answer, and each merchant's used_today,
// usage row and wallet equal the codes the simulator activated. First, in this process: while a
// worker is stopped, the passes that read every worker (job recovery and the other sweeps) go on
// for the other worker's merchants.
//
// Only on a cluster of its own: stopping a worker stops every database on it. Enabled by
// CITUS_FAULTS_DIR, the folder `cluster.sh up` made (DATABASE_URL its coordinator):
//   url=$(bash ../shared/citus/cluster.sh up /tmp/citus-faults 9760 2 gateway | tail -n 1)
//   CITUS_FAULTS_DIR=/tmp/citus-faults DATABASE_URL=$url npx vitest run test/db/citus-faults.test.ts
// Skipped with the reason otherwise. The figures are printed for the runbook.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, expect, inject, test } from 'vitest';
import { expireConfirmations, startedRedeems } from '../../src/core/bot/redeem-reports.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { LEASE_MS } from '../../src/core/instance.ts';
import { settleDisabledCustomerJob } from '../../src/core/jobs/disabled-customer.ts';
import { recoverOrphanedJobs } from '../../src/core/jobs/recovery.ts';
import { claimJob, finishAsyncJob, ownUnrunJobs } from '../../src/core/jobs/states.ts';
import { redeemJobRunner } from '../../src/core/redeem/job-runner.ts';
import { sweepOnce } from '../../src/core/sweeper/passes.ts';
import { expireStaleRedeliveries } from '../../src/core/webhooks/redelivery.ts';
import { repairWorkQueue } from '../../src/core/work-queue.ts';
import { isConnectionError } from '../../src/db/connection-errors.ts';
import { readAcrossCustomers } from '../../src/db/reachable-shards.ts';
import { createUpstreamSim, type UpstreamSim } from '../../src/dev/upstream-sim.ts';
import { createMerchant, createTestApp, merchantGet, type Merchant as TestMerchant } from '../helpers/app.ts';
import {
  accountsAddUp,
  byStatus,
  clusterNode,
  clusterScript,
  liveMerchant,
  type Merchant,
  type Node,
  newClientLog,
  placementOf,
  redeemLoop,
  redeemOnce,
  settleQuarantine,
} from '../helpers/citus-load.ts';
import { createTestCa, type Receiver, startReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { type ServerProcess, serverProcesses } from '../helpers/process.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

const FAULTS_DIR = process.env.CITUS_FAULTS_DIR ?? '';
const SIM_KEY = 'citus-faults-sim-key-0123456789abcdef';
const DATABASE_TIMEOUT_MS = 2000;
const OUTAGE_MS = 8000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const workers = inject('citusWorkers');
const script = clusterScript();

/** Why these tests cannot run here, or null. */
function notHere(): string | null {
  if (!FAULTS_DIR)
    return 'CITUS_FAULTS_DIR is not set: these tests stop Citus workers, so they run only on a cluster of their own (see the head of this file)';
  if (!process.env.DATABASE_URL || workers.length < 2)
    return 'DATABASE_URL is not a Citus coordinator with two workers or more';
  if (!script) return 'no ../shared/citus/cluster.sh beside the project';
  const missing = workers.filter((w) => !existsSync(join(FAULTS_DIR, String(w.port), 'PG_VERSION')));
  if (missing.length)
    return `CITUS_FAULTS_DIR=${FAULTS_DIR} holds no data folder for worker ports ${missing.map((w) => w.port)}`;
  return null;
}
const skipReason = notHere();

const servers = serverProcesses();
let sim: UpstreamSim | undefined;
let server: ServerProcess | undefined;
let admin: pg.Client | undefined;
let ca: TestCa | undefined;
const receivers: Receiver[] = [];
const stopped: number[] = [];
afterAll(async () => {
  // The server's log beside the cluster, for what a failure leaves to read.
  if (server) writeFileSync(join(FAULTS_DIR, 'citus-faults-server.log'), server.output());
  // A worker this file stopped is started again whatever happened, for the files after it.
  for (const port of stopped)
    await clusterNode(script!, 'start-node', FAULTS_DIR, port).catch(() => undefined);
  await admin?.end();
  await sim?.close();
  await Promise.all(receivers.map((r) => r.close()));
  ca?.remove();
});

/** The server process (live keys on the simulator) and a coordinator connection, made once. */
async function setUp(): Promise<{ server: ServerProcess; admin: pg.Client; sim: UpstreamSim }> {
  if (!sim) {
    sim = createUpstreamSim({ key: SIM_KEY });
    const simUrl = await sim.listen();
    ca = createTestCa();
    server = await servers.start(servers.dataDir(), {
      // The merchants' webhook receivers: HTTPS on 127.0.0.1, signed by the test's own CA.
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      NODE_EXTRA_CA_CERTS: ca.caFile,
      ACTIVATOR: 'http',
      ACTIVATOR_URL: simUrl,
      ACTIVATOR_KEY: SIM_KEY,
      DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS),
      WORKER_POLL_MS: '100',
    });
    admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
  }
  return { server: server!, admin: admin!, sim };
}

const same = (a: Node, b: Node) => a.host === b.host && a.port === b.port;

/** A webhook receiver of the merchant's (its live key's mode), registered through the API. */
async function receiverOf(s: ServerProcess, m: Merchant): Promise<Receiver> {
  const receiver = await startReceiver(ca!);
  receivers.push(receiver);
  const res = await fetch(`${s.url}/v1/webhook`, {
    method: 'POST',
    headers: { authorization: `Bearer ${m.keys[0]}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url }),
  });
  const body = (await res.json()) as { secret?: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  receiver.secret = body.secret!;
  return receiver;
}

/** The jobs a receiver was told ended, each once however often it was told. */
const jobsHeardOf = (r: Receiver, since = 0) =>
  new Set(
    r.requests
      .filter((x) => x.receivedAt >= since && x.answered === 200 && x.verdict === null)
      .map((x) => (JSON.parse(x.raw.toString('utf8')) as { data: { job_id: string } }).data.job_id),
  );

/** Merchants until each worker holds `perWorker` of them (customer ids land on shards by hash). */
async function merchantsOnEveryWorker(s: ServerProcess, db: pg.Client, perWorker: number, tag: string) {
  const on = new Map<string, Merchant[]>(workers.map((w) => [`${w.host}:${w.port}`, []]));
  for (let i = 0; [...on.values()].some((l) => l.length < perWorker); i++) {
    if (i >= 40) throw new Error(`40 customers and still not ${perWorker} on every worker`);
    const m = await liveMerchant(s, `${tag}-${i}`);
    const where = await placementOf(db, m.customerId);
    const list = on.get(`${where.host}:${where.port}`)!;
    if (list.length < perWorker) list.push(m);
  }
  return workers.map((w) => ({ worker: w, merchants: on.get(`${w.host}:${w.port}`)! }));
}

test("a worker stopped: the sweeps that read every worker go on for the other worker's merchants, and find the stopped worker's when it is back", {
  timeout: 120_000,
}, async (ctx) => {
  if (skipReason) return ctx.skip(skipReason);
  // The file's first test: no server process of its own runs yet, whose job worker would claim
  // the jobs below. In this process, on the test's clock (started at the real time: a lease it gives runs out for
  // the server process of the tests above 30 s later, after this test is done with it).
  const clock = new ManualClock(new Date().toISOString());
  const t = await createTestApp({ jobWorker: false, clock });
  const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await db.connect();
  try {
    const on = new Map<string, TestMerchant>();
    for (let i = 0; on.size < workers.length; i++) {
      if (i >= 40) throw new Error('40 customers and still not one on every worker');
      const m = await createMerchant(t);
      const where = await placementOf(db, m.customerId);
      if (!on.has(`${where.host}:${where.port}`)) on.set(`${where.host}:${where.port}`, m);
    }
    const [down, up] = workers.map((w) => on.get(`${w.host}:${w.port}`)!);
    // An async job each, claimed by this process; then its lease runs out (as if it had died).
    const jobOf = new Map<number, string>();
    for (const m of [down!, up!]) {
      const res = await redeem(t, m.key, { player_id: '5123456789', codes: [uniqueCode('OK')], async: true });
      expect(res.statusCode, res.body).toBe(202);
      jobOf.set(m.customerId, (res.json() as { job_id: string }).job_id);
    }
    const claimed = [await claimJob(t.ctx), await claimJob(t.ctx)].map((c) => c?.job.id);
    expect(claimed.sort()).toEqual([...jobOf.values()].sort());
    clock.advance(LEASE_MS + 1000);
    // A read of two co-located tables, with parameters of every kind the sweeps pass (an array, a
    // text with a quote and a percent sign, a time).
    const read = {
      tables: ['jobs', 'job_codes'],
      sql: `select j.customer_id as "customerId", j.id, count(c.position)::int as codes
              from jobs j join job_codes c on c.customer_id = j.customer_id and c.job_id = j.id
             where j.customer_id = any($1::bigint[]) and j.status = 'running' and j.created_at <= $2
               and $3::text = 'it''s 100%'
             group by 1, 2 order by 1`,
      params: [[down!.customerId, up!.customerId], clock.now(), "it's 100%"],
    };
    const row = (m: TestMerchant) => ({ customerId: m.customerId, id: jobOf.get(m.customerId), codes: 1 });
    const all = [row(down!), row(up!)].sort((a, b) => a.customerId - b.customerId);
    expect(await readAcrossCustomers(t.ctx.db, read)).toEqual({ rows: all, partial: false });

    const port = workers[0]!.port;
    const worker = new pg.Client({ host: workers[0]!.host, port, user: 'postgres', database: 'postgres' });
    await worker.connect();
    await worker.query('checkpoint').finally(() => worker.end());
    stopped.push(port);
    await clusterNode(script!, 'stop-node', FAULTS_DIR, port);
    let takenWhileDown: string[];
    try {
      // The plain read fails while the worker is down; the read across customers answers with
      // the other worker's rows.
      await expect(t.ctx.db.query(read.sql, read.params)).rejects.toThrow(/remote node/);
      expect(await readAcrossCustomers(t.ctx.db, read)).toEqual({ rows: [row(up!)], partial: true });
      // Job recovery: the other worker's merchant's job is taken over and settled meanwhile.
      takenWhileDown = await recoverOrphanedJobs(t.ctx, redeemJobRunner, { all: false });
      const upJob = await merchantGet(t, `/v1/jobs/${jobOf.get(up!.customerId)}`, up!.key);
      expect(upJob.json()).toMatchObject({ status: 'interrupted' });
      // The other passes that read every worker answer too (a pass that failed on the stopped
      // worker would throw a connection error here): the sweeper's, the bot's progress loop's,
      // the webhook worker's, the job worker's and the work queue's repair.
      await sweepOnce(t.ctx);
      expect(await startedRedeems(t.ctx.db)).toEqual([]);
      expect(await expireConfirmations(t.ctx.db, clock.now())).toEqual([]);
      await expireStaleRedeliveries(t.ctx);
      expect(await ownUnrunJobs(t.ctx, new Set())).toEqual({ ids: [], partial: true });
      await repairWorkQueue(t.ctx.db, 0);
      // The job worker's last steps for a job of a customer it knows go to that worker alone.
      const upJobRef = { id: jobOf.get(up!.customerId)!, customerId: up!.customerId };
      expect(await settleDisabledCustomerJob(t.ctx, upJobRef)).toBe(false);
      expect(await finishAsyncJob(t.ctx, upJobRef)).toBe(false);
    } finally {
      await clusterNode(script!, 'start-node', FAULTS_DIR, port);
      stopped.splice(stopped.indexOf(port), 1);
    }
    expect(takenWhileDown).toEqual([jobOf.get(up!.customerId)]);
    // Back: the stopped worker's job is found at a later sweep (retried while the worker starts).
    let takenAfter: string[] = [];
    for (const until = Date.now() + 30_000; Date.now() < until; await sleep(500)) {
      const r = await recoverOrphanedJobs(t.ctx, redeemJobRunner, { all: false }).catch(() => null);
      if (r) takenAfter = [...takenAfter, ...r];
      if (takenAfter.length > 0) break;
    }
    expect(takenAfter).toEqual([jobOf.get(down!.customerId)]);
    const downJob = await merchantGet(t, `/v1/jobs/${jobOf.get(down!.customerId)}`, down!.key);
    expect(downJob.json()).toMatchObject({ status: 'interrupted' });
  } finally {
    await db.end();
    await t.close();
  }
});

test("a merchant's shard group moved to the other worker while its redeems run: every answer final, used_today = activated codes", {
  timeout: 300_000,
}, async (ctx) => {
  if (skipReason) return ctx.skip(skipReason);
  const { server, admin, sim } = await setUp();
  const [a, b] = await merchantsOnEveryWorker(server, admin, 2, 'move');
  const moved = a!.merchants[0]!;
  // The control: a merchant on the target worker, another shard group.
  const others = [a!.merchants[1]!, b!.merchants[0]!];
  const from = await placementOf(admin, moved.customerId);
  const to = workers.find((w) => !same(w, from))!;
  // Online needs a replica identity on every table of the group: without one, an update or
  // delete during a logical move fails.
  const noIdentity = await admin.query<{ t: string }>(
    `select p.logicalrelid::regclass::text as t
       from pg_dist_partition p join pg_class c on c.oid = p.logicalrelid
      where p.colocationid = (select colocationid from pg_dist_partition where logicalrelid = 'customers'::regclass)
        and c.relreplident <> 'f'
        and not exists (select 1 from pg_index i where i.indrelid = c.oid and (i.indisprimary or i.indisreplident))`,
  );
  expect(noIdentity.rows).toEqual([]);
  const group = await admin.query<{ n: number }>(
    `select count(*)::int as n from pg_dist_shard s join pg_dist_partition p using (logicalrelid)
      where p.colocationid = (select colocationid from pg_dist_partition where logicalrelid = 'customers'::regclass)
        and s.shardminvalue = (select shardminvalue from pg_dist_shard where shardid = $1::bigint)`,
    [from.shard],
  );

  const rec = newClientLog();
  let loadOn = true;
  const running = () => loadOn;
  const load = [
    redeemLoop(server, moved, rec, running, { key: 0 }),
    redeemLoop(server, moved, rec, running, { key: 1 }),
    redeemLoop(server, moved, rec, running, { key: 2, asyncEvery: 2 }),
    ...others.map((m) => redeemLoop(server, m, rec, running, { key: 0 })),
  ];
  await sleep(2000);
  const moveStart = Date.now();
  await admin.query(
    `select citus_move_shard_placement($1::bigint, $2::text, $3::int, $4::text, $5::int,
            shard_transfer_mode => 'force_logical')`,
    [from.shard, from.host, from.port, to.host, to.port],
  );
  const moveEnd = Date.now();
  // Served from its new worker for a while before the load stops.
  await sleep(2000);
  loadOn = false;
  await Promise.all(load);

  await settleQuarantine(server);
  const wrong = await accountsAddUp(server, admin, sim, [moved, ...others], rec);
  const during = rec.answers.filter((x) => x.at + x.ms >= moveStart && x.at <= moveEnd);
  const slowest = Math.max(0, ...during.map((x) => x.ms));
  console.log(
    `shard move (${group.rows[0]!.n} shards, force_logical, ${from.port} → ${to.port}): ${moveEnd - moveStart} ms; ` +
      `answers during it: moved ${JSON.stringify(byStatus(during.filter((x) => x.merchant === moved.label)))}, ` +
      `others ${JSON.stringify(byStatus(during.filter((x) => x.merchant !== moved.label)))}, slowest ${slowest} ms; ` +
      `all answers ${JSON.stringify(byStatus(rec.answers))}; activated ${[moved, ...others].map((m) => `${m.label}=${m.activated.length}`)}`,
  );
  expect(await placementOf(admin, moved.customerId)).toEqual({ ...to, shard: from.shard });
  // Redeems of the moved merchant were answered after the move, from its new worker.
  expect(rec.answers.some((x) => x.merchant === moved.label && x.at > moveEnd && x.status === 200)).toBe(
    true,
  );
  expect(rec.violations).toEqual([]);
  expect(rec.answers.filter((x) => x.status === 500)).toEqual([]);
  expect(wrong).toEqual([]);
  expect(moved.activated.length).toBeGreaterThan(0);
  expect(server.child.exitCode).toBeNull();
});

test("a worker stopped and started: the other worker's merchants served meanwhile, the stopped worker's answered 503 and served again within 30 s", {
  timeout: 300_000,
}, async (ctx) => {
  if (skipReason) return ctx.skip(skipReason);
  const { server, admin, sim } = await setUp();
  const [down, up] = await merchantsOnEveryWorker(server, admin, 2, 'stop');
  const all = [...down!.merchants, ...up!.merchants];
  const rec = newClientLog();
  // One redeem each first with key 0 (key 2 of the other worker's second merchant is kept for a
  // first use while the worker is down).
  for (const m of all) await redeemOnce(server, m, rec, { async: false, n: 1 });
  expect(rec.violations).toEqual([]);
  // Webhooks: the other worker's async merchant is told of its jobs while the worker is down; the
  // stopped worker's is told of every one of its jobs once it is back.
  const upHook = await receiverOf(server, up!.merchants[0]!);
  const downHook = await receiverOf(server, down!.merchants[1]!);

  let loadOn = true;
  const running = () => loadOn;
  const load = [
    ...down!.merchants.map((m) => redeemLoop(server, m, rec, running, { key: 0 })),
    ...up!.merchants.map((m) => redeemLoop(server, m, rec, running, { key: 0 })),
    // Async jobs of the other worker's merchant too: claimed and run while the worker is down.
    redeemLoop(server, up!.merchants[0]!, rec, running, { key: 1, asyncEvery: 1 }),
  ];
  await sleep(1500);
  // Async jobs of a merchant of the worker about to stop, more than the process's job slots (each
  // code held 2 s by the simulator), so that some are still queued when it stops: the claims skip
  // that merchant, and the other worker's async jobs still run (docs/running/citus.md#a-worker-that-stops).
  // A checkpoint on that worker first, so that its fast stop does not spend many seconds writing
  // its buffers out on a busy machine: its merchants' outage is the stop and the time down, and a
  // running job keeps its lease (30 s) through an outage shorter than that.
  const worker = new pg.Client({
    host: down!.worker.host,
    port: down!.worker.port,
    user: 'postgres',
    database: 'postgres',
  });
  await worker.connect();
  await worker.query('checkpoint').finally(() => worker.end());
  sim.setFaults([{ kind: 'latency', stage: 'before', match: 'HOLD', ms: 2000 }]);
  const holder = down!.merchants[1]!;
  const HELD = 8;
  const accepted = () => rec.answers.filter((x) => x.merchant === holder.label && x.status === 202).length;
  const held = Array.from({ length: HELD }, () =>
    redeemOnce(server, holder, rec, { async: true, n: 1, key: 2, mark: 'HOLD' }),
  );
  while (accepted() < HELD && rec.violations.length === 0) await sleep(50);
  const queuedAtStop = await admin.query<{ n: number }>(
    `select count(*)::int as n from jobs where customer_id = $1 and status = 'queued'`,
    [holder.customerId],
  );
  const port = down!.worker.port;
  stopped.push(port);
  const stopCalledAt = Date.now();
  const stopMs = await clusterNode(script!, 'stop-node', FAULTS_DIR, port);
  const stoppedAt = Date.now();

  // What the coordinator says about the stopped worker, as the service's pool sees it.
  const caught: { code?: string; message: string; connection: boolean }[] = [];
  const direct = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await direct.connect();
  try {
    for (const sql of [
      'select balance_micros from accounts where customer_id = $1',
      `update accounts set held_micros = held_micros where customer_id = $1 and mode = 'live'`,
    ]) {
      const err = await direct.query(sql, [down!.merchants[0]!.customerId]).then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
      if (err) caught.push({ code: err.code, message: err.message, connection: isConnectionError(err) });
    }
  } finally {
    await direct.end();
  }
  // A key never used before, first used while the worker is down: found in key_directory, and
  // then its customer's worker alone is asked (docs/running/citus.md#keys-to-customers).
  const freshKeyAt = Date.now();
  const fresh = await fetch(`${server.url}/v1/me`, {
    headers: { authorization: `Bearer ${up!.merchants[1]!.keys[2]}` },
  });
  const freshKey = { status: fresh.status, ms: Date.now() - freshKeyAt };
  await fresh.arrayBuffer();
  await sleep(OUTAGE_MS);
  const startCalledAt = Date.now();
  const startMs = await clusterNode(script!, 'start-node', FAULTS_DIR, port);
  const startedAt = Date.now();
  stopped.splice(stopped.indexOf(port), 1);
  // Served again: each merchant of the stopped worker has a 200 sent after its start.
  const servedAgain = await Promise.all(
    down!.merchants.map(async (m) => {
      for (;;) {
        const ok = rec.answers.find((x) => x.merchant === m.label && x.at >= startedAt && x.status === 200);
        if (ok) return ok.at + ok.ms - startedAt;
        if (Date.now() - startedAt > 60_000) return Number.POSITIVE_INFINITY;
        await sleep(100);
      }
    }),
  );
  await sleep(1500);
  loadOn = false;
  await Promise.all([...load, ...held]);
  const heldJobs = rec.jobs.filter((j) => j.merchant === holder.label).length;
  await downHook.waitFor(heldJobs, { timeoutMs: 60_000 }).catch(() => undefined);
  const toldWhileDown = upHook.requests.filter((x) => x.receivedAt >= stoppedAt && x.receivedAt <= startedAt);
  await settleQuarantine(server);
  const wrong = await accountsAddUp(server, admin, sim, all, rec);

  // Down: from the end of its stop to the call of its start (the worker accepts connections
  // before that call returns); for the other worker's merchants, from the start of the stop (a
  // fast stop ends every session of the worker at once) to the end of the start.
  const whileDown = (names: string[]) =>
    rec.answers.filter(
      (x) => names.includes(x.merchant) && x.at >= stoppedAt && x.at + x.ms <= startCalledAt,
    );
  const meanwhile = (names: string[]) =>
    rec.answers.filter((x) => names.includes(x.merchant) && x.at + x.ms >= stopCalledAt && x.at <= startedAt);
  const downNames = down!.merchants.map((m) => m.label);
  const upNames = up!.merchants.map((m) => m.label);
  const slowest = Math.max(0, ...whileDown(downNames).map((x) => x.ms));
  const jobsWhileDown = rec.jobs.filter((j) => j.at >= stopCalledAt && j.at + j.ms <= startedAt);
  console.log(
    `worker ${port} stopped (${stopMs} ms), down ${startedAt - stoppedAt} ms, started (${startMs} ms); ` +
      `answers while down: its merchants ${JSON.stringify(byStatus(whileDown(downNames)))} (slowest ${slowest} ms), ` +
      `the other worker's ${JSON.stringify(byStatus(meanwhile(upNames)))}, its async jobs ended meanwhile ${jobsWhileDown.length} (slowest ${Math.max(0, ...jobsWhileDown.map((j) => j.ms))} ms); served again after ${servedAgain} ms; ` +
      `all answers ${JSON.stringify(byStatus(rec.answers))}; coordinator errors ${JSON.stringify(caught)}; ` +
      `its merchant's async jobs queued at the stop ${queuedAtStop.rows[0]!.n} of ${HELD}; ` +
      `a key first used while down: ${freshKey.status} in ${freshKey.ms} ms; ` +
      `webhooks: the other worker's merchant told of ${toldWhileDown.length} jobs while down, ` +
      `the stopped worker's merchant of ${jobsHeardOf(downHook).size} of its ${heldJobs} jobs`,
  );
  console.log(
    JSON.stringify(
      (
        await admin.query(
          `select state, attempts, next_attempt_at - now() as due, locked_until - now() as locked, last_status, last_error from webhook_events where customer_id = $1 order by created_at`,
          [up!.merchants[0]!.customerId],
        )
      ).rows,
    ),
    JSON.stringify((await admin.query('select * from work_queue')).rows),
  );
  console.log(
    upHook.requests.map((x) => [x.receivedAt - stoppedAt, x.answered, x.verdict]),
    'startedAt',
    startedAt - stoppedAt,
    'jobs',
    rec.jobs.filter((j) => j.merchant === up!.merchants[0]!.label).map((j) => [j.at - stoppedAt, j.ms]),
  );
  expect(toldWhileDown.length).toBeGreaterThan(0);
  expect(jobsHeardOf(downHook).size).toBe(HELD);
  // Some of the stopped worker's merchant's async jobs were still queued: the claims had to skip it.
  expect(queuedAtStop.rows[0]!.n).toBeGreaterThan(0);
  expect(freshKey.status).toBe(200);
  // The coordinator's errors about the stopped worker are connection errors (503, not 500).
  expect(caught.length).toBeGreaterThan(0);
  expect(caught.filter((c) => !c.connection)).toEqual([]);
  // The stopped worker's merchants: 503 unavailable (checked body and Retry-After), never a hang.
  expect(whileDown(downNames).length).toBeGreaterThan(0);
  expect(whileDown(downNames).filter((x) => x.status !== 503)).toEqual([]);
  expect(slowest).toBeLessThan(DATABASE_TIMEOUT_MS + 3000);
  // The other worker's merchants: served all along.
  const ok = (x: { status: number | 'network' }) => typeof x.status === 'number' && x.status < 300;
  expect(meanwhile(upNames).filter(ok).length).toBeGreaterThan(0);
  expect(meanwhile(upNames).filter((x) => !ok(x))).toEqual([]);
  expect(jobsWhileDown.length).toBeGreaterThan(0);
  expect(Math.max(...servedAgain)).toBeLessThan(30_000);
  expect(rec.violations).toEqual([]);
  expect(rec.answers.filter((x) => x.status === 500)).toEqual([]);
  expect(wrong).toEqual([]);
  expect(server.child.exitCode).toBeNull();
});
