// Redeems through a real server process while a Citus cluster is changed under it (a shard group
// moved, a worker stopped), for test/db/citus-faults.test.ts: merchants with live keys served by
// the upstream simulator, a client that retries a 503 or an idempotency_in_progress with the same
// Idempotency-Key until the answer is final (as docs/merchants/first-hour.md tells merchants to),
// every answer recorded with its time, and the checks that each merchant's account adds up to the
// codes the simulator activated.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type pg from 'pg';
import type { UpstreamSim } from '../../src/dev/upstream-sim.ts';
import { adminHttp, type ServerProcess, waitUntil } from './process.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const PLAYER = '5123456789';
const TOPUP_USD = 100;
const RATE_MICROS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Node {
  host: string;
  port: number;
}

export interface Merchant {
  label: string;
  customerId: number;
  /** Live keys: one per client loop (the burst limit counts per key). */
  keys: string[];
  /** Every code sent for this merchant. */
  sent: string[];
  /** Codes a final answer said were activated. */
  activated: string[];
}

/** One HTTP answer (or a transport failure) the clients saw. */
export interface Answer {
  merchant: string;
  /** `POST /v1/redeem`, `GET /v1/jobs`, `GET /v1/me`. */
  path: string;
  /** When the request was sent and how long its answer took (ms). */
  at: number;
  ms: number;
  status: number | 'network';
  errorCode?: string;
}

/** What the clients saw: every answer, and the answers the rules do not allow. */
export interface ClientLog {
  answers: Answer[];
  /** Async jobs: when each was accepted and how long until GET /v1/jobs/{id} said it ended (ms). */
  jobs: { merchant: string; at: number; ms: number }[];
  violations: string[];
}

export const newClientLog = (): ClientLog => ({ answers: [], jobs: [], violations: [] });

/** Answers counted by request and status (`POST /v1/redeem 503 unavailable`, …), for what the test prints. */
export function byStatus(answers: Answer[]): { [status: string]: number } {
  const out: { [status: string]: number } = {};
  for (const a of answers) {
    const k = `${a.path} ${a.status}${a.errorCode ? ` ${a.errorCode}` : ''}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** cluster.sh of the shared Citus folder beside the project (as .ci/run finds it), or null. */
export function clusterScript(): string | null {
  const candidates = [join(ROOT, '..', 'shared', 'citus', 'cluster.sh'), '/work/shared/citus/cluster.sh'];
  return candidates.find((p) => existsSync(p)) ?? null;
}

/** `cluster.sh stop-node|start-node DIR PORT`, timed (ms). */
export async function clusterNode(
  script: string,
  action: 'stop-node' | 'start-node',
  dir: string,
  port: number,
) {
  const started = performance.now();
  await run('bash', [script, action, dir, String(port)]);
  return Math.round(performance.now() - started);
}

/** The worker holding a customer's shard group (its `customers` row), and that shard. */
export async function placementOf(admin: pg.Client, customerId: number): Promise<Node & { shard: string }> {
  const r = await admin.query<{ host: string; port: number; shard: string }>(
    `select n.nodename as host, n.nodeport as port, p.shardid::text as shard
       from pg_dist_placement p join pg_dist_node n on n.groupid = p.groupid
      where p.shardid = get_shard_id_for_distribution_column('customers', $1::bigint)`,
    [customerId],
  );
  if (r.rows.length !== 1) throw new Error(`customer ${customerId} has ${r.rows.length} placements`);
  return r.rows[0]!;
}

/** A customer with an uncapped plan (every request billed from the wallet), a funded live wallet and a live key. */
export async function liveMerchant(server: ServerProcess, label: string, nKeys = 3): Promise<Merchant> {
  const { customer_id: customerId } = await adminHttp<{ customer_id: number }>(
    server,
    'POST',
    '/admin/v1/customers',
    { name: label },
  );
  await adminHttp(server, 'PUT', `/admin/v1/customers/${customerId}/plan`, {
    label: 'citus faults',
    daily_limit: null,
    per_request_usd: '0.01',
    overage: true,
    active: true,
  });
  await adminHttp(server, 'POST', `/admin/v1/customers/${customerId}/wallet/topup`, {
    mode: 'live',
    usd: TOPUP_USD,
  });
  const keys: string[] = [];
  for (let i = 0; i < nKeys; i++) {
    const { key } = await adminHttp<{ key: string }>(
      server,
      'POST',
      `/admin/v1/customers/${customerId}/keys`,
      {
        mode: 'live',
      },
    );
    keys.push(key);
  }
  return { label, customerId, keys, sent: [], activated: [] };
}

/**
 * One request sent until its answer is final: a 503 (checked to be the error body of
 * docs/reference/running.md#database-loss, with Retry-After), a 429 or a 409
 * idempotency_in_progress is sent again with the same Idempotency-Key after the Retry-After it
 * names (at most `retryCapMs`); so is a transport failure. Every answer is recorded. Gives up
 * after `giveUpMs` (a violation).
 */
export async function untilFinal(
  server: ServerProcess,
  m: Merchant,
  rec: ClientLog,
  req: { method: 'GET' | 'POST'; path: string; body?: unknown; idempotencyKey?: string; key?: number },
  opts: { giveUpMs?: number; retryCapMs?: number } = {},
): Promise<{ status: number; body: { [k: string]: unknown } } | null> {
  const giveUpMs = opts.giveUpMs ?? 120_000;
  const retryCapMs = opts.retryCapMs ?? 500;
  const path = `${req.method} ${req.path.replace(/\/job_\w+$/, '')}`;
  const waitFor = (res: Response) =>
    sleep(Math.min(retryCapMs, 1000 * Number(res.headers.get('retry-after') || 1)));
  const deadline = Date.now() + giveUpMs;
  while (Date.now() < deadline) {
    const at = Date.now();
    let res: Response;
    let body: { [k: string]: unknown };
    try {
      res = await fetch(`${server.url}${req.path}`, {
        method: req.method,
        headers: {
          authorization: `Bearer ${m.keys[req.key ?? 0]}`,
          ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(req.idempotencyKey ? { 'idempotency-key': req.idempotencyKey } : {}),
        },
        ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
        signal: AbortSignal.timeout(30_000),
      });
      body = (await res.json()) as typeof body;
    } catch (err) {
      rec.answers.push({ merchant: m.label, path, at, ms: Date.now() - at, status: 'network' });
      rec.violations.push(`${m.label} ${req.method} ${req.path}: no answer (${(err as Error).message})`);
      await sleep(250);
      continue;
    }
    const errorCode = typeof body.error_code === 'string' ? body.error_code : undefined;
    rec.answers.push({
      merchant: m.label,
      path,
      at,
      ms: Date.now() - at,
      status: res.status,
      ...(errorCode ? { errorCode } : {}),
    });
    if (res.status === 503) {
      const expected = {
        ok: false,
        error_code: 'unavailable',
        message: 'the service cannot reach its database; retry shortly',
        request_id: res.headers.get('x-request-id'),
      };
      if (JSON.stringify(body) !== JSON.stringify(expected))
        rec.violations.push(`${m.label} ${req.path}: 503 with body ${JSON.stringify(body)}`);
      const retryAfter = Number(res.headers.get('retry-after'));
      if (!Number.isInteger(retryAfter) || retryAfter < 1)
        rec.violations.push(`${m.label} ${req.path}: 503 with Retry-After ${res.headers.get('retry-after')}`);
      await waitFor(res);
      continue;
    }
    if (res.status === 429 || (res.status === 409 && errorCode === 'idempotency_in_progress')) {
      await waitFor(res);
      continue;
    }
    return { status: res.status, body };
  }
  rec.violations.push(`${m.label} ${req.method} ${req.path}: no final answer in ${giveUpMs} ms`);
  return null;
}

let serial = 0;
const TAG = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();

/**
 * One redeem of `n` new codes the simulator activates (sync, or async and then its job polled to
 * the end), sent until final; the codes a final answer calls activated are kept on the merchant.
 */
export async function redeemOnce(
  server: ServerProcess,
  m: Merchant,
  rec: ClientLog,
  opts: { async: boolean; n: number; key?: number; mark?: string },
) {
  const mark = opts.mark ? `${opts.mark}-` : '';
  const codes = Array.from(
    { length: opts.n },
    () => `CF-${TAG}-${mark}${(serial++).toString(36).toUpperCase()}-60`,
  );
  m.sent.push(...codes);
  const idempotencyKey = `cf-${TAG}-${serial++}`;
  const first = await untilFinal(server, m, rec, {
    method: 'POST',
    path: '/v1/redeem',
    body: { player_id: PLAYER, codes, ...(opts.async ? { async: true } : {}) },
    idempotencyKey,
    key: opts.key ?? 0,
  });
  if (!first) return;
  let done = first;
  if (opts.async) {
    if (first.status !== 202) {
      rec.violations.push(`${m.label} async redeem: ${first.status} ${JSON.stringify(first.body)}`);
      return;
    }
    const jobId = String(first.body.job_id);
    const accepted = Date.now();
    for (;;) {
      const job = await untilFinal(server, m, rec, {
        method: 'GET',
        path: `/v1/jobs/${jobId}`,
        key: opts.key ?? 0,
      });
      if (!job) return;
      if (job.status !== 200) {
        rec.violations.push(`${m.label} GET job ${jobId}: ${job.status} ${JSON.stringify(job.body)}`);
        return;
      }
      if (
        job.body.status === 'completed' ||
        job.body.status === 'failed' ||
        job.body.status === 'interrupted'
      ) {
        done = job;
        rec.jobs.push({ merchant: m.label, at: accepted, ms: Date.now() - accepted });
        break;
      }
      await sleep(100);
    }
  } else if (first.status !== 200) {
    rec.violations.push(`${m.label} redeem: ${first.status} ${JSON.stringify(first.body)}`);
    return;
  }
  // A job's answer holds the redeem's result once completed (docs/reference/jobs.md).
  if (opts.async && done.body.status !== 'completed')
    rec.violations.push(`${m.label} job ${String(done.body.job_id)} ended ${String(done.body.status)}`);
  const result = opts.async ? (done.body.result as { codes?: unknown } | null) : done.body;
  const outcomes = (result?.codes ?? []) as { code: string; status: string }[];
  if (outcomes.length !== codes.length)
    rec.violations.push(`${m.label}: ${codes.length} codes sent, ${outcomes.length} outcomes answered`);
  for (const o of outcomes) {
    if (o.status === 'activated') m.activated.push(o.code);
    else rec.violations.push(`${m.label}: code ${o.code} ended ${o.status}`);
  }
}

/**
 * Redeems one after another for `m` with its key number `key` until `running()` says stop, at
 * most one every 400 ms (under the burst limit of 30 in 10 s per key); every `asyncEvery`-th is async.
 */
export async function redeemLoop(
  server: ServerProcess,
  m: Merchant,
  rec: ClientLog,
  running: () => boolean,
  opts: { key: number; asyncEvery?: number },
) {
  const every = opts.asyncEvery ?? 0;
  for (let i = 1; running(); i++) {
    const pace = sleep(400);
    await redeemOnce(server, m, rec, { async: every > 0 && i % every === 0, n: 1 + (i % 2), key: opts.key });
    await pace;
  }
}

/** The quarantine check run until nothing is left in quarantine (outcomes lost to a fault get settled). */
export async function settleQuarantine(server: ServerProcess) {
  await waitUntil(
    'the quarantine to be empty',
    async () => {
      await adminHttp(server, 'POST', '/admin/v1/quarantine/check', {});
      const left = await adminHttp<{ codes: unknown[] }>(server, 'GET', '/admin/v1/quarantine');
      return left.codes.length === 0 ? true : undefined;
    },
    60_000,
  );
}

/**
 * Each merchant's account against the simulator: the codes it activated for the merchant are the
 * codes the final answers called activated, `used_today` of GET /v1/me, today's usage row, the
 * wallet (each at 0.01 USD, the ledger's sum, no hold left) and its jobs (all ended, the holds
 * captured). Returns the differences found, empty when every account adds up.
 */
export async function accountsAddUp(
  server: ServerProcess,
  db: pg.Client,
  sim: UpstreamSim,
  merchants: Merchant[],
  rec: ClientLog,
): Promise<string[]> {
  const wrong: string[] = [];
  for (const m of merchants) {
    const upstream = m.sent.filter((c) => sim.redemption(c) !== undefined).length;
    if (m.activated.length !== upstream)
      wrong.push(`${m.label}: answers say ${m.activated.length} activated, the simulator ${upstream}`);
    const me = await untilFinal(server, m, rec, { method: 'GET', path: '/v1/me' });
    const quota = me?.body.quota as { used_today: number; overage_today: number } | undefined;
    if (quota?.used_today !== upstream)
      wrong.push(`${m.label}: used_today ${quota?.used_today}, simulator ${upstream}`);
    const rows = await db.query<{
      used: number | null;
      overage: number | null;
      balance: string;
      held: string;
      ledger: string;
      unfinished: number;
      captured: number;
    }>(
      `select (select used from daily_usage u where u.customer_id = a.customer_id and u.mode = a.mode
                  and u.day = (now() at time zone 'utc')::date) as used,
              (select overage from daily_usage u where u.customer_id = a.customer_id and u.mode = a.mode
                  and u.day = (now() at time zone 'utc')::date) as overage,
              a.balance_micros::text as balance, a.held_micros::text as held,
              (select coalesce(sum(amount_micros), 0) from wallet_ledger l
                where l.customer_id = a.customer_id and l.mode = a.mode)::text as ledger,
              (select count(*) from jobs j where j.customer_id = a.customer_id
                  and j.status in ('queued', 'running'))::int as unfinished,
              (select coalesce(sum(captured_included + captured_wallet), 0) from jobs j
                where j.customer_id = a.customer_id)::int as captured
         from accounts a where a.customer_id = $1 and a.mode = 'live'`,
      [m.customerId],
    );
    const r = rows.rows[0];
    const balance = String(TOPUP_USD * 1_000_000 - upstream * RATE_MICROS);
    const seen = r && {
      used: r.used,
      overage: r.overage,
      balance: r.balance,
      held: r.held,
      ledger: r.ledger,
      unfinished: r.unfinished,
      captured: r.captured,
    };
    const expected = {
      used: upstream,
      overage: upstream,
      balance,
      held: '0',
      ledger: balance,
      unfinished: 0,
      captured: upstream,
    };
    if (JSON.stringify(seen) !== JSON.stringify(expected))
      wrong.push(`${m.label}: account rows ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}`);
  }
  return wrong;
}
