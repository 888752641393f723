// On a Citus coordinator only (DATABASE_URL names one; skipped elsewhere): a request for one
// customer commits on that customer's worker alone, never with a two-phase commit
// (docs/running/citus.md#two-phase-commits). Citus records each two-phase commit in the
// coordinator's pg_dist_transaction until its recovery removes the record; with recovery paused
// (citus.recover_2pc_interval = -1) the table counts them. A real server process (its job worker,
// webhook worker and sweeper running as in production) serves sync redeems, an async job whose
// webhook reaches a real HTTPS receiver on 127.0.0.1, a redelivery, reads and statements for
// customers on both workers, their owners' commands and a confirmed redeem in the chat (the bot
// talking to the project's stand-in for the Bot API), and runs past one sweep; the table must not
// have grown. A deliberate write to two workers in one transaction at the end shows the count sees
// a two-phase commit.
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { type BotApiSim, type SimMessage, type SimUser, startBotApiSim } from '../../src/dev/bot-api-sim.ts';
import { createTestCa, type Receiver, startReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { adminHttp, type ServerProcess, serverProcesses, waitUntil } from '../helpers/process.ts';
import { uniqueCode } from '../helpers/redeem.ts';

const workers = inject('citusWorkers');
const onCitus = Boolean(process.env.DATABASE_URL) && workers.length > 0;
const processes = serverProcesses();
const PLAYER = '5123456789';
/** Customers per worker: each worker serves more than one, at once. */
const PER_WORKER = 2;
/** The sweeper's first pass comes SWEEP_MS (10 s) after a start: the load lasts past it. */
const PAST_ONE_SWEEP_MS = 12_000;

let sql: pg.Client;
let ca: TestCa;
/** The stand-in for Telegram's Bot API the server's bot talks to. */
let sim: BotApiSim;
let nextPerson = 84_000_000 + Math.floor(Math.random() * 1_000_000);
const receivers: Receiver[] = [];
/** The setting recovery had before the test, to put back (null: none of ALTER SYSTEM's). */
let savedInterval: string | null = null;
let paused = false;

beforeAll(async () => {
  if (!onCitus) return;
  sql = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await sql.connect();
  const before = await sql.query<{ setting: string; fromAuto: boolean }>(
    `select setting, coalesce(sourcefile like '%postgresql.auto.conf', false) as "fromAuto"
       from pg_settings where name = 'citus.recover_2pc_interval'`,
  );
  savedInterval = before.rows[0]!.fromAuto ? before.rows[0]!.setting : null;
  // A server-wide setting (the maintenance daemon reads it on reload); no session or database
  // may set it.
  await sql.query('alter system set citus.recover_2pc_interval = -1');
  await sql.query('select pg_reload_conf()');
  paused = true;
  await waitUntil('recovery paused', async () => {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    try {
      const r = await c.query<{ v: string }>("select current_setting('citus.recover_2pc_interval') as v");
      return ['-1', '-1ms'].includes(r.rows[0]!.v) ? true : undefined;
    } finally {
      await c.end();
    }
  });
  ca = createTestCa();
  sim = await startBotApiSim();
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await sim?.close();
  if (paused) {
    await sql.query(
      savedInterval === null
        ? 'alter system reset citus.recover_2pc_interval'
        : `alter system set citus.recover_2pc_interval = '${savedInterval}'`,
    );
    await sql.query('select pg_reload_conf()');
  }
  await sql?.end();
  ca?.remove();
});

/** Two-phase commits this database's coordinator recorded (and recovery has not removed). */
async function twoPhaseCommits(): Promise<number> {
  const r = await sql.query<{ n: number }>('select count(*)::int as n from pg_dist_transaction');
  return r.rows[0]!.n;
}

/**
 * The records of two-phase commits made by sessions (not by Citus's own background workers, whose
 * metadata work in a database just cloned is theirs). A gid is
 * citus_<group>_<coordinator pid>_<transaction>_<connection>: the pid names the session.
 */
async function sessionRecords(): Promise<{ gid: string; groupid: number }[]> {
  const r = await sql.query<{ gid: string; groupid: number }>(
    `select gid, groupid from pg_dist_transaction
      where split_part(gid, '_', 3)::int not in (
              select pid from pg_stat_activity where backend_type <> 'client backend')
      order by gid`,
  );
  return r.rows;
}

/** The worker (its port) that holds a customer's rows. */
async function workerOf(customerId: number): Promise<number> {
  const r = await sql.query<{ port: number }>(
    `select n.nodeport as port from pg_dist_placement p join pg_dist_node n on n.groupid = p.groupid
      where p.shardid = get_shard_id_for_distribution_column('customers', $1::bigint)`,
    [customerId],
  );
  return r.rows[0]!.port;
}

interface Customer {
  id: number;
  key: string;
  worker: number;
  receiver: Receiver;
  /** The customer's owner in the chat, linked through the bot. */
  owner: SimUser;
}

/** The records of the key issues' two-phase commits (the one set-up step that makes them). */
const keyIssueGids = new Set<string>();

/** A customer with a plan, a funded test wallet, a test key and a webhook to its own receiver. */
async function newCustomer(server: ServerProcess, n: number): Promise<Customer> {
  const { customer_id: id } = await adminHttp<{ customer_id: number }>(
    server,
    'POST',
    '/admin/v1/customers',
    {
      name: `two-phase ${n}`,
    },
  );
  await adminHttp(server, 'PUT', `/admin/v1/customers/${id}/plan`, {
    label: 'standard',
    daily_limit: 3,
    per_request_usd: '0.01',
    overage: true,
    active: true,
  });
  await adminHttp(server, 'POST', `/admin/v1/customers/${id}/wallet/topup`, { mode: 'test', usd: 5 });
  // Issuing a key writes its key_directory row, a reference table with a copy on every node, in
  // the key's transaction: a two-phase commit by design (docs/running/citus.md#keys-to-customers).
  // Its records are set apart; they must be there.
  const beforeKey = new Set((await sessionRecords()).map((r) => r.gid));
  const { key } = await adminHttp<{ key: string }>(server, 'POST', `/admin/v1/customers/${id}/keys`, {
    mode: 'test',
  });
  const byKey = (await sessionRecords()).filter((r) => !beforeKey.has(r.gid));
  expect(byKey.length).toBeGreaterThan(0);
  for (const r of byKey) keyIssueGids.add(r.gid);
  const stock = await adminHttp<{ added: number }>(server, 'POST', `/admin/v1/customers/${id}/stock`, {
    mode: 'test',
    category: '60',
    codes: [`${uniqueCode('OK')}-60`, `${uniqueCode('OK')}-60`],
  });
  expect(stock.added).toBe(2);
  const receiver = await startReceiver(ca);
  receivers.push(receiver);
  const hook = await call(server, key, 'POST', '/v1/webhook', { url: receiver.url });
  expect(hook.status, JSON.stringify(hook.body)).toBe(200);
  receiver.secret = (hook.body as { secret: string }).secret;
  const owner: SimUser = { id: nextPerson++, username: `owner${nextPerson}`, first_name: 'owner' };
  const link = await adminHttp<{ token: string }>(server, 'POST', `/admin/v1/customers/${id}/bot-links`, {
    role: 'owner',
  });
  expect((await say(owner, `/start ${link.token}`)).text).toMatch(/^Linked to/);
  return { id, key, worker: await workerOf(id), receiver, owner };
}

/**
 * The bot's messages in the person's chat that answer them: an alert (the balance threshold the
 * owner sets below) comes by itself, whenever the alert loop's pass finds it, between any two replies.
 */
const replies = (who: SimUser) => sim.botMessages(who.id).filter((m) => !m.text?.includes('\nAlert: '));

/** Sends text as the person and waits for the bot's next reply in their chat. */
async function say(who: SimUser, text: string): Promise<SimMessage> {
  const before = replies(who).length;
  await sim.sendText(who, text);
  return sim.waitFor(() => replies(who)[before], 20_000);
}

/** What the customer's owner does in the chat (docs/reference/bot.md#commands), in test mode. */
async function ownerDay(c: Customer): Promise<void> {
  const who = c.owner;
  expect((await say(who, '/mode test')).text).toContain('[test]');
  expect((await say(who, '/account')).text).toContain('customer:');
  expect((await say(who, '/stock')).text).toBeDefined();
  expect((await say(who, '/alerts balance 2')).text).toBeDefined();
  expect((await say(who, '/wallet')).text).toContain('balance_usd');
  expect((await say(who, '/topup 1')).text).toBeDefined();
  const checked = await say(who, `/check ${uniqueCode('OK')}-60`);
  expect(checked.text).toMatch(/valid/);
  expect((await say(who, `/addstock 60 ${uniqueCode('OK')}-60`)).text).toMatch(/added/);
  // A redeem confirmed with its button, reported to its end; then one asked and cancelled.
  const ask = await say(who, `/redeem ${PLAYER} packs=60x1`);
  const redeemData = (
    ask.reply_markup as { inline_keyboard: { text: string; callback_data: string }[][] }
  ).inline_keyboard[0]!.find((b) => b.text === 'Redeem')!.callback_data;
  await sim.press(who, ask, redeemData);
  const ended = await sim.waitFor(
    () =>
      sim.botMessages(who.id).find((x) => x.message_id === ask.message_id && x.text?.includes('activated:'))
        ?.text,
    30_000,
  );
  expect(ended).toMatch(/activated: 1/);
  await say(who, `/redeem ${PLAYER} ${uniqueCode('OK')}-60`);
  expect((await say(who, '/cancel')).text).toBeDefined();
}

async function call(
  server: ServerProcess,
  key: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : {};
  return { status: res.status, body: json, text };
}

const redeem = (server: ServerProcess, c: Customer, codes: string[], async = false) =>
  call(
    server,
    c.key,
    'POST',
    '/v1/redeem',
    { player_id: PLAYER, codes, async },
    {
      'idempotency-key': `2pc-${uniqueCode('K')}`,
    },
  );

/** Everything a merchant does in a day, for one customer: what must commit on its worker alone. */
async function merchantDay(server: ServerProcess, c: Customer): Promise<void> {
  // Sync redeems of the caller's codes: one, then several outcomes in one request.
  const one = await redeem(server, c, [`${uniqueCode('OK')}-60`]);
  expect(one.status, one.text).toBe(200);
  const mixed = await redeem(server, c, [`${uniqueCode('OK')}-60`, uniqueCode('USED'), uniqueCode('FAIL')]);
  expect(mixed.status, mixed.text).toBe(200);
  expect((mixed.body.codes as { status: string }[]).map((x) => x.status)).toEqual([
    'activated',
    'code_used',
    'failed',
  ]);

  // From the customer's own stock: a code reserved, sent and consumed.
  const fromStock = await call(
    server,
    c.key,
    'POST',
    '/v1/redeem',
    { player_id: PLAYER, uc: 60 },
    {
      'idempotency-key': `2pc-${uniqueCode('K')}`,
    },
  );
  expect(fromStock.status, fromStock.text).toBe(200);
  expect((fromStock.body.codes as { status: string }[]).map((x) => x.status)).toEqual(['activated']);

  // An async job, run by the process's job worker; its webhook sent by its webhook worker.
  const queued = await redeem(server, c, [`${uniqueCode('OK')}-60`], true);
  expect(queued.status, queued.text).toBe(202);
  const jobId = queued.body.job_id as string;
  const job = await waitUntil(`job ${jobId}`, async () => {
    const r = await call(server, c.key, 'GET', `/v1/jobs/${jobId}`);
    expect(r.status, r.text).toBe(200);
    return r.body.status === 'completed' ? r.body : undefined;
  });
  expect((job.result as { codes: { status: string }[] }).codes.map((x) => x.status)).toEqual(['activated']);
  const [delivery] = await c.receiver.waitFor(1);
  expect(delivery!.answered).toBe(200);
  expect(delivery!.verdict).toBeNull();
  expect(JSON.parse(delivery!.raw.toString('utf8')).data.job_id).toBe(jobId);

  // The event log, and a redelivery of the event (sent and recorded by the webhook worker).
  const events = await call(server, c.key, 'GET', `/v1/events?job_id=${jobId}`);
  expect(events.status, events.text).toBe(200);
  const eventId = (events.body.events as { id: string }[])[0]!.id;
  const again = await call(server, c.key, 'POST', `/v1/events/${eventId}/redeliver`);
  expect(again.status, again.text).toBe(202);
  await c.receiver.waitFor(2);
  await waitUntil(`redelivery of ${eventId} recorded`, async () => {
    const r = await call(server, c.key, 'GET', `/v1/events/${eventId}`);
    expect(r.status, r.text).toBe(200);
    const attempts = r.body.attempts as { redelivery: boolean; status: number | null }[];
    return r.body.state === 'delivered' && attempts.some((a) => a.redelivery && a.status === 200)
      ? true
      : undefined;
  });

  // Reads: the account, the stock, the event list, a statement (JSON and CSV).
  const me = await call(server, c.key, 'GET', '/v1/me');
  expect(me.status, me.text).toBe(200);
  // Five billed (two sync redeems, the stock redeem and the job; the failed code refunded): the
  // plan's 3 included, then 2 from the wallet.
  expect(me.body.quota).toMatchObject({
    daily_limit: 3,
    used_today: 5,
    remaining_today: 0,
    overage_today: 2,
  });
  for (const path of ['/v1/stock', '/v1/events']) {
    const r = await call(server, c.key, 'GET', path);
    expect(r.status, `${path}: ${r.text}`).toBe(200);
  }
  const statement = await call(server, c.key, 'GET', '/v1/statements');
  expect(statement.status, statement.text).toBe(200);
  expect(statement.body.totals).toMatchObject({ requests_included: 3, requests_overage: 2, topups_usd: 5 });
  const csv = await call(server, c.key, 'GET', '/v1/statements', undefined, { accept: 'text/csv' });
  expect(csv.status, csv.text).toBe(200);
  expect(csv.text.split('\n').length).toBeGreaterThan(2);
}

test.runIf(onCitus)(
  "sync redeems, async jobs with their webhooks, redeliveries, reads, statements and the owners' chat of customers on every worker commit without a two-phase commit",
  { timeout: 240_000 },
  async () => {
    const started = Date.now();
    const server = await processes.start(processes.dataDir(), {
      BOT_TOKEN: sim.token,
      BOT_API_ROOT: sim.url,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      NODE_EXTRA_CA_CERTS: ca.caFile,
      // A failed attempt is not retried within the test.
      WEBHOOK_RETRY_DELAYS: '3600',
    });
    const atStart = new Set((await sessionRecords()).map((r) => r.gid));

    // Customers until every worker holds PER_WORKER of them (ids are spread by hash).
    const customers: Customer[] = [];
    const count = (w: number) => customers.filter((c) => c.worker === w).length;
    const ports = workers.map((w) => w.port);
    for (let n = 0; ports.some((p) => count(p) < PER_WORKER); n++) {
      if (n >= 40) throw new Error(`40 customers and still a worker with fewer than ${PER_WORKER}`);
      const c = await newCustomer(server, n);
      if (count(c.worker) < PER_WORKER) customers.push(c);
    }
    // The operator's set-up is one customer at a time: none either, but for the key issues.
    const setUp = await sessionRecords();
    const bySetUp = setUp.filter((r) => !atStart.has(r.gid) && !keyIssueGids.has(r.gid));
    console.log(
      `pg_dist_transaction: ${atStart.size} at the start, ${bySetUp.length} added by the set-up of ${customers.length} customers`,
      bySetUp.slice(0, 10),
    );
    expect(bySetUp).toEqual([]);
    const setUpGids = new Set(setUp.map((r) => r.gid));

    // Every customer's day at once, the API's then the chat's, then on until the sweeper has
    // passed once.
    await Promise.all(customers.map((c) => merchantDay(server, c)));
    await Promise.all(customers.map((c) => ownerDay(c)));
    const left = PAST_ONE_SWEEP_MS - (Date.now() - started);
    if (left > 0) await new Promise((r) => setTimeout(r, left));

    const added = (await sessionRecords()).filter((r) => !setUpGids.has(r.gid));
    console.log(`pg_dist_transaction: ${added.length} added by the load`, added.slice(0, 10));
    expect(added).toEqual([]);
    expect(server.output()).not.toMatch(/cannot PREPARE|two-phase|distributed transaction/i);

    // What makes one, and what does not (docs/running/citus.md#two-phase-commits), on the
    // same count. The process is stopped first, so every row added now is the check's own.
    await server.kill();
    const a = customers.find((c) => c.worker === ports[0])!;
    const b = customers.find((c) => c.worker === ports[1])!;
    const grows = async (statements: [string, unknown[]][]) => {
      const before = await twoPhaseCommits();
      await sql.query('begin');
      for (const [text, params] of statements) await sql.query(text, params);
      await sql.query('commit');
      return (await twoPhaseCommits()) - before;
    };
    const touch = 'update customers set name = name where id = $1';
    // One customer, with a coordinator table beside it: one phase.
    expect(
      await grows([
        [touch, [a.id]],
        ['update usage_rollup set rolled_until = rolled_until', []],
      ]),
    ).toBe(0);
    // A customer on each worker: one record per worker.
    expect(
      await grows([
        [touch, [a.id]],
        [touch, [b.id]],
      ]),
    ).toBe(2);
    // A write naming no customer, that changes no row: on every worker all the same.
    expect(
      await grows([["update jobs set lease_owner = lease_owner where lease_owner = 'no such process'", []]]),
    ).toBeGreaterThanOrEqual(2);
  },
);
