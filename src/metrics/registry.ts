// The Prometheus metrics of one process (docs/reference/running.md#metrics): every series is defined here, in one
// registry made at start and passed through the app context, never a module-level global (two
// apps in one test process must not see each other's counts).
//
// Label values are closed sets: listener, method, route pattern, status, mode, outcome, result.
// No customer id, key, code, job id, raw URL or error message is ever a label: each would make a
// new series per value, and some are secrets.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { BreakerState } from '../activators/circuit-breaker.ts';
import type { CoreMetrics } from '../core/context.ts';
import { countUnfinishedJobs } from '../core/jobs/jobs.ts';
import type { RequestLogCounters } from '../core/requests/log-writer.ts';
import { MODES } from '../core/vocabulary.ts';
import type { Database, DatabaseCounters } from '../db/database.ts';
import { type BotMetrics, registerBotMetrics } from './bot-metrics.ts';
import { registerEncryptionMetrics } from './encryption-metrics.ts';
import { registerRequestLogMetrics } from './request-log-metrics.ts';
import { registerRequestSeries } from './request-series.ts';
import { registerWebhookGauges } from './webhook-gauges.ts';

export type Listener = 'public' | 'admin';
/** What became of a webhook attempt: delivered, failed with a retry due, failed for the last time. */
export type WebhookResult = Parameters<CoreMetrics['webhookAttempt']>[1];

const PREFIX = 'redeem_gateway_';
const BREAKER_STATES: readonly BreakerState[] = ['closed', 'half_open', 'open'];
/** A scrape answers without the jobs gauge rather than hang on a database that does not answer. */
const JOBS_QUERY_TIMEOUT_MS = 2000;

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  work.catch(() => undefined); // a query that fails after the deadline is nobody's concern
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export interface MetricsOptions {
  /** Read at scrape time: jobs queued and running (one query), and the connection pool. */
  db: Pick<Database, 'query'> & { poolStats?: Database['poolStats']; counters?: Database['counters'] };
  /** Node's process metrics (CPU, memory, event loop lag, GC); default true. */
  processMetrics?: boolean;
}

/** The service's metrics: core's business events (CoreMetrics) and the HTTP and activator series. */
export interface Metrics extends CoreMetrics {
  readonly registry: Registry;
  /** One answered HTTP request (http-metrics.ts). `route` is the route pattern, never the URL. */
  observeRequest(listener: Listener, method: string, route: string, status: number, seconds: number): void;
  /** One activator call (activator-metrics.ts). */
  activatorCall(
    activator: string,
    operation: 'activate' | 'status' | 'check',
    result: string,
    seconds: number,
  ): void;
  /** Reports an activator's circuit breaker at every scrape. */
  watchBreaker(activator: string, state: () => BreakerState): void;
  /** The chat bot's updates, replies and Bot API errors (bot-metrics.ts). */
  readonly bot: BotMetrics;
  /** The request log's rows written and dropped (request-log-metrics.ts). */
  readonly requestLog: RequestLogCounters;
}

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const ACTIVATOR_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const QUEUE_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const LAG_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400];

export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = new Registry();
  const registers = [registry];
  if (opts.processMetrics !== false) collectDefaultMetrics({ register: registry });

  const httpSeries = registerRequestSeries(registers, {
    requestsName: `${PREFIX}http_requests_total`,
    requestsHelp: 'HTTP requests answered, by listener, method, route pattern and status',
    durationName: `${PREFIX}http_request_duration_seconds`,
    durationHelp:
      'Time from receiving an HTTP request to its answer, by listener, method, route pattern and status',
    buckets: HTTP_BUCKETS,
  });

  const { codeOutcomes, billed, refunded, walletCaptures, walletCaptured, settlements } =
    billingSeries(registers);
  const queueWait = new Histogram({
    name: `${PREFIX}job_queue_wait_seconds`,
    help: 'Time async jobs waited in the queue (created to started), by mode',
    labelNames: ['mode'] as const,
    buckets: QUEUE_BUCKETS,
    registers,
  });

  const webhookAttempts = new Counter({
    name: `${PREFIX}webhook_deliveries_total`,
    help: 'Webhook delivery attempts by mode and result (delivered; failed, retry due; dropped, no retries left)',
    labelNames: ['mode', 'result'] as const,
    registers,
  });
  const webhookLag = new Histogram({
    name: `${PREFIX}webhook_delivery_lag_seconds`,
    help: 'Time from a webhook event being written to its delivery, by mode',
    labelNames: ['mode'] as const,
    buckets: LAG_BUCKETS,
    registers,
  });

  const { activatorCalls, activatorDuration } = activatorSeries(registers);
  registerWebhookGauges(registers, opts.db);
  const breakers = new Map<string, () => BreakerState>();
  registerBreakerGauge(registers, breakers);
  registerDatabaseSeries(registers, opts.db);
  registerEncryptionMetrics(registers, opts.db, PREFIX);

  const bot = registerBotMetrics(registers, PREFIX);
  const requestLog = registerRequestLogMetrics(registers, PREFIX);

  return {
    registry,
    bot,
    requestLog,
    observeRequest: httpSeries.observe,
    codeOutcome(o) {
      codeOutcomes.inc({ mode: o.mode, status: o.status, disposition: o.disposition });
      (o.billed ? billed : refunded).inc({ mode: o.mode });
      if (o.walletMicros > 0) {
        walletCaptures.inc({ mode: o.mode });
        walletCaptured.inc({ mode: o.mode }, o.walletMicros);
      }
    },
    quarantineSettled(o) {
      settlements.inc({ mode: o.mode, settlement: o.settlement, by: o.by });
      if (o.settlement !== 'used') return;
      billed.inc({ mode: o.mode });
      if (o.walletMicros > 0) {
        walletCaptures.inc({ mode: o.mode });
        walletCaptured.inc({ mode: o.mode }, o.walletMicros);
      }
    },
    jobStarted(mode, waitMs) {
      queueWait.observe({ mode }, Math.max(0, waitMs) / 1000);
    },
    webhookAttempt(mode, result, lagMs) {
      webhookAttempts.inc({ mode, result });
      if (lagMs !== null) webhookLag.observe({ mode }, Math.max(0, lagMs) / 1000);
    },
    activatorCall(activator, operation, result, seconds) {
      activatorCalls.inc({ activator, operation, result });
      activatorDuration.observe({ activator, operation }, seconds);
    },
    watchBreaker(activator, state) {
      breakers.set(activator, state);
    },
  };
}

type Registers = Registry[];

/** An activator's circuit breaker, read at every scrape from the state functions registered. */
function registerBreakerGauge(registers: Registers, breakers: Map<string, () => BreakerState>): void {
  new Gauge({
    name: `${PREFIX}activator_breaker_state`,
    help: 'Circuit breaker of an activator: 1 for its current state (closed, half_open, open), 0 for the others',
    labelNames: ['activator', 'state'] as const,
    registers,
    collect() {
      for (const [activator, read] of breakers) {
        const current = read();
        for (const state of BREAKER_STATES) this.set({ activator, state }, state === current ? 1 : 0);
      }
    },
  });
}

/**
 * What is read from the database and its seam at scrape time: jobs queued and running, the
 * connection pool, and the statements, round trips and commits this process sent.
 */
function registerDatabaseSeries(registers: Registers, db: MetricsOptions['db']): void {
  new Gauge({
    name: `${PREFIX}jobs`,
    help: 'Jobs queued or running now, by status and mode (read from the database at scrape time)',
    labelNames: ['status', 'mode'] as const,
    registers,
    async collect() {
      try {
        // Served by the partial index jobs_unfinished: cheap however many jobs have finished.
        const rows = await withTimeout(countUnfinishedJobs(db), JOBS_QUERY_TIMEOUT_MS);
        for (const status of ['queued', 'running'] as const)
          for (const mode of MODES) this.set({ status, mode }, 0);
        for (const row of rows) this.set({ status: row.status, mode: row.mode }, row.n);
      } catch {
        // The database is away or slow: no series rather than stale or zero ones; the scrape
        // still answers with everything else (the pool and request series matter most then).
        this.reset();
      }
    },
  });

  new Gauge({
    name: `${PREFIX}db_pool_connections`,
    help: 'Database connections by state (in_use, idle); PGlite has one connection and reports only max',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const s = db.poolStats?.();
      if (!s || s.idle === undefined) return;
      this.set({ state: 'in_use' }, s.total - s.idle);
      this.set({ state: 'idle' }, s.idle);
    },
  });
  new Gauge({
    name: `${PREFIX}db_pool_waiting`,
    help: 'Queries waiting for a free database connection',
    registers,
    collect() {
      const s = db.poolStats?.();
      if (s?.waiting !== undefined) this.set(s.waiting);
    },
  });
  new Gauge({
    name: `${PREFIX}db_pool_max`,
    help: 'Largest number of database connections the pool opens (1 for PGlite)',
    registers,
    collect() {
      const s = db.poolStats?.();
      if (s) this.set(s.max);
    },
  });

  // What this process asked of the database (the seam's own counts, Database.counters): the
  // cost per request of the hot path, read by the load benchmark (bench/run.ts).
  const seamCounters: Array<[keyof DatabaseCounters, string, string]> = [
    ['statements', 'db_statements_total', 'Statements this process sent to the database'],
    ['roundTrips', 'db_round_trips_total', 'Round trips to the database (statements, BEGIN, COMMIT)'],
    ['commits', 'db_commits_total', 'Commits: transactions and statements run on their own'],
  ];
  for (const [field, name, help] of seamCounters) {
    new Counter({
      name: `${PREFIX}${name}`,
      help,
      registers,
      collect() {
        const counters = db.counters;
        if (!counters) return;
        this.reset();
        this.inc(counters[field]);
      },
    });
  }
}

/** Activator calls and their latency. */
function activatorSeries(registers: Registers) {
  const activatorCalls = new Counter({
    name: `${PREFIX}activator_calls_total`,
    help: 'Activator calls by activator, operation (activate, status, check) and result',
    labelNames: ['activator', 'operation', 'result'] as const,
    registers,
  });
  const activatorDuration = new Histogram({
    name: `${PREFIX}activator_call_duration_seconds`,
    help: 'Activator call latency by activator and operation',
    labelNames: ['activator', 'operation'] as const,
    buckets: ACTIVATOR_BUCKETS,
    registers,
  });
  return { activatorCalls, activatorDuration };
}

/** Codes' outcomes and what they billed or refunded, with quarantine settlements, by mode. */
function billingSeries(registers: Registers) {
  const codeOutcomes = new Counter({
    name: `${PREFIX}code_outcomes_total`,
    help: 'Codes whose activation outcome was recorded, by mode, status and disposition',
    labelNames: ['mode', 'status', 'disposition'] as const,
    registers,
  });
  const billed = new Counter({
    name: `${PREFIX}billed_requests_total`,
    help: 'Requests billed (an outcome that bills, or a quarantined code settled as used), by mode',
    labelNames: ['mode'] as const,
    registers,
  });
  const refunded = new Counter({
    name: `${PREFIX}refunded_requests_total`,
    help: 'Held requests refunded because the outcome does not bill, by mode',
    labelNames: ['mode'] as const,
    registers,
  });
  const walletCaptures = new Counter({
    name: `${PREFIX}wallet_captures_total`,
    help: 'Billed requests paid from the wallet (not from the daily include), by mode',
    labelNames: ['mode'] as const,
    registers,
  });
  const walletCaptured = new Counter({
    name: `${PREFIX}wallet_captured_microdollars_total`,
    help: 'Micro-dollars (1e-6 USD) captured from wallets, by mode',
    labelNames: ['mode'] as const,
    registers,
  });
  const settlements = new Counter({
    name: `${PREFIX}quarantine_settlements_total`,
    help: 'Quarantined codes settled, by mode, settlement (used, unused) and by whom (check, operator)',
    labelNames: ['mode', 'settlement', 'by'] as const,
    registers,
  });
  for (const mode of MODES) {
    for (const c of [billed, refunded, walletCaptures, walletCaptured]) c.inc({ mode }, 0);
  }
  return { codeOutcomes, billed, refunded, walletCaptures, walletCaptured, settlements };
}
