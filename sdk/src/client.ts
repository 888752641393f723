// The API client: typed calls over fetch, retries that are safe because a redeem's
// Idempotency-Key is made once per call and sent on every attempt, and job polling.

import type { Call, CallOptions } from './call.js';
import { randomKey } from './crypto.js';
import { errorFromResponse, JobInterruptedError, RedeemGatewayError } from './errors.js';
import { EventsApi, StatementsApi } from './reconcile.js';
import type {
  Accepted,
  Account,
  ErrorBody,
  JobResult,
  JobView,
  RedeemRequest,
  RedeemResult,
  Stock,
  WebhookRegistration,
} from './types.js';

export interface RetryInfo {
  /** The attempt that failed, from 1. */
  attempt: number;
  /** How long the client waits before the next attempt. */
  delayMs: number;
  error: RedeemGatewayError;
}

export interface ClientOptions {
  apiKey: string;
  /** Default `http://127.0.0.1:8080`. */
  baseUrl?: string;
  /** Retries after the first attempt (default 3). 0 disables retries. */
  maxRetries?: number;
  /** First backoff pause when the service gives no Retry-After (default 500 ms; doubles, with jitter). */
  retryBaseMs?: number;
  /**
   * The longest pause the client waits before a retry (default 30 s). A Retry-After longer than this
   * (a `quota_exceeded` lasts until 00:00 UTC) is not waited for: the error is thrown at once.
   */
  maxRetryDelayMs?: number;
  /** Time limit of one attempt (default 60 s; a sync redeem of many slow codes takes a while). */
  timeoutMs?: number;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
  /** Called before each retry: for logs and metrics. */
  onRetry?: (info: RetryInfo) => void;
}

export interface RedeemOptions extends CallOptions {
  /** Default: a new random key for this call, reused by each of its retries. */
  idempotencyKey?: string;
}

export interface WaitOptions extends CallOptions {
  /** Give up after this long (default 10 minutes): throws `timeout`. */
  timeoutMs?: number;
  /** Pause between polls when the service gives no Retry-After (default 1000 ms, the least). */
  pollIntervalMs?: number;
}

interface Sent<T> {
  body: T;
  status: number;
  headers: Headers;
}

const TERMINAL_FAILURES = new Set(['failed', 'interrupted']);

export class RedeemGateway {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #fetch: typeof fetch;
  readonly #maxRetries: number;
  readonly #retryBaseMs: number;
  readonly #maxRetryDelayMs: number;
  readonly #timeoutMs: number;
  readonly #onRetry: ((info: RetryInfo) => void) | undefined;
  /** The webhook event log: list (an async iterator of pages), get, redeliver. */
  readonly events: EventsApi;
  /** Statements per UTC day: get (JSON) and csv (text). */
  readonly statements: StatementsApi;

  constructor(options: ClientOptions) {
    if (!options?.apiKey) throw new TypeError('apiKey is required');
    this.#apiKey = options.apiKey;
    this.baseUrl = (options.baseUrl ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#maxRetries = Math.max(0, options.maxRetries ?? 3);
    this.#retryBaseMs = options.retryBaseMs ?? 500;
    this.#maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#onRetry = options.onRetry;
    const call: Call = (method, path, body, opts, headers) =>
      this.#call(method, path, body, opts, headers).then((r) => r.body as never);
    this.events = new EventsApi(call);
    this.statements = new StatementsApi(call);
  }

  /** GET /v1/me: the account record of the key (plan, quota, wallet, subscription). */
  me(options: CallOptions = {}): Promise<Account> {
    return this.#call<Account>('GET', '/v1/me', undefined, options).then((r) => r.body);
  }

  /** GET /v1/stock: your stock of codes in the key's mode, by category. */
  stock(options: CallOptions = {}): Promise<Stock> {
    return this.#call<Stock>('GET', '/v1/stock', undefined, options).then((r) => r.body);
  }

  /**
   * POST /v1/redeem, synchronously. Resolves with the result whether or not a code activated
   * (`ok` false is the 422 result where none did: read each code's status and disposition).
   */
  async redeem(request: RedeemRequest, options: RedeemOptions = {}): Promise<RedeemResult> {
    // Sent as given (no `async` field: sync is the default), so the body, and with it the
    // idempotency fingerprint, is the one a hand-written request would have.
    const { async: _async, ...body } = request as RedeemRequest & { async?: unknown };
    const r = await this.#redeem<RedeemResult | Accepted>(body, options);
    if (r.status === 202) throw unexpected(r, 'a sync redeem was answered 202');
    return r.body as RedeemResult;
  }

  /** POST /v1/redeem with `"async": true`: the job is queued; follow it with waitForJob(). */
  async redeemAsync(request: RedeemRequest, options: RedeemOptions = {}): Promise<Accepted> {
    const r = await this.#redeem<Accepted | RedeemResult>({ ...request, async: true }, options);
    if (r.status !== 202) throw unexpected(r, `an async redeem was answered ${r.status}`);
    return r.body as Accepted;
  }

  /** GET /v1/jobs/{id}: the job in any state. */
  getJob(jobId: string, options: CallOptions = {}): Promise<JobView> {
    return this.#call<JobView>('GET', `/v1/jobs/${encodeURIComponent(jobId)}`, undefined, options).then(
      (r) => r.body,
    );
  }

  /**
   * Polls the job until it ends, pausing as the service asks (Retry-After, at least 1 s), and
   * resolves with its redeem result. A job that failed throws RedeemGatewayError (`internal`); one
   * that was interrupted throws JobInterruptedError with the outcomes recorded before the stop.
   * Network errors and 5xx while polling are waited out until `timeoutMs`.
   */
  async waitForJob(jobId: string, options: WaitOptions = {}): Promise<JobResult> {
    const deadline = Date.now() + (options.timeoutMs ?? 600_000);
    const interval = Math.max(1000, options.pollIntervalMs ?? 1000);
    for (;;) {
      let wait = interval;
      try {
        const r = await this.#call<JobView>(
          'GET',
          `/v1/jobs/${encodeURIComponent(jobId)}`,
          undefined,
          options,
        );
        const job = r.body;
        if (job.status === 'completed' && job.result) return job.result;
        if (TERMINAL_FAILURES.has(job.status) || (job.finished_at && job.status !== 'completed')) {
          throw jobFailure(job, r);
        }
        wait = Math.max(interval, retryAfterMs(r.headers) ?? 0);
      } catch (err) {
        if (!(err instanceof RedeemGatewayError) || !err.retryable) throw err;
        wait = Math.max(interval, (err.retryAfterSec ?? 0) * 1000);
      }
      if (Date.now() + wait > deadline) {
        throw new RedeemGatewayError({
          status: 0,
          errorCode: 'timeout',
          message: `job ${jobId} did not finish in time`,
          retryable: true,
        });
      }
      await sleep(wait, options.signal);
    }
  }

  /**
   * POST /v1/webhook: registers (or replaces) the webhook URL of the key's mode. Keep the returned
   * `secret` (shown only now) to verify deliveries with `webhooks.verify`.
   */
  registerWebhook(url: string, options: CallOptions = {}): Promise<WebhookRegistration> {
    return this.#call<WebhookRegistration>('POST', '/v1/webhook', { url }, options).then((r) => r.body);
  }

  async #redeem<T>(body: Record<string, unknown>, options: RedeemOptions): Promise<Sent<T>> {
    const idempotencyKey = options.idempotencyKey ?? (await randomKey());
    return this.#call<T>('POST', '/v1/redeem', body, options, { 'Idempotency-Key': idempotencyKey }, [422]);
  }

  /**
   * One call with its retries. `okStatuses`: non-2xx statuses whose body is a result, not an error
   * (422 with a `codes` array is a redeem result where no code activated).
   */
  async #call<T>(
    method: string,
    path: string,
    body: unknown,
    options: CallOptions,
    extraHeaders: Record<string, string> = {},
    okStatuses: number[] = [],
  ): Promise<Sent<T>> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.#apiKey}`,
      Accept: 'application/json',
      ...extraHeaders,
    };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const payload = body === undefined ? undefined : JSON.stringify(body);
    for (let attempt = 1; ; attempt++) {
      let error: RedeemGatewayError;
      try {
        const res = await this.#send(method, path, headers, payload, options.signal);
        const parsed = await readBody(res);
        if (
          (res.status >= 200 && res.status < 300) ||
          (okStatuses.includes(res.status) && !isError(parsed))
        ) {
          return { body: parsed as T, status: res.status, headers: res.headers };
        }
        error = errorFromResponse(res.status, parsed, {
          requestId: res.headers.get('x-request-id'),
          retryAfterSec: retryAfterMs(res.headers) === null ? null : retryAfterMs(res.headers)! / 1000,
        });
      } catch (err) {
        if (err instanceof RedeemGatewayError) throw err;
        if (options.signal?.aborted) throw options.signal.reason ?? err;
        error = new RedeemGatewayError({
          status: 0,
          errorCode: isTimeout(err) ? 'timeout' : 'network_error',
          message: `${method} ${path}: ${(err as Error)?.message ?? String(err)}`,
          retryable: true,
          cause: err,
        });
      }
      if (!error.retryable || attempt > this.#maxRetries) throw error;
      const delayMs =
        error.retryAfterSec !== null
          ? error.retryAfterSec * 1000
          : Math.min(
              this.#maxRetryDelayMs,
              this.#retryBaseMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2),
            );
      if (delayMs > this.#maxRetryDelayMs) throw error;
      this.#onRetry?.({ attempt, delayMs, error });
      await sleep(delayMs, options.signal);
    }
  }

  async #send(
    method: string,
    path: string,
    headers: Record<string, string>,
    payload: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Response> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = signal ? anySignal([signal, timeout]) : timeout;
    return this.#fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(payload === undefined ? {} : { body: payload }),
      signal: combined,
    });
  }
}

function isError(body: unknown): boolean {
  return (
    typeof body === 'object' &&
    body !== null &&
    (body as { ok?: unknown }).ok === false &&
    'error_code' in body
  );
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Retry-After in milliseconds (seconds or an HTTP date), or null. */
function retryAfterMs(headers: Headers): number | null {
  const value = headers.get('retry-after');
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

function isTimeout(err: unknown): boolean {
  return (err as { name?: string })?.name === 'TimeoutError';
}

function jobFailure(job: JobView, r: Sent<JobView>): RedeemGatewayError {
  const error: Partial<ErrorBody> = job.error ?? {};
  const init = {
    status: job.status === 'interrupted' ? 503 : 500,
    errorCode: error.error_code ?? (job.status === 'interrupted' ? 'job_interrupted' : 'internal'),
    message: error.message ?? `job ${job.job_id} ended ${job.status}`,
    requestId: r.headers.get('x-request-id'),
    retryable: false,
    body: job,
  };
  if (init.errorCode === 'job_interrupted') {
    return new JobInterruptedError({ ...init, jobId: job.job_id, codes: error.codes ?? [] });
  }
  return new RedeemGatewayError(init);
}

function unexpected(r: Sent<unknown>, message: string): RedeemGatewayError {
  return new RedeemGatewayError({
    status: r.status,
    errorCode: 'http_error',
    message,
    requestId: r.headers.get('x-request-id'),
    retryable: false,
    body: r.body,
  });
}

function anySignal(signals: AbortSignal[]): AbortSignal {
  const any = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(signals);
  const controller = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    s.addEventListener('abort', () => controller.abort(s.reason), { once: true });
  }
  return controller.signal;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
