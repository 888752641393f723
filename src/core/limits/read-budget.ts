// The read budget of docs/reference/limits.md#read-budget (300 reads per key per sliding 10 s) without a database
// statement per read. Each process keeps the log of the reads it accepted, per key, in memory.
//
// - One process (the embedded database: its data directory has one owner, docs/reference/running.md#postgresql-poolers-and-failover): the log is the
//   whole truth and the budget is exact. No statement at all.
// - Several processes on one PostgreSQL: each process settles its new reads with the database in
//   batches (one statement for every key it served: the read rows of burst_windows, `read:<key>`,
//   unlogged, migration 0065), and gets back each key's log as every process settled it. A read
//   is accepted when the key's log as last settled, plus this process's reads not yet settled, is
//   under the limit. A process settles every `settleEveryMs` (1 s) and, for a key, whenever
//   `maxUnsettled` of its reads are not settled yet (the read that finds that waits for the
//   settle). So every process's unsettled reads of a key are at most `maxUnsettled`; the one that
//   settled last before its last accepted read saw all the others' reads but their unsettled
//   ones. Hence the bound: with N processes, a key gets at most
//       limit + (N - 1) × maxUnsettled reads in any sliding window
//   (300 + 25 × (N - 1) by default: 325 with two processes), plus what the processes' clocks
//   disagree by (each stamps its reads with its own clock). The cost is one statement per second
//   per process, and one per 25 reads of a key read faster than that (test/read-budget-two-process).
import type { Queryable } from '../../db/database.ts';
import { type WindowRule, type WindowSlot, windowSlotOf } from './window-limit.ts';

export interface ReadBudgetOptions {
  /** Settle with the database (several processes) or keep it all here (one process). */
  shared: boolean;
  /** Reads of one key a process may accept before settling them (default 25). */
  maxUnsettled?: number;
  /** How often a process settles its reads (default 1000 ms). */
  settleEveryMs?: number;
  /** Keys kept at most (default 100,000): beyond, keys whose window is empty are forgotten first. */
  maxKeys?: number;
  /** Where a failed background settle is reported. */
  onError?: (err: unknown) => void;
}

export interface ReadBudget {
  /** A slot for `subject` at `nowMs`; a promise only when the subject's reads must settle first. */
  take(subject: string, nowMs: number): WindowSlot | Promise<WindowSlot>;
  /** Settles what is left and stops the timer. */
  stop(): Promise<void>;
}

interface KeyLog {
  /** The key's log as the database last gave it (every process's settled reads). */
  settled: number[];
  /** This process's reads being settled now (in no `settled` yet). */
  sending: number[];
  /** This process's reads not settled yet. */
  unsettled: number[];
}

/** Drops the times that left the window (logs are short: at most the limit and the bound above). */
function inWindow(rule: WindowRule, times: number[], nowMs: number) {
  const from = nowMs - rule.windowMs;
  let i = 0;
  while (i < times.length && times[i]! <= from) i++;
  if (i > 0) times.splice(0, i);
}

/** The slot for a read at `nowMs` from a key's log, counting the read in when it is accepted. */
function decide(rule: WindowRule, log: KeyLog, nowMs: number): WindowSlot {
  inWindow(rule, log.settled, nowMs);
  inWindow(rule, log.sending, nowMs);
  inWindow(rule, log.unsettled, nowMs);
  let counted = log.settled.length + log.sending.length + log.unsettled.length;
  const allowed = counted < rule.limit;
  if (allowed) {
    log.unsettled.push(nowMs);
    counted++;
  }
  // Each log is in time order but for a clock that stepped back: its least time is its first.
  const oldest = Math.min(
    log.settled[0] ?? Number.POSITIVE_INFINITY,
    log.sending[0] ?? Number.POSITIVE_INFINITY,
    log.unsettled[0] ?? Number.POSITIVE_INFINITY,
    log.unsettled[log.unsettled.length - 1] ?? Number.POSITIVE_INFINITY,
  );
  return windowSlotOf(allowed, counted, oldest, nowMs, rule.limit, rule.windowMs);
}

export function createReadBudget(q: Queryable, rule: WindowRule, opts: ReadBudgetOptions): ReadBudget {
  const maxUnsettled = opts.shared ? (opts.maxUnsettled ?? 25) : Number.POSITIVE_INFINITY;
  const maxKeys = opts.maxKeys ?? 100_000;
  const logs = new Map<string, KeyLog>();
  let lastNowMs = 0;
  let inFlight: Promise<void> | null = null;

  /** One statement: every key's new reads in, every such key's log (all processes') back. */
  const settleOnce = async () => {
    const batch: { subject: string; log: KeyLog }[] = [];
    for (const [subject, log] of logs) {
      if (log.unsettled.length === 0) continue;
      log.sending = log.unsettled;
      log.unsettled = [];
      batch.push({ subject, log });
    }
    if (batch.length === 0) return;
    // Each key's new reads as one JSON object ({"read:<key>": [ms, …]}) and every such key's log
    // back as one JSON object: both sides are parsed natively (the text of a bigint[] per key in
    // and out cost this process some 60 ms a settle with 1,000 keys: bench/read-budget-settle.ts).
    const given: Record<string, number[]> = {};
    for (const { subject, log } of batch) given[`${rule.bucket}:${subject}`] = log.sending;
    try {
      // Rows in key order, so two processes settling the same keys lock them in one order.
      const r = await q.query<{ logs: string }>(
        `with given as (
           select g.key as k, array(select e::bigint from jsonb_array_elements_text(g.value) e order by 1) as hs
             from jsonb_each($1::jsonb) g),
         settled as (
           insert into burst_windows as w (key_id, hits_ms, accepted)
           select k, hs, true from given order by k
           on conflict (key_id) do update set
             hits_ms = array(select h from unnest(w.hits_ms || excluded.hits_ms) h where h > $2 order by h),
             accepted = true
           returning w.key_id, w.hits_ms)
         select coalesce(jsonb_object_agg(key_id, hits_ms), '{}')::text as logs from settled`,
        [JSON.stringify(given), lastNowMs - rule.windowMs],
        'read_budget_settle',
      );
      const prefix = rule.bucket.length + 1;
      const logsBack = JSON.parse(r.rows[0]!.logs) as Record<string, number[]>;
      for (const key in logsBack) {
        const log = logs.get(key.slice(prefix));
        if (!log) continue;
        log.settled = logsBack[key]!;
        log.sending = [];
      }
    } catch (err) {
      // Not settled: the reads stay counted here, and are sent again with the next settle.
      for (const { log } of batch) {
        log.unsettled = [...log.sending, ...log.unsettled];
        log.sending = [];
      }
      throw err;
    }
  };

  /** One settle at a time: a caller arriving during one waits for it, then runs its own. */
  const settle = async (): Promise<void> => {
    while (inFlight) await inFlight.catch(() => {});
    inFlight = settleOnce();
    try {
      await inFlight;
    } finally {
      inFlight = null;
    }
  };

  const forget = (nowMs: number) => {
    for (const [subject, log] of logs) {
      inWindow(rule, log.settled, nowMs);
      inWindow(rule, log.unsettled, nowMs);
      if (log.settled.length + log.sending.length + log.unsettled.length === 0) logs.delete(subject);
    }
    // Still too many (a flood of distinct keys within one window): the oldest keys go.
    while (logs.size > maxKeys) logs.delete(logs.keys().next().value!);
  };

  // Keys whose window emptied are forgotten as it goes (every 10 s in one process), so memory
  // follows the keys read in the last window, not every key ever read.
  const timer = setInterval(
    () => {
      if (lastNowMs > 0) forget(lastNowMs);
      if (opts.shared) settle().catch((err) => opts.onError?.(err));
    },
    opts.shared ? (opts.settleEveryMs ?? 1000) : 10_000,
  );
  timer.unref();

  const takeAfterSettle = async (subject: string, nowMs: number): Promise<WindowSlot> => {
    // Reads of this key arriving meanwhile wait for the same settle, so none passes the bound.
    while (true) {
      const log = logs.get(subject)!;
      if (log.unsettled.length + log.sending.length < maxUnsettled) return decide(rule, log, nowMs);
      await settle();
    }
  };

  return {
    take(subject, nowMs) {
      if (nowMs > lastNowMs) lastNowMs = nowMs;
      let log = logs.get(subject);
      if (!log) {
        if (logs.size >= maxKeys) forget(nowMs);
        log = { settled: [], sending: [], unsettled: [] };
        logs.set(subject, log);
      }
      if (log.unsettled.length + log.sending.length < maxUnsettled) return decide(rule, log, nowMs);
      return takeAfterSettle(subject, nowMs);
    },
    async stop() {
      clearInterval(timer);
      if (opts.shared) await settle().catch((err) => opts.onError?.(err));
    },
  };
}
