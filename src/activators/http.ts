// The http activator (docs/reference/redeem.md#activators): the JSON-over-HTTP protocol of
// docs/upstream-protocol.md, with a per-call timeout, bounded concurrency, retries only where the
// code surely did not leave this process, and a circuit breaker.
//
// The one question every failure must answer is "can the upstream have consumed the code?".
// A request is "sent" from the moment undici starts writing it onto a socket (the handler's
// onRequestStart); an error before that (connection refused, DNS, connect timeout, TLS, our own
// deadline while connecting) is surely not sent: `failed`, refunded, the code kept or returned.
// After that, anything but a well-formed answer is `unknown` and the code is quarantined, because
// returning a consumed code to stock could sell it twice.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Pool } from 'undici';
import type { ActivationOutcome, Activator } from '../core/activator.ts';
import { createFairSemaphore } from '../core/fair-semaphore.ts';
import { type BreakerState, createBreaker } from './circuit-breaker.ts';
import { type Exchange, exchangeUnlessSent } from './http-exchange.ts';
import { judgeActivation, judgeCheck, judgeStatus } from './http-protocol.ts';

export interface HttpActivatorOptions {
  /** The upstream's base URL (ACTIVATOR_URL); /v1/activate, /v1/status and /v1/check are appended. */
  url: string;
  /** The bearer key (ACTIVATOR_KEY); no Authorization header when absent. */
  key?: string | undefined;
  /** Deadline of one call from the moment it has a connection slot (default 10000 ms). */
  timeoutMs?: number;
  /** Deadline for opening a connection (default the smaller of 3000 ms and timeoutMs). */
  connectTimeoutMs?: number;
  /** Calls in flight at once, and the pool's connections (default 16). Further calls wait. */
  concurrency?: number;
  /** Pauses before retrying a call that surely was not sent (default [50, 250]: two retries). */
  retryDelaysMs?: number[];
  breaker?: {
    /** Consecutive failed calls that open the breaker (default 5). */
    failureThreshold?: number;
    /** How long it stays open before one trial call is let through (default 30000 ms). */
    openMs?: number;
  };
  logger?: Pick<Logger, 'info' | 'warn'>;
}

export interface HttpActivator extends Activator {
  breakerState(): BreakerState;
  /** Closes the connection pool. */
  close(): Promise<void>;
}

/** What an exchange tells the breaker about the upstream's health. */
type Verdict = 'healthy' | 'failure';

/** A call that got 429 is tried again at most this many times (within its deadline). */
const MAX_BUSY_RETRIES = 2;
/** Hold-off after a 429 without a usable Retry-After, and the longest one we honour. */
const DEFAULT_BUSY_MS = 1000;
const MAX_BUSY_MS = 30_000;

function retryAfterMs(header: string | undefined): number {
  const seconds = header !== undefined && /^\d{1,6}$/.test(header.trim()) ? Number(header.trim()) : null;
  return seconds === null ? DEFAULT_BUSY_MS : Math.min(MAX_BUSY_MS, Math.max(100, seconds * 1000));
}

function openPool(origin: string, timeoutMs: number, concurrency: number, connectTimeoutMs?: number) {
  return new Pool(origin, {
    connections: concurrency,
    pipelining: 1,
    connect: { timeout: connectTimeoutMs ?? Math.min(3000, timeoutMs) },
    // Our own deadline governs; these only keep undici from giving up first.
    headersTimeout: timeoutMs + 1000,
    bodyTimeout: timeoutMs + 1000,
  });
}

function requestHeaders(key: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    'user-agent': 'redeem-gateway',
  };
  if (key) headers.authorization = `Bearer ${key}`;
  return headers;
}

/** The upstream's circuit breaker, its opening and closing logged. */
function openBreaker(opts: HttpActivatorOptions, origin: string) {
  const logger = opts.logger;
  return createBreaker(opts.breaker?.failureThreshold ?? 5, opts.breaker?.openMs ?? 30_000, (s) => {
    if (s === 'open') logger?.warn({ upstream: origin }, 'upstream circuit breaker open');
    else logger?.info({ upstream: origin, state: s }, `upstream circuit breaker ${s.replace('_', ' ')}`);
  });
}

/** What a log line says of an exchange (null: the breaker refused the call). */
const describe = (x: Exchange | null) =>
  x === null
    ? { reason: 'circuit open' }
    : x.kind === 'answer'
      ? { httpStatus: x.status }
      : { reason: x.reason, sent: x.kind === 'lost' };

/** The fair semaphore's key: a customer's checks share its part of the slots with its activations. */
const slotKey = (customerId: number | undefined) =>
  customerId === undefined ? 'unknown' : `customer:${customerId}`;

/** The upstream's own `unknown` is an answer; no answer, or a broken one, is worth a log line. */
const checkAnswered = (x: Exchange | null) =>
  x?.kind === 'answer' && x.status === 200 && judgeCheck(x).verdict === 'healthy';

export function createHttpActivator(opts: HttpActivatorOptions): HttpActivator {
  const base = new URL(opts.url);
  const basePath = base.pathname.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const concurrency = opts.concurrency ?? 16;
  const retryDelays = opts.retryDelaysMs ?? [50, 250];
  const logger = opts.logger;
  const pool = openPool(base.origin, timeoutMs, concurrency, opts.connectTimeoutMs);
  // Shared fairly: while another customer waits, no customer holds more than half the calls.
  const slots = createFairSemaphore(concurrency);
  // Until when (ms) the upstream asked us to hold off (a 429); calls wait for it, within their deadline.
  let busyUntil = 0;
  const breaker = openBreaker(opts, base.origin);
  const headers = requestHeaders(opts.key);

  const exchange = (path: string, payload: unknown) =>
    exchangeUnlessSent(
      pool,
      { origin: base.origin, path: `${basePath}${path}`, headers, body: JSON.stringify(payload) },
      timeoutMs,
      retryDelays,
    );

  /**
   * Runs one call under the breaker and the concurrency bound. `judge` turns the exchange into a
   * result and a verdict for the breaker: only transport errors, timeouts and 5xx count against
   * the upstream (`failure`); an answer about the request itself, a 4xx, is `healthy`. A 429
   * (the upstream is busy) counts neither way: every call holds off for its Retry-After, and the
   * call that got it is tried again while its deadline allows (a 4xx never consumed the code).
   */
  async function call<T>(
    key: string,
    path: string,
    payload: unknown,
    judge: (x: Exchange) => { result: T; verdict: Verdict },
    refused: T,
  ): Promise<{ result: T; exchange: Exchange | null }> {
    const admitted = breaker.admit();
    if (admitted === null) return { result: refused, exchange: null };
    const deadline = Date.now() + timeoutMs;
    // Waiting for a slot is not upstream time; a call that waits too long is never sent.
    const release = await slots.acquire(key, timeoutMs);
    if (!release) {
      breaker.neutral();
      return { result: refused, exchange: { kind: 'not_sent', reason: 'no free slot', retryable: false } };
    }
    try {
      for (let busyRetries = 0; ; busyRetries++) {
        const hold = busyUntil - Date.now();
        if (hold > 0) {
          if (Date.now() + hold >= deadline) {
            breaker.neutral();
            return {
              result: refused,
              exchange: { kind: 'not_sent', reason: 'upstream busy', retryable: false },
            };
          }
          await sleep(hold);
        }
        const x = await exchange(path, payload);
        if (x.kind === 'answer' && x.status === 429) {
          busyUntil = Math.max(busyUntil, Date.now() + retryAfterMs(x.retryAfter));
          if (busyRetries < MAX_BUSY_RETRIES && busyUntil < deadline) continue;
          breaker.neutral();
          return { result: judge(x).result, exchange: x };
        }
        const { result, verdict } = judge(x);
        if (verdict === 'healthy') breaker.success();
        else breaker.failure();
        return { result, exchange: x };
      }
    } finally {
      release();
    }
  }

  return {
    name: 'http',
    async activate({ code, playerId, customerId }) {
      const { result, exchange: x } = await call(
        slotKey(customerId),
        '/v1/activate',
        { code, player_id: playerId },
        judgeActivation,
        { status: 'failed', unknown: false } satisfies ActivationOutcome,
      );
      if (result.status === 'failed') {
        // Codes never reach the logs; their last 4 characters may.
        logger?.warn(
          { last4: code.slice(-4), unknown: result.unknown === true, ...describe(x) },
          'upstream activation failed',
        );
      }
      return result;
    },
    async status({ code }) {
      const { result, exchange: x } = await call('status-checks', '/v1/status', { code }, judgeStatus, null);
      if (result === null)
        logger?.warn({ last4: code.slice(-4), ...describe(x) }, 'upstream status check failed');
      return result;
    },
    async check({ code, customerId }) {
      const key = slotKey(customerId);
      const { result, exchange: x } = await call(key, '/v1/check', { code }, judgeCheck, 'unknown');
      if (result === 'unknown' && !checkAnswered(x))
        logger?.warn({ last4: code.slice(-4), ...describe(x) }, 'upstream code check failed');
      return result;
    },
    breakerState: () => breaker.state(),
    close: () => pool.close(),
  };
}
