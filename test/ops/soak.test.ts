// A soak of live redemption: a real server process (ACTIVATOR=http) against the upstream simulator
// in this process, under a random mix of upstream faults, with concurrent sync and async redeems
// (caller codes, packs and uc from stock, retries with the same key, codes repeated across
// requests) and a few SIGKILLs of the server, each followed by a restart on the same database.
// Then the faults stop, work drains, the quarantine check settles what is unknown, the server
// stops, and the database is opened directly to check the invariants of test/helpers/invariants.ts.
// The chat bot is on (a stand-in for the Bot API in this process): owners of two customers
// redeem from the chat and top up while all that goes on (test/helpers/soak-bot.ts). Updates
// come by long polling on PGlite (a restart takes the lease over at once) and by webhook on
// PostgreSQL (where a killed poller's lease would keep the bot silent for up to 30 s; a webhook
// delivery is retried for a few seconds, about what a restart takes there).
//
// Seeded: SOAK_SEED=<n> replays the same choices (timing still varies); SOAK_MS sets the loop;
// SOAK_CHAT_LOG=1 prints the chats (every message with its edits).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { codeHash } from '../../src/core/crypto/code-crypto.ts';
import { type Database, openPglite, openPostgres } from '../../src/db/database.ts';
import { type BotApiSim, startBotApiSim } from '../../src/dev/bot-api-sim.ts';
import { createUpstreamSim, type FaultRule, type UpstreamSim } from '../../src/dev/upstream-sim.ts';
import { checkInvariants, type KnownCode } from '../helpers/invariants.ts';
import {
  adminHttp,
  freePort,
  type ServerProcess,
  startServerProcess,
  TEST_ADMIN_TOKEN,
  TEST_CODE_KEY,
} from '../helpers/process.ts';
import { createSoakChat } from '../helpers/soak-bot.ts';

const SEED = process.env.SOAK_SEED ? Number(process.env.SOAK_SEED) : (Date.now() ^ (process.pid << 8)) >>> 0;
const LOOP_MS = Number(process.env.SOAK_MS ?? 30_000);
const ON_POSTGRES = Boolean(process.env.DATABASE_URL);
const CLIENTS = 4;
const SIM_KEY = 'soak-sim-key-0123456789abcdef';
const CODE_KEY = Buffer.from(TEST_CODE_KEY, 'base64');
const TAG = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();
const CATEGORIES = ['60', '325', '660', '1800'] as const;
const UC_TARGETS = [60, 120, 385, 660, 720, 985, 1860, 2125];

/** mulberry32: small, fast, good enough to make a run reproducible from its seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(SEED);
const int = (n: number) => Math.floor(rand() * n);
const chance = (p: number) => rand() < p;
const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
const between = (lo: number, hi: number) => lo + rand() * (hi - lo);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A random fault mix with moderate rates. Calls that hang cost the client's 10 s timeout, so
 * hangs stay rare; the unhealthy answers together stay near 10 %, so the breaker (5 failures in a
 * row) seldom opens. Status checks fail now and then too, so some checks cannot tell.
 */
function faultMix(): FaultRule[] {
  return [
    { kind: 'latency', stage: 'before', rate: between(0.1, 0.4), ms: 5 + int(40) },
    { kind: 'latency', stage: 'after', rate: between(0.1, 0.3), ms: 20 + int(150) },
    { kind: 'error', path: 'status', rate: between(0.05, 0.3), status: 503 },
    { kind: 'hang', stage: 'before', rate: between(0.001, 0.005) },
    { kind: 'hang', stage: 'after', rate: between(0.001, 0.005) },
    { kind: 'error', stage: 'before', rate: between(0.005, 0.03), status: 500 },
    { kind: 'error', stage: 'after', rate: between(0.005, 0.03), status: pick([500, 502, 504]) },
    { kind: 'reset', stage: 'before', rate: between(0.003, 0.015) },
    { kind: 'reset', stage: 'after', rate: between(0.003, 0.015) },
    { kind: 'garbage', stage: pick(['before', 'after'] as const), rate: between(0.003, 0.015) },
  ];
}

interface Merchant {
  name: string;
  customerId: number;
  keys: string[];
  callerCodes: string[];
}

interface AsyncJob {
  jobId: string;
  key: string;
}

const dataDir = mkdtempSync(join(tmpdir(), 'rg-soak-'));
const serverEnv: Record<string, string> = {
  ACTIVATOR: 'http',
  ACTIVATOR_KEY: SIM_KEY,
  // A webhook of one soak customer points at a closed port on this machine: its events are
  // written (and fail), so "no webhook event for a bot job" is checked against real events.
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_DELAYS: '3600',
};
const BOT_UPDATES = ON_POSTGRES ? 'webhook' : 'polling';
let sim: UpstreamSim | undefined;
let botSim: BotApiSim | undefined;
let server: ServerProcess | undefined;
let db: Database | undefined;

afterAll(async () => {
  await server?.kill();
  await db?.close().catch(() => undefined);
  await sim?.close();
  await botSim?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Every code this run made, by lookup hash, for the invariant check. */
const known = new Map<string, KnownCode>();
let codeSeq = 0;
function newCode(kind: KnownCode['kind'], suffix: string): string {
  const code = `${kind === 'stock' ? 'S' : 'C'}-${TAG}-${(codeSeq++).toString(36).toUpperCase()}${suffix}`;
  known.set(codeHash(CODE_KEY, code), { code, kind });
  return code;
}

/** Stock codes: mostly good ones the simulator knows by their size suffix, a few it fails or does not know. */
function stockBatch(category: string, n: number): string[] {
  return Array.from({ length: n }, () => {
    if (chance(0.05)) return newCode('stock', '-BAD'); // invalid_code upstream: deleted
    if (chance(0.05)) return newCode('stock', `-FAIL-${category}`); // failed, not consumed: returned
    return newCode('stock', `-${category}`);
  });
}

const stats = {
  httpRequests: 0,
  redeems: 0,
  sync: 0,
  async: 0,
  retriesSameKey: 0,
  networkErrors: 0,
  abandoned: 0,
  resumedAfterwards: 0,
  replaysChecked: 0,
  duplicatedCodes: 0,
  kills: 0,
  midRunChecks: 0,
  restocked: 0,
  /** Operator top-ups and adjustments sent, each twice with one Idempotency-Key (one entry). */
  walletWrites: 0,
  /** Answers that made the client retry with the same key. */
  retried: {} as Record<string, number>,
  responses: {} as Record<string, number>,
  outcomes: {} as Record<string, number>,
  asyncJobs: {} as Record<string, number>,
  quarantineCheck: { rounds: 0, checked: 0, used: 0, unused: 0, unknown: 0 },
};
const bump = (m: Record<string, number>, k: string) => {
  m[k] = (m[k] ?? 0) + 1;
};
/** Client-side findings: answers the rules do not allow. */
const clientViolations: string[] = [];

function current(): ServerProcess {
  if (!server) throw new Error('no server');
  return server;
}

/** One HTTP call to the current server; null on a network error (a killed or restarting server). */
async function call(
  method: string,
  path: string,
  key: string,
  opts: { body?: unknown; idempotencyKey?: string } = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers } | null> {
  stats.httpRequests += 1;
  try {
    const res = await fetch(`${current().url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {}),
      },
      ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
      signal: AbortSignal.timeout(45_000),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
  } catch {
    stats.networkErrors += 1;
    return null;
  }
}

/** The body of one random redeem. */
function redeemBody(m: Merchant): Record<string, unknown> {
  const player = chance(0.05) ? `000${100000 + int(899999)}` : `5${100000000 + int(899999999)}`;
  const async = chance(0.35);
  const r = rand();
  let source: Record<string, unknown>;
  if (r < 0.45) {
    const codes = new Set<string>();
    const n = 1 + int(4);
    while (codes.size < n) {
      if (m.callerCodes.length > 0 && chance(0.15)) {
        codes.add(pick(m.callerCodes));
        stats.duplicatedCodes += 1;
        continue;
      }
      const roll = rand();
      const code =
        roll < 0.08
          ? newCode('caller', '-XX') // unknown upstream: invalid_code
          : roll < 0.12
            ? newCode('caller', `-FAIL-${pick(CATEGORIES)}`)
            : newCode('caller', `-${pick(CATEGORIES)}`);
      m.callerCodes.push(code);
      codes.add(code);
    }
    source = { codes: [...codes] };
  } else if (r < 0.85) {
    const packs: Record<string, number> = {};
    for (let i = 1 + int(2); i > 0; i--) packs[pick(CATEGORIES)] = 1 + int(2);
    source = { packs };
  } else {
    source = { uc: pick(UC_TARGETS) };
  }
  return { player_id: player, ...source, ...(async ? { async: true } : {}), reference: `soak-${int(1e6)}` };
}

function recordCodes(codes: unknown) {
  for (const c of (codes ?? []) as { status: string; disposition: string }[]) {
    bump(stats.outcomes, `${c.status}/${c.disposition}`);
  }
}

interface RedeemCall {
  key: string;
  body: Record<string, unknown>;
  idempotencyKey: string;
}

/** Requests given up on during the loop (a dead process's key stays in progress until its lease ends). */
const abandonedCalls: RedeemCall[] = [];

/** One redeem with a fresh key. */
async function redeemOnce(client: number, m: Merchant, asyncJobs: AsyncJob[]) {
  const body = redeemBody(m);
  stats.redeems += 1;
  if (body.async) stats.async += 1;
  else stats.sync += 1;
  await sendRedeem(
    { key: pick(m.keys), body, idempotencyKey: `soak-${TAG}-${client}-${codeSeq++}-${int(1e9)}` },
    asyncJobs,
    8,
  );
}

/** Sends a redeem, retried with the same key after network errors, 5xx and 409 in progress. */
async function sendRedeem(req: RedeemCall, asyncJobs: AsyncJob[], maxRetries: number) {
  const { key, body, idempotencyKey } = req;
  let waits = 0;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) stats.retriesSameKey += 1;
    const res = await call('POST', '/v1/redeem', key, { body, idempotencyKey });
    const errorCode = res ? String(res.body.error_code ?? '') : 'network';
    // A 429 takes no key: a polite client waits as told and sends the same request again.
    if (errorCode === 'rate_limited' && waits++ < 5) {
      bump(stats.responses, '429 rate_limited (waited)');
      await sleep(Number(res!.body.retry_after_sec ?? 1) * 1000);
      attempt -= 1;
      continue;
    }
    const retry =
      res === null ||
      (res.status >= 500 && errorCode !== 'job_interrupted') ||
      errorCode === 'idempotency_in_progress';
    if (retry) bump(stats.retried, res ? `${res.status} ${errorCode}` : 'network');
    if (retry && attempt < maxRetries) {
      await sleep(300 + int(900));
      continue;
    }
    if (retry) {
      stats.abandoned += 1;
      abandonedCalls.push(req);
      bump(stats.responses, res ? `${res.status} ${errorCode} (abandoned)` : 'network (abandoned)');
      return;
    }
    if (!res) return;
    bump(stats.responses, `${res.status}${errorCode ? ` ${errorCode}` : ''}`);
    // Refused for quota or funds: such a merchant does not hammer the API.
    if (res.status === 402 || res.status === 429) await sleep(200 + int(300));
    if (res.status === 202) {
      asyncJobs.push({ jobId: String(res.body.job_id), key });
      return;
    }
    if (res.status !== 200 && res.status !== 422) return;
    if (!Array.isArray(res.body.codes)) return; // a 422 refusal (idempotency_conflict) has no codes
    recordCodes(res.body.codes);
    const b = res.body as { billed_requests: number; refunded_requests: number; codes: unknown[] };
    if (b.billed_requests + b.refunded_requests !== b.codes.length)
      clientViolations.push(`billed + refunded != codes in ${JSON.stringify(b)}`);
    // Now and then, the same key again: the stored answer, identical, not billed again.
    if (chance(0.08)) {
      let again = await call('POST', '/v1/redeem', key, { body, idempotencyKey });
      for (let i = 0; i < 5 && again?.body.error_code === 'rate_limited'; i++) {
        await sleep(Number(again.body.retry_after_sec ?? 1) * 1000);
        again = await call('POST', '/v1/redeem', key, { body, idempotencyKey });
      }
      if (again && again.body.error_code !== 'rate_limited') {
        stats.replaysChecked += 1;
        if (
          again.status !== res.status ||
          again.headers.get('svc-idempotent-replay') !== 'true' ||
          JSON.stringify(again.body) !== JSON.stringify(res.body)
        )
          clientViolations.push(
            `replay differs: ${res.status} ${JSON.stringify(res.body)} then ${again.status} ${JSON.stringify(again.body)}`,
          );
      }
    }
    return;
  }
}

async function startServer(simUrl: string) {
  const env = { ...serverEnv, ACTIVATOR_URL: simUrl };
  if (BOT_UPDATES === 'polling') return startServerProcess({ dataDir, env });
  // Webhook mode: the public port is fixed before the start, since the webhook URL names it.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await startServerProcess({
        dataDir,
        env: { ...env, PORT: String(port), BOT_WEBHOOK_URL: `http://127.0.0.1:${port}/bot/updates` },
      });
    } catch (err) {
      if (attempt >= 3 || !/EADDRINUSE/.test(String((err as Error).message))) throw err;
    }
  }
}

async function createMerchant(
  name: string,
  plan: { daily_limit: number | null; per_request_usd: string; overage: boolean },
  usd: number,
): Promise<Merchant> {
  const s = current();
  const { customer_id: customerId } = await adminHttp<{ customer_id: number }>(
    s,
    'POST',
    '/admin/v1/customers',
    {
      name,
    },
  );
  await adminHttp(s, 'PUT', `/admin/v1/customers/${customerId}/plan`, { label: name, ...plan, active: true });
  await adminHttp(s, 'POST', `/admin/v1/customers/${customerId}/wallet/topup`, { mode: 'live', usd });
  const keys: string[] = [];
  // Several keys: the burst limit (30 per key per 10 s) is not what this soak is about.
  for (let i = 0; i < 3; i++) {
    keys.push(
      (
        await adminHttp<{ key: string }>(s, 'POST', `/admin/v1/customers/${customerId}/keys`, {
          mode: 'live',
        })
      ).key,
    );
  }
  for (const category of CATEGORIES) await importStock(customerId, category, category === '60' ? 60 : 40);
  return { name, customerId, keys, callerCodes: [] };
}

/**
 * A top-up or a small adjustment (either sign; a refused one is fine), sent twice under one
 * Idempotency-Key while redeems run: the ledger must show it once (checkInvariants).
 */
const walletKeysTaken = new Set<string>();
async function walletWrite(customerId: number) {
  const topup = chance(0.5);
  const path = `/admin/v1/customers/${customerId}/wallet/${topup ? 'topup' : 'adjust'}`;
  const body = topup
    ? { mode: 'live', usd: `${1 + int(5)}.25` }
    : { mode: 'live', usd: `${chance(0.5) ? '-' : ''}0.0${1 + int(9)}`, reason: 'soak correction' };
  const key = `soak-${Date.now()}-${int(1e9)}`;
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${current().adminUrl}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify(body),
    });
    if (res.status === 200) walletKeysTaken.add(key);
  }
  stats.walletWrites += 1;
}

async function importStock(customerId: number, category: string, n: number) {
  const r = await adminHttp<{ added: number }>(current(), 'POST', `/admin/v1/customers/${customerId}/stock`, {
    mode: 'live',
    category,
    codes: stockBatch(category, n),
  });
  expect(r.added).toBe(n);
}

/** Output of every server process of the run, for its error lines. */
const logs: string[] = [];

/**
 * The error (and fatal) log lines of the servers, shortened, with how often each message came;
 * with `minLevel` 40 and a prefix, the warnings too (the bot's, for the report).
 */
function serverErrors(outputs: string[], minLevel = 50, prefix = ''): string[] {
  const seen = new Map<string, number>();
  for (const line of outputs.join('\n').split('\n')) {
    if (!line.trim()) continue;
    let entry: {
      level?: number;
      msg?: string;
      err?: { message?: string; stack?: string; description?: string };
    };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      // The start banner is plain text; anything else that looks like a crash counts.
      if (!/error|exception|fatal/i.test(line)) continue;
      entry = { level: 60, msg: line.slice(0, 300) };
    }
    if ((entry.level ?? 0) < minLevel || !String(entry.msg).startsWith(prefix)) continue;
    const where =
      entry.err?.stack?.split('\n').slice(0, 4).join(' | ') ??
      entry.err?.message ??
      entry.err?.description ??
      '';
    const text = `${entry.msg}: ${where}`;
    seen.set(text, (seen.get(text) ?? 0) + 1);
  }
  return [...seen].map(([text, n]) => `${n}× ${text}`);
}

const drained = new Set<string>();

/** Waits until no job is queued or running (bounded). */
async function drainJobs(asyncJobs: AsyncJob[], deadline: number) {
  // Each job is polled to its end once; a replayed 202 may name one again.
  const open = new Set(asyncJobs.splice(0).filter((j) => !drained.has(j.jobId)));
  while (Date.now() < deadline) {
    for (const j of [...open]) {
      const res = await call('GET', `/v1/jobs/${j.jobId}`, j.key);
      if (res?.status !== 200) continue;
      const status = String(res.body.status);
      if (status === 'queued' || status === 'running') continue;
      open.delete(j);
      drained.add(j.jobId);
      bump(stats.asyncJobs, status);
      const result = res.body.result as { codes?: unknown } | null;
      if (status === 'completed') recordCodes(result?.codes);
      else recordCodes((res.body.error as { codes?: unknown } | null)?.codes);
    }
    // On PostgreSQL a dead process's sync jobs are only visible in the table.
    const unfinished = ON_POSTGRES
      ? (
          await db!.query<{ n: number }>(
            `select count(*)::int as n from jobs where status in ('queued', 'running')`,
          )
        ).rows[0]!.n
      : 0;
    // Bot redeems (and, on PGlite, a dead process's sync jobs) through the admin API.
    let adminUnfinished = 0;
    for (const status of ['queued', 'running']) {
      const r = await adminHttp<{ jobs: unknown[] }>(
        current(),
        'GET',
        `/admin/v1/jobs?status=${status}&limit=1`,
      ).catch(() => ({ jobs: [null] }));
      adminUnfinished += r.jobs.length;
    }
    if (open.size === 0 && unfinished === 0 && adminUnfinished === 0) return;
    await sleep(500);
  }
  throw new Error(`jobs still unfinished after the wait: ${open.size} async jobs polled`);
}

/** The operator's check until nothing is left quarantined (the breaker may need its 30 s). */
async function settleQuarantine(deadline: number) {
  while (Date.now() < deadline) {
    const s = current();
    const summary = await adminHttp<{ checked: number; used: number; unused: number; unknown: number }>(
      s,
      'POST',
      '/admin/v1/quarantine/check',
      {},
    );
    stats.quarantineCheck.rounds += 1;
    for (const k of ['checked', 'used', 'unused', 'unknown'] as const) stats.quarantineCheck[k] += summary[k];
    const left = await adminHttp<{ codes: unknown[] }>(s, 'GET', '/admin/v1/quarantine');
    if (left.codes.length === 0) return;
    await sleep(1000);
  }
  throw new Error('quarantined codes still unsettled after the wait');
}

test('soak: random upstream faults and process kills, then every invariant holds', async () => {
  const started = Date.now();
  console.log(`soak: seed ${SEED} (SOAK_SEED=${SEED} to replay), ${ON_POSTGRES ? 'PostgreSQL' : 'PGlite'}`);
  sim = createUpstreamSim({ key: SIM_KEY, random: prng(SEED ^ 0x5bd1e995) });
  const simUrl = await sim.listen();
  botSim = await startBotApiSim();
  Object.assign(serverEnv, {
    BOT_TOKEN: botSim.token,
    BOT_API_ROOT: botSim.url,
    BOT_UPDATES,
    BOT_WEBHOOK_SECRET: 'soak-bot-webhook-secret-0123456789',
  });
  server = await startServer(simUrl);
  if (ON_POSTGRES) db = await openPostgres(process.env.DATABASE_URL!, { max: 2 });

  const merchants = [
    await createMerchant('capped-overage', { daily_limit: 40, per_request_usd: '0.01', overage: true }, 20),
    await createMerchant('uncapped', { daily_limit: null, per_request_usd: '0.02', overage: true }, 50),
    await createMerchant(
      'capped-no-overage',
      { daily_limit: 60, per_request_usd: '0.01', overage: false },
      5,
    ),
    // A small wallet: runs out during the soak (402 insufficient_funds).
    await createMerchant('uncapped-poor', { daily_limit: null, per_request_usd: '0.05', overage: true }, 4),
  ];

  // A webhook (to nowhere) for the first customer's live events; owners of the first two in the chat.
  const closedPort = await freePort();
  const hook = await call('POST', '/v1/webhook', merchants[0]!.keys[0]!, {
    body: { url: `https://127.0.0.1:${closedPort}/hook` },
  });
  expect(hook?.status).toBe(200);
  const chat = createSoakChat({
    sim: botSim,
    random: { rand, int, chance, pick },
    server: current,
    newCallerCode: (suffix) => newCode('caller', suffix),
    categories: CATEGORIES,
    ucTargets: UC_TARGETS,
  });
  const userBase = 90_000_000 + int(1_000_000);
  for (const [i, m] of merchants.slice(0, 2).entries())
    await chat.link(m, { id: userBase + i, username: `soak${userBase + i}`, first_name: `owner${i}` });

  sim.setFaults(faultMix());
  const loopStart = Date.now();
  const loopEnd = loopStart + LOOP_MS;
  // Kill times: on PostgreSQL the last one leaves room for the 30 s lease and a sweep.
  const killWindows = ON_POSTGRES
    ? [[0.08, 0.22], [0.3, 0.45], ...(chance(0.5) ? [[0.5, 0.6]] : [])]
    : [[0.12, 0.28], [0.38, 0.55], ...(chance(0.7) ? [[0.65, 0.82]] : [])];
  const killAt = killWindows.map(([lo, hi]) => loopStart + between(lo!, hi!) * LOOP_MS);
  const asyncJobs: AsyncJob[] = [];
  let killedInFlight = 0;
  const killTimes: string[] = [];

  const client = async (n: number) => {
    while (Date.now() < loopEnd) {
      // Mostly the two well-funded merchants; the two that run out (quota, funds) less often.
      const m = chance(0.8) ? merchants[int(2)]! : merchants[2 + int(2)]!;
      await redeemOnce(n, m, asyncJobs);
      if (chance(0.3)) await sleep(int(150));
    }
  };
  const chaos = async () => {
    for (const at of killAt) {
      await sleep(Math.max(0, at - Date.now()));
      // Kill while codes are out with the upstream (bounded wait): the case recovery must settle.
      for (let i = 0; i < 40 && sim!.stats().inFlight === 0; i++) await sleep(50);
      killedInFlight += sim!.stats().inFlight;
      killTimes.push(new Date().toISOString());
      await current().kill('SIGKILL');
      logs.push(current().output());
      stats.kills += 1;
      server = await startServer(simUrl);
    }
  };
  const operator = async () => {
    let next = Date.now() + 4000;
    while (Date.now() < loopEnd) {
      await sleep(250);
      if (Date.now() < next) continue;
      next = Date.now() + 3000 + int(3000);
      try {
        // Money moved by an operator while redeems run: the ledger must still equal the balance.
        await walletWrite(pick(merchants).customerId);
        if (chance(0.5)) {
          const m = pick(merchants);
          await importStock(m.customerId, pick(CATEGORIES), 20);
          stats.restocked += 20;
        } else {
          // A check while redeems run: settled-unused stock goes back and is drawn again.
          await adminHttp(current(), 'POST', '/admin/v1/quarantine/check', {});
          stats.midRunChecks += 1;
        }
        if (chance(0.3)) sim!.setFaults(faultMix());
      } catch {
        // the server is being killed or restarted
      }
    }
  };
  await Promise.all([
    ...Array.from({ length: CLIENTS }, (_, i) => client(i)),
    chaos(),
    operator(),
    chat.run(loopEnd),
    chat.operate(loopEnd),
    chat.flood(
      merchants[2]!,
      { id: userBase + 9, username: `flood${userBase}`, first_name: 'flooder' },
      loopEnd,
    ),
  ]);
  const loopMs = Date.now() - loopStart;

  // Quiet: no more faults, let every job finish, settle what is unknown, stop the server.
  sim.setFaults([]);
  await drainJobs(asyncJobs, Date.now() + (ON_POSTGRES ? 70_000 : 40_000));
  // The same keys again now that their jobs are settled: a sync one resumes from its recorded
  // outcomes (never re-sending a code already attempted), an async one replays its 202 or 503.
  const abandoned = abandonedCalls.splice(0);
  stats.resumedAfterwards = abandoned.length;
  for (const req of abandoned) await sendRedeem(req, asyncJobs, 10);
  await drainJobs(asyncJobs, Date.now() + 30_000);
  // The operator's last round at the top-up desk: requests made at the end of the loop.
  await chat.operate(0);
  await settleQuarantine(Date.now() + 45_000);
  await current().kill('SIGTERM');
  const exit = current().child.exitCode;
  if (exit !== 0) console.log(`soak: server exit ${exit}\n${current().output().slice(-4000)}`);
  logs.push(current().output());
  server = undefined;
  if (!ON_POSTGRES) db = await openPglite(join(dataDir, 'pglite'));

  chat.flooded();
  const simStats = sim.stats();
  const told = chat.tallyEnds();
  const report = await checkInvariants(db!, {
    codes: known,
    upstream: { redemption: (c) => sim!.redemption(c), redeemedCount: () => sim!.stats().redeemed },
    botTopups: chat.topups,
  });
  console.log(
    `soak: ${JSON.stringify(
      {
        seed: SEED,
        database: ON_POSTGRES ? 'postgres' : 'pglite',
        loopMs,
        totalMs: Date.now() - started,
        ...stats,
        upstreamCallsOutAtKills: killedInFlight,
        bot: { updates: BOT_UPDATES, ...chat.stats },
        upstream: {
          requests: simStats.requests,
          maxInFlight: simStats.maxInFlight,
          faults: simStats.faults,
        },
        database_state: report.counts,
        observations: report.observations,
        violations: report.violations.length,
      },
      null,
      1,
    )}`,
  );
  // Not a money matter, so printed rather than asserted: a bot redeem whose end the chat was never told.
  const untold = (
    await db!.query<{ id: string; jobId: string; finishedAt: Date; jobFinishedAt: Date }>(
      `select b.id, b.job_id as "jobId", b.finished_at as "finishedAt", j.finished_at as "jobFinishedAt"
         from bot_redeems b join jobs j on j.customer_id = b.customer_id and j.id = b.job_id order by b.created_at`,
    )
  ).rows.filter((r) => !told.has(r.jobId));
  if (untold.length)
    console.log(
      `soak: bot redeems whose end the chat never saw (kills at ${killTimes.join(', ')}):\n${untold
        .map(
          (r) =>
            `${r.id} ${r.jobId} job finished ${r.jobFinishedAt?.toISOString?.() ?? r.jobFinishedAt} end claimed ${r.finishedAt?.toISOString?.() ?? r.finishedAt}`,
        )
        .join('\n')}`,
    );
  const errors = serverErrors(logs);
  if (errors.length) console.log(`soak: server errors:\n${errors.join('\n')}`);
  const botWarnings = serverErrors(logs, 40, 'bot:');
  if (botWarnings.length) console.log(`soak: the bot's warnings:\n${botWarnings.join('\n')}`);
  if (process.env.SOAK_CHAT_LOG) console.log(`soak: the chats\n${chat.transcript()}`);
  if (report.violations.length) console.log(`soak violations:\n${report.violations.slice(0, 60).join('\n')}`);
  expect(clientViolations).toEqual([]);
  expect(report.violations).toEqual([]);
  // Upstream faults and kills are normal weather: nothing on the service side may crash
  // (no error logged, no job failed with internal, no 500 internal answered).
  expect(errors).toEqual([]);
  expect(report.counts.jobs).not.toHaveProperty('failed');
  const internal = [...Object.keys(stats.responses), ...Object.keys(stats.retried)].filter((k) =>
    k.startsWith('500'),
  );
  expect(internal).toEqual([]);
  // The soak exercised what it is for.
  expect(stats.kills).toBeGreaterThanOrEqual(2);
  expect(stats.walletWrites).toBeGreaterThan(0);
  // A key sent twice wrote one entry at most (each entry's audit row is checked 1:1 against the
  // ledger), and every key answered 200 wrote one. (A key whose answers a kill lost may have.)
  const soakEntries = await db!.query<{ key: string; n: number }>(
    `select details->>'idempotency_key' as key, count(*)::int as n from audit_events
      where details->>'idempotency_key' like 'soak-%' group by 1`,
  );
  expect(soakEntries.rows.filter((r) => r.n !== 1)).toEqual([]);
  const written = new Set(soakEntries.rows.map((r) => r.key));
  expect([...walletKeysTaken].filter((k) => !written.has(k))).toEqual([]);
  expect(report.counts.upstreamRedeemed).toBeGreaterThan(0);
  // The chat took part: manual redeems ran as bot jobs, and the webhook check saw real events.
  expect(
    Object.values(report.counts.botJobs as Record<string, number>).reduce((a, b) => a + b, 0),
  ).toBeGreaterThan(0);
  expect(chat.stats.testTopupsSent + chat.stats.liveRequestsSent).toBeGreaterThan(0);
  expect(report.counts.webhookEvents).toBeGreaterThan(0);
  // Floods are limited when they arrive: at most 20 answers a burst (a restart between a burst's
  // arrival and its handling reads its unhandled updates again, in a new window: 20 more each).
  expect(chat.stats.floods).toBeGreaterThan(0);
  expect(chat.stats.floodAnswers).toBeLessThanOrEqual(20 * (chat.stats.floods + stats.kills));
}, 170_000);
