// The invariants a quiet database must satisfy after any mix of redeems, upstream faults and
// process kills (docs/reference/billing-and-quota.md#billing-a-redeem, docs/reference/redeem.md#the-request, docs/reference/jobs.md#interrupted-jobs, docs/reference/redeem.md#activators). Read straight from the tables with SQL, never
// through the service's own code, so a bug in the service cannot hide itself. Call it only when
// no job is queued or running and the quarantine check has had its say.
//
// Every check appends a readable line to `violations`; an empty list means the database is sound.
import type { Queryable } from '../../src/db/database.ts';

/** The upstream's memory of what it redeemed (the simulator in tests). */
export interface UpstreamRecord {
  redemption(code: string): { playerId: string } | undefined;
  /** How many codes the upstream has redeemed in all. */
  redeemedCount(): number;
}

export interface KnownCode {
  code: string;
  /** Whether it was imported into a stock, or sent by a caller. */
  kind: 'stock' | 'caller';
}

/**
 * Wallet top-ups made from the chat bot, as the test sent them (docs/reference/bot.md#top-ups). With this, every
 * `topup` ledger entry must be one of: an operator's top-up (its audit row), a test top-up the
 * chat sent (each credited at most once, exactly once when the bot confirmed it), or the credit
 * of an approved (or paid) top-up request.
 */
export interface BotTopups {
  /** Test-mode `/topup`s sent: amounts are unique per customer, so an entry names its command. */
  test: { customerId: number; micros: number; confirmed: boolean }[];
  /** Live requests whose approve the operator saw answered 200 (credited exactly once). */
  approved: string[];
  /** Live requests whose reject the operator saw answered 200 (never credited). */
  rejected: string[];
}

export interface InvariantReport {
  violations: string[];
  counts: Record<string, number | Record<string, number>>;
  /**
   * Worth knowing, not wrong by the rules (printed, never asserted). A caller code sent twice,
   * once activated and once lost (quarantined, then settled used because the upstream has it
   * redeemed), is billed twice: once per attempt, as it would be had the lost attempt come back
   * code_used. Stock codes never are: a stock code is held out of stock while quarantined.
   */
  observations: Record<string, number>;
}

interface Job {
  id: string;
  customerId: number;
  mode: string;
  status: string;
  source: string;
  /** `api`, or `bot` for a manual redeem from the chat (docs/reference/bot.md#commands): no hold, no bill. */
  channel: 'api' | 'bot';
  idempotencyKey: string;
  playerId: string;
  holdDay: string;
  rateMicros: number;
  holdIncluded: number;
  holdWallet: number;
  capturedIncluded: number;
  capturedWallet: number;
  releasedIncluded: number;
  releasedWallet: number;
  total: number;
  createdAt: Date;
}

interface JobCode {
  jobId: string;
  position: number;
  codeHash: string;
  stockId: number | null;
  state: string;
  status: string | null;
  disposition: string | null;
  billed: boolean | null;
  reused: boolean;
  settlement: 'used' | 'unused' | null;
  settledAt: Date | null;
}

interface StockCode {
  id: number;
  customerId: number;
  mode: string;
  codeHash: string;
  state: string;
  reservedBy: string | null;
}

const BILLED = new Set(['activated', 'code_used', 'invalid_code']);
const accountKey = (customerId: number, mode: string) => `${customerId}/${mode}`;

/** The dispositions docs/reference/redeem.md#dispositions allows for a status and source. */
function allowedDispositions(status: string, source: string): string[] {
  const kept = source === 'stock' ? 'returned' : 'kept';
  switch (status) {
    case 'activated':
      return ['consumed'];
    case 'code_used':
    case 'invalid_code':
      return ['deleted'];
    case 'bad_player':
      return [kept];
    case 'failed':
      return [kept, 'quarantined'];
    default:
      return [];
  }
}

export async function checkInvariants(
  db: Queryable,
  input: {
    /** Every code the test made, by its lookup hash (code_hash in the tables). */
    codes: Map<string, KnownCode>;
    upstream: UpstreamRecord;
    /** Top-ups from the chat, when the run made any. */
    botTopups?: BotTopups;
  },
): Promise<InvariantReport> {
  const violations: string[] = [];
  const v = (msg: string) => violations.push(msg);
  const observations: Record<string, number> = {
    callerCodesActivatedAndSettledUsed: 0,
    settledUnusedThenActivatedLater: 0,
  };

  const jobs = (
    await db.query<Job>(
      `select id, customer_id as "customerId", mode, status, source, channel, idempotency_key as "idempotencyKey",
              player_id as "playerId",
              to_char(hold_day, 'YYYY-MM-DD') as "holdDay", rate_micros as "rateMicros",
              hold_included as "holdIncluded", hold_wallet as "holdWallet",
              captured_included as "capturedIncluded", captured_wallet as "capturedWallet",
              released_included as "releasedIncluded", released_wallet as "releasedWallet",
              total, created_at as "createdAt"
         from jobs order by created_at, id`,
    )
  ).rows;
  const jobById = new Map(jobs.map((j) => [j.id, j]));
  const codes = (
    await db.query<JobCode>(
      `select job_id as "jobId", position, code_hash as "codeHash", stock_id as "stockId", state, status,
              disposition, billed, reused, settlement, settled_at as "settledAt"
         from job_codes order by job_id, position`,
    )
  ).rows;
  const codesByJob = new Map<string, JobCode[]>();
  for (const c of codes) {
    const list = codesByJob.get(c.jobId) ?? [];
    list.push(c);
    codesByJob.set(c.jobId, list);
  }
  const plans = new Map(
    (
      await db.query<{ customerId: number; dailyLimit: number | null; overage: boolean }>(
        `select customer_id as "customerId", daily_limit as "dailyLimit", overage from plans`,
      )
    ).rows.map((p) => [p.customerId, p]),
  );

  // --- 5. Nothing unfinished: no job queued or running, no code out with the upstream. ---
  for (const j of jobs) {
    if (j.status === 'queued' || j.status === 'running') v(`job ${j.id} is still ${j.status}`);
  }
  for (const c of codes) {
    if (c.state === 'sending') v(`job_codes ${c.jobId}#${c.position} is left in state 'sending'`);
  }

  // --- Per job: rows, holds (2), billed outcomes = captured holds (3), include-first billing. ---
  const settledUsedOf = new Map<string, number>();
  for (const j of jobs) {
    const rows = codesByJob.get(j.id) ?? [];
    const own = rows.filter((r) => !r.reused);
    if (rows.length !== j.total) v(`job ${j.id}: total ${j.total} but ${rows.length} job_codes rows`);
    for (const r of rows) {
      if (r.state === 'pending' && !['interrupted', 'failed'].includes(j.status))
        v(`job ${j.id} is ${j.status} with code #${r.position} never attempted`);
      if (r.state !== 'done') continue;
      if (r.status === null || !allowedDispositions(r.status, j.source).includes(r.disposition ?? ''))
        v(`job ${j.id}#${r.position}: status ${r.status} with disposition ${r.disposition} (${j.source})`);
      // A bot redeem bills nothing (docs/reference/bot.md#commands): every outcome is recorded unbilled.
      if (r.billed !== (j.channel === 'api' && BILLED.has(r.status ?? '')))
        v(`job ${j.id}#${r.position} (${j.channel}): status ${r.status} with billed ${r.billed}`);
      if (r.settlement !== null && (r.disposition !== 'quarantined' || r.reused))
        v(`job ${j.id}#${r.position}: settled ${r.settlement} but disposition ${r.disposition}`);
      if (r.disposition === 'quarantined' && !r.reused && r.settlement === null)
        v(`job ${j.id}#${r.position}: quarantined and never settled`);
    }
    const hold = j.holdIncluded + j.holdWallet;
    const captured = j.capturedIncluded + j.capturedWallet;
    const released = j.releasedIncluded + j.releasedWallet;
    const billed = own.filter((r) => r.state === 'done' && r.billed === true).length;
    const refunded = own.filter(
      (r) => r.state === 'pending' || (r.state === 'done' && r.billed === false),
    ).length;
    if (j.channel === 'bot') {
      // Outside the API quota (docs/reference/bot.md#commands): nothing held, so nothing captured or released,
      // no rate, and a settlement never counts as a request (below).
      if (j.rateMicros !== 0 || hold !== 0 || captured !== 0 || released !== 0)
        v(
          `bot job ${j.id}: rate ${j.rateMicros}, held I=${j.holdIncluded} W=${j.holdWallet}, captured ${captured}, released ${released}: a bot redeem holds nothing`,
        );
      settledUsedOf.set(j.id, 0);
      continue;
    }
    if (j.channel !== 'api') v(`job ${j.id}: unknown channel ${j.channel}`);
    if (hold !== own.length) v(`job ${j.id}: holds ${hold} requests for ${own.length} codes attempted`);
    if (captured + released !== hold)
      v(`job ${j.id}: open hold (held ${hold}, captured ${captured}, released ${released})`);
    if (captured !== billed) v(`job ${j.id}: captured ${captured} holds for ${billed} billed outcomes`);
    if (released !== refunded) v(`job ${j.id}: released ${released} holds for ${refunded} refunded outcomes`);
    // docs/reference/billing-and-quota.md#billing-a-redeem: min(B, I) from the include, max(0, B - I) from the wallet.
    if (
      j.capturedIncluded !== Math.min(billed, j.holdIncluded) ||
      j.capturedWallet !== Math.max(0, billed - j.holdIncluded)
    )
      v(
        `job ${j.id}: ${billed} billed with I=${j.holdIncluded} W=${j.holdWallet} captured include ${j.capturedIncluded} wallet ${j.capturedWallet}`,
      );
    const plan = plans.get(j.customerId);
    if (plan && plan.dailyLimit === null && j.holdIncluded > 0)
      v(`job ${j.id}: uncapped plan but ${j.holdIncluded} requests held from an include`);
    if (plan && plan.dailyLimit !== null && !plan.overage && j.holdWallet > 0)
      v(`job ${j.id}: plan without overage but ${j.holdWallet} requests held from the wallet`);
    settledUsedOf.set(j.id, own.filter((r) => r.settlement === 'used').length);
  }

  // --- Bot redeems (docs/reference/bot.md#commands): each bot job started by one pressed confirmation, of its
  // account and player; a confirmation started at most one job; no webhook event for a bot job. ---
  const confirmations = (
    await db.query<{
      id: string;
      customerId: number;
      mode: string;
      playerId: string;
      state: string;
      jobId: string | null;
      request: unknown;
    }>(
      `select id, customer_id as "customerId", mode, player_id as "playerId", state, job_id as "jobId", request
         from bot_redeems`,
    )
  ).rows;
  const confirmationsOf = new Map<string, number>();
  for (const b of confirmations) {
    const started = b.state === 'started' || b.state === 'finished';
    if (started !== (b.jobId !== null)) v(`bot_redeems ${b.id} is ${b.state} with job ${b.jobId ?? 'none'}`);
    if (b.state !== 'confirming' && b.request !== null)
      v(`bot_redeems ${b.id} is ${b.state} but still holds its request (codes)`);
    if (b.jobId === null) continue;
    confirmationsOf.set(b.jobId, (confirmationsOf.get(b.jobId) ?? 0) + 1);
    const j = jobById.get(b.jobId);
    if (!j) v(`bot_redeems ${b.id} names job ${b.jobId}, which does not exist`);
    else if (
      j.channel !== 'bot' ||
      j.customerId !== Number(b.customerId) ||
      j.mode !== b.mode ||
      j.playerId !== b.playerId ||
      j.idempotencyKey !== `bot:${b.id}`
    )
      v(
        `bot_redeems ${b.id} (${accountKey(Number(b.customerId), b.mode)}, player ${b.playerId}) started job ${j.id} (${j.channel}, ${accountKey(j.customerId, j.mode)}, player ${j.playerId}, key ${j.idempotencyKey})`,
      );
  }
  for (const j of jobs) {
    if (j.channel === 'bot' && confirmationsOf.get(j.id) !== 1)
      v(`bot job ${j.id} started by ${confirmationsOf.get(j.id) ?? 0} confirmations`);
  }
  const botEvents = (
    await db.query<{ jobId: string; n: number }>(
      `select e.job_id as "jobId", count(*)::int as n from webhook_events e join jobs j on j.customer_id = e.customer_id and j.id = e.job_id
        where j.channel <> 'api' group by e.job_id`,
    )
  ).rows;
  for (const e of botEvents) v(`bot job ${e.jobId} has ${e.n} webhook events`);
  const webhookEvents = (await db.query<{ n: number }>(`select count(*)::int as n from webhook_events`))
    .rows[0]!.n;

  // --- 1. Stock: one state each, and the state the code's history leads to. ---
  const stock = (
    await db.query<StockCode>(
      `select id, customer_id as "customerId", mode, code_hash as "codeHash", state, reserved_by as "reservedBy"
         from stock_codes order by id`,
    )
  ).rows;
  const historyOf = new Map<number, JobCode[]>();
  for (const c of codes) {
    if (c.stockId === null || c.reused) continue;
    const list = historyOf.get(c.stockId) ?? [];
    list.push(c);
    historyOf.set(c.stockId, list);
  }
  const stockByHash = new Map(stock.map((s) => [s.codeHash, s]));
  for (const s of stock) {
    if (!['available', 'reserved', 'consumed', 'deleted', 'quarantined'].includes(s.state))
      v(`stock ${s.id}: unknown state ${s.state}`);
    if (s.state === 'reserved') {
      const holder = s.reservedBy ? jobById.get(s.reservedBy) : undefined;
      if (!holder || (holder.status !== 'queued' && holder.status !== 'running'))
        v(
          `stock ${s.id} is reserved by ${s.reservedBy} (${holder?.status ?? 'no such job'}), not an unfinished job`,
        );
    }
    const history = (historyOf.get(s.id) ?? []).sort((a, b) => {
      const ja = jobById.get(a.jobId)!;
      const jb = jobById.get(b.jobId)!;
      return ja.createdAt.getTime() - jb.createdAt.getTime() || ja.id.localeCompare(jb.id);
    });
    let expected = 'available';
    let leftBy = '';
    for (const r of history) {
      const j = jobById.get(r.jobId)!;
      if (j.customerId !== s.customerId || j.mode !== s.mode)
        v(`stock ${s.id} of ${accountKey(s.customerId, s.mode)} was used by job ${j.id} of another account`);
      if (r.codeHash !== s.codeHash) v(`job ${j.id}#${r.position} names stock ${s.id} with another code`);
      if (expected !== 'available')
        v(`stock ${s.id} was handed to job ${j.id} after ${leftBy} left it ${expected}: handed out twice`);
      if (r.state === 'pending') expected = 'available';
      else if (r.state === 'done') {
        const d = r.disposition;
        expected =
          d === 'consumed'
            ? 'consumed'
            : d === 'deleted'
              ? 'deleted'
              : d === 'quarantined'
                ? r.settlement === 'used'
                  ? 'deleted'
                  : r.settlement === 'unused'
                    ? 'available'
                    : 'quarantined'
                : 'available';
      } else expected = 'reserved';
      leftBy = `job ${j.id}#${r.position} (${r.status ?? r.state}/${r.disposition ?? '-'}/${r.settlement ?? '-'})`;
    }
    if (s.state !== expected)
      v(`stock ${s.id} is ${s.state}, but its history (${history.length} attempts) leaves it ${expected}`);
  }

  // --- 2. Wallets: balance = sum of the ledger, every entry's running balance, no open hold. ---
  const accounts = (
    await db.query<{ customerId: number; mode: string; balance: number; held: number }>(
      `select customer_id as "customerId", mode, balance_micros as balance, held_micros as held from accounts`,
    )
  ).rows;
  const ledger = (
    await db.query<{
      id: number;
      customerId: number;
      mode: string;
      amount: number;
      balanceAfter: number;
      kind: string;
      reference: string | null;
      actor: string;
      requestId: string | null;
    }>(
      `select id, customer_id as "customerId", mode, amount_micros as amount, balance_after_micros as "balanceAfter",
              kind, reference, actor, request_id as "requestId"
         from wallet_ledger order by id`,
    )
  ).rows;
  // An operator's top-up or adjustment has exactly one audit row, of its request (docs/reference/operators-and-audit.md#audit-log).
  const audited = new Map<string, number>();
  for (const a of (
    await db.query<{ action: string; target: string; requestId: string }>(
      `select action, target, request_id as "requestId" from audit_events
        where action in ('wallet.topup', 'wallet.adjust')`,
    )
  ).rows) {
    const k = `${a.action}/${a.target}/${a.requestId}`;
    audited.set(k, (audited.get(k) ?? 0) + 1);
  }
  // Top-ups from the chat (docs/reference/bot.md#top-ups): requests, and the payments that credited them.
  const requests = new Map(
    (
      await db.query<{
        id: string;
        customerId: number;
        mode: string;
        micros: number;
        state: string;
        decidedBy: string | null;
      }>(
        `select id, customer_id as "customerId", mode, usd_micros as micros, state, decided_by as "decidedBy"
           from topup_requests`,
      )
    ).rows.map((r) => [r.id, r]),
  );
  const paymentsOf = new Map<string, Set<number>>();
  for (const p of (
    await db.query<{ requestId: string; entry: number }>(
      `select request_id as "requestId", ledger_entry as entry from topup_payments where outcome = 'credited'`,
    )
  ).rows) {
    const set = paymentsOf.get(p.requestId) ?? new Set<number>();
    set.add(Number(p.entry));
    paymentsOf.set(p.requestId, set);
  }
  // A payment that matched no request it may pay credits nothing (it waits for a refund).
  for (const p of (
    await db.query<{ chargeId: string }>(
      `select charge_id as "chargeId" from topup_payments where outcome = 'unmatched' and ledger_entry is not null`,
    )
  ).rows)
    v(`unmatched payment ${p.chargeId} has a ledger entry`);
  const creditsOf = new Map<string, number>();
  // Test top-ups the chat sent, by customer and amount (unique per customer), and their credits.
  const sentTests = new Map<string, { confirmed: boolean; credited: number }>();
  for (const t of input.botTopups?.test ?? []) {
    const k = `${t.customerId}/${t.micros}`;
    if (sentTests.has(k))
      throw new Error(`botTopups.test: amount ${t.micros} sent twice for ${t.customerId}`);
    sentTests.set(k, { confirmed: t.confirmed, credited: 0 });
  }
  const running = new Map<string, number>();
  const chargesOf = new Map<string, number>();
  for (const e of ledger) {
    const k = accountKey(e.customerId, e.mode);
    const sum = (running.get(k) ?? 0) + e.amount;
    running.set(k, sum);
    if (e.balanceAfter !== sum)
      v(`ledger ${e.id} of ${k}: balance_after ${e.balanceAfter}, entries up to it sum to ${sum}`);
    if (e.kind === 'topup' || e.kind === 'adjustment') {
      if (e.kind === 'topup' ? e.amount <= 0 : e.amount === 0) v(`ledger ${e.id}: ${e.kind} of ${e.amount}`);
      if (e.actor !== 'system' || e.kind === 'adjustment') {
        const action = e.kind === 'topup' ? 'wallet.topup' : 'wallet.adjust';
        const n = audited.get(`${action}/${e.id}/${e.requestId}`) ?? 0;
        if (n !== 1) v(`ledger ${e.id}: ${e.kind} by ${e.actor} has ${n} audit rows of its request`);
      }
      // An adjustment never takes a wallet below zero (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments).
      if (e.kind === 'adjustment' && e.amount < 0 && e.balanceAfter < 0)
        v(`ledger ${e.id}: an adjustment left the balance at ${e.balanceAfter}`);
      if (e.kind === 'topup') {
        // Where the money came from: a top-up request (approved or paid), a test top-up from the
        // chat, or an operator (its audit row, above). Nothing else credits a wallet.
        const telegram = e.actor.startsWith('telegram:');
        if (e.reference !== null) {
          const r = requests.get(e.reference);
          creditsOf.set(e.reference, (creditsOf.get(e.reference) ?? 0) + 1);
          if (!r) v(`ledger ${e.id}: a top-up for ${e.reference}, which is no top-up request`);
          else {
            if (r.customerId !== e.customerId || r.mode !== e.mode || r.micros !== e.amount)
              v(
                `ledger ${e.id}: ${e.amount} to ${k} for request ${r.id} of ${r.micros} to ${accountKey(r.customerId, r.mode)}`,
              );
            if (r.state === 'approved' && e.actor !== r.decidedBy)
              v(`ledger ${e.id}: credit of request ${r.id} by ${e.actor}, approved by ${r.decidedBy}`);
            if (r.state === 'paid' && !paymentsOf.get(r.id)?.has(e.id))
              v(`ledger ${e.id}: credit of paid request ${r.id} that no payment names`);
          }
        } else if (telegram) {
          // A test top-up from the chat (a live one is always a request).
          if (e.mode !== 'test') v(`ledger ${e.id}: a ${e.mode} top-up by ${e.actor} with no request`);
          if (input.botTopups && e.mode === 'test') {
            const sent = sentTests.get(`${e.customerId}/${e.amount}`);
            if (!sent) v(`ledger ${e.id}: a test top-up of ${e.amount} to ${k} the chat never sent`);
            else sent.credited += 1;
          }
        }
      }
    } else if (e.kind === 'charge') {
      const j = e.reference ? jobById.get(e.reference) : undefined;
      if (!j) v(`ledger ${e.id}: a charge for ${e.reference}, which is no job`);
      else {
        // Only an API job's capture or quarantine settlement charges (docs/reference/bot.md#commands).
        if (j.channel !== 'api') v(`ledger ${e.id}: a charge for ${j.channel} job ${j.id}`);
        if (j.customerId !== e.customerId || j.mode !== e.mode)
          v(`ledger ${e.id}: charge of ${k} for job ${j.id} of another account`);
        if (e.amount !== -j.rateMicros)
          v(`ledger ${e.id}: charge ${e.amount} for job ${j.id} at rate ${j.rateMicros}`);
        chargesOf.set(j.id, (chargesOf.get(j.id) ?? 0) + 1);
      }
    } else v(`ledger ${e.id}: unknown kind ${e.kind}`);
  }
  // Each top-up request credited as its state says: approved exactly once, paid once per
  // payment, never while pending, rejected or expired.
  for (const r of requests.values()) {
    const n = creditsOf.get(r.id) ?? 0;
    const want = r.state === 'approved' ? 1 : r.state === 'paid' ? (paymentsOf.get(r.id)?.size ?? 0) : 0;
    if (r.state === 'paid' && want === 0) v(`top-up request ${r.id} is paid with no payment`);
    if (r.state !== 'paid' && paymentsOf.has(r.id)) v(`top-up request ${r.id} is ${r.state} but was paid`);
    if (n !== want)
      v(`top-up request ${r.id} (${r.state}, ${r.micros}) credited ${n} times, expected ${want}`);
  }
  if (input.botTopups) {
    for (const id of input.botTopups.approved) {
      const state = requests.get(id)?.state;
      if (state !== 'approved')
        v(`top-up request ${id}: approve answered 200, but it is ${state ?? 'missing'}`);
    }
    for (const id of input.botTopups.rejected) {
      const state = requests.get(id)?.state;
      if (state !== 'rejected')
        v(`top-up request ${id}: reject answered 200, but it is ${state ?? 'missing'}`);
    }
    for (const [k, t] of sentTests) {
      if (t.credited > 1) v(`test top-up ${k} from the chat credited ${t.credited} times`);
      if (t.confirmed && t.credited !== 1)
        v(`test top-up ${k}: the bot confirmed it, credited ${t.credited} times`);
    }
  }
  for (const a of accounts) {
    const k = accountKey(a.customerId, a.mode);
    const sum = (
      await db.query<{ sum: number }>(
        'select coalesce(sum(amount_micros), 0)::bigint as sum from wallet_ledger where customer_id = $1 and mode = $2',
        [a.customerId, a.mode],
      )
    ).rows[0]!.sum;
    if (a.balance !== sum) v(`account ${k}: balance ${a.balance}, ledger sums to ${sum}`);
    if (a.held !== 0) v(`account ${k}: ${a.held} micros still held with no job running`);
  }

  // --- 3 and 4. Charges per job, and daily usage = captured + settled-used requests. ---
  const usageExpected = new Map<string, { used: number; overage: number }>();
  for (const j of jobs) {
    const charges = chargesOf.get(j.id) ?? 0;
    const settledUsed = settledUsedOf.get(j.id) ?? 0;
    // Each settlement 'used' is one more request: a wallet charge, or (when the include has room) none.
    const settledWallet = charges - j.capturedWallet;
    if (settledWallet < 0 || settledWallet > settledUsed)
      v(
        `job ${j.id}: ${charges} wallet charges for ${j.capturedWallet} wallet captures and ${settledUsed} codes settled used`,
      );
    if (settledUsed > 0 && j.rateMicros === 0)
      v(`job ${j.id}: a settled-used code on a zero rate cannot be told apart from an include use`);
    const k = `${accountKey(j.customerId, j.mode)}/${j.holdDay}`;
    const u = usageExpected.get(k) ?? { used: 0, overage: 0 };
    u.used += j.capturedIncluded + j.capturedWallet + settledUsed;
    u.overage += j.capturedWallet + Math.max(0, settledWallet);
    usageExpected.set(k, u);
  }
  const usage = (
    await db.query<{ customerId: number; mode: string; day: string; used: number; overage: number }>(
      `select customer_id as "customerId", mode, to_char(day, 'YYYY-MM-DD') as day, used, overage from daily_usage`,
    )
  ).rows;
  const usageSeen = new Set<string>();
  for (const u of usage) {
    const k = `${accountKey(u.customerId, u.mode)}/${u.day}`;
    usageSeen.add(k);
    const e = usageExpected.get(k) ?? { used: 0, overage: 0 };
    if (u.used !== e.used || u.overage !== e.overage)
      v(
        `daily_usage ${k}: used ${u.used} overage ${u.overage}, jobs say used ${e.used} overage ${e.overage}`,
      );
    const plan = plans.get(u.customerId);
    if (plan?.dailyLimit != null && u.used - u.overage > plan.dailyLimit)
      v(`daily_usage ${k}: ${u.used - u.overage} included requests over the daily limit ${plan.dailyLimit}`);
    if (plan && plan.dailyLimit === null && u.used !== u.overage)
      v(`daily_usage ${k}: uncapped plan with ${u.used - u.overage} requests counted as included`);
  }
  for (const [k, e] of usageExpected) {
    if (!usageSeen.has(k) && (e.used !== 0 || e.overage !== 0))
      v(`daily_usage ${k}: no row, jobs say used ${e.used} overage ${e.overage}`);
  }

  // --- 6. The upstream's truth: what it redeemed is recorded, what it did not is not billed. ---
  const rowsByHash = new Map<string, JobCode[]>();
  for (const c of codes) {
    if (!input.codes.has(c.codeHash)) v(`job ${c.jobId}#${c.position}: a code this run never made`);
    if (c.reused || c.state !== 'done') continue;
    const list = rowsByHash.get(c.codeHash) ?? [];
    list.push(c);
    rowsByHash.set(c.codeHash, list);
  }
  let redeemedKnown = 0;
  for (const [hash, known] of input.codes) {
    const red = input.upstream.redemption(known.code);
    const rows = rowsByHash.get(hash) ?? [];
    const activated = rows.filter((r) => r.status === 'activated');
    const settledUsed = rows.filter((r) => r.settlement === 'used');
    const codeUsed = rows.filter((r) => r.status === 'code_used');
    const label = `${known.kind} code …${known.code.slice(-8)}`;
    if (activated.length > 1) v(`${label}: activated ${activated.length} times`);
    if (red) {
      redeemedKnown += 1;
      if (activated.length + settledUsed.length === 0)
        v(
          `${label}: redeemed upstream but recorded only as ${rows.map((r) => `${r.status}/${r.disposition}/${r.settlement ?? '-'}`).join(', ') || 'nothing'}`,
        );
      for (const r of activated) {
        const player = jobById.get(r.jobId)!.playerId;
        if (player !== red.playerId)
          v(`${label}: activated for player ${player}, upstream says ${red.playerId}`);
      }
      if (known.kind === 'caller' && activated.length + settledUsed.length > 1)
        observations.callerCodesActivatedAndSettledUsed! += 1;
      if (known.kind === 'stock') {
        if (activated.length + settledUsed.length !== 1)
          v(`${label}: one upstream redemption recorded ${activated.length + settledUsed.length} times`);
        if (codeUsed.length > 0) v(`${label}: answered code_used: it was handed out after being consumed`);
        const s = stockByHash.get(hash);
        if (!s) v(`${label}: not in stock_codes`);
        else if (s.state !== 'consumed' && s.state !== 'deleted')
          v(`${label}: redeemed upstream but ${s.state} in stock (could be sold twice)`);
      }
    } else {
      if (activated.length > 0) v(`${label}: recorded activated, the upstream never redeemed it`);
      if (settledUsed.length > 0) v(`${label}: settled used, the upstream never redeemed it`);
      if (known.kind === 'stock') {
        const s = stockByHash.get(hash);
        if (s?.state === 'consumed') v(`${label}: consumed in stock, the upstream never redeemed it`);
        if (s?.state === 'deleted' && !rows.some((r) => r.status === 'invalid_code'))
          v(`${label}: deleted from stock, neither redeemed upstream nor invalid`);
      }
    }
    for (const r of rows.filter((x) => x.settlement === 'unused')) {
      // Settled unused, then used by a later attempt: fine, the check was right at the time.
      if (red && activated.some((a) => a.jobId !== r.jobId))
        observations.settledUnusedThenActivatedLater! += 1;
    }
  }
  const upstreamTotal = input.upstream.redeemedCount();
  if (upstreamTotal !== redeemedKnown)
    v(`the upstream redeemed ${upstreamTotal} codes, ${redeemedKnown} of them made by this run`);

  // --- What was exercised. ---
  const tally = (items: string[]) =>
    items.reduce<Record<string, number>>((acc, k) => {
      acc[k] = (acc[k] ?? 0) + 1;
      return acc;
    }, {});
  const own = codes.filter((c) => !c.reused);
  return {
    violations,
    observations,
    counts: {
      jobs: tally(jobs.map((j) => j.status)),
      attempts: tally(own.map((c) => (c.state === 'done' ? `${c.status}/${c.disposition}` : c.state))),
      reusedAttempts: codes.length - own.length,
      settlements: tally(own.filter((c) => c.settlement).map((c) => c.settlement!)),
      stock: tally(stock.map((s) => s.state)),
      walletCharges: ledger.filter((e) => e.kind === 'charge').length,
      botJobs: tally(jobs.filter((j) => j.channel === 'bot').map((j) => j.status)),
      botAttempts: tally(
        own
          .filter((c) => jobById.get(c.jobId)?.channel === 'bot')
          .map((c) => (c.state === 'done' ? `${c.status}/${c.disposition}` : c.state)),
      ),
      botConfirmations: tally(confirmations.map((b) => b.state)),
      topupRequests: tally([...requests.values()].map((r) => r.state)),
      botTestTopups: ledger.filter(
        (e) => e.kind === 'topup' && e.actor.startsWith('telegram:') && !e.reference,
      ).length,
      webhookEvents,
      upstreamRedeemed: upstreamTotal,
    },
  };
}
