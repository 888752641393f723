// One error class for everything a call can end with, and its subclass for an interrupted job.
import type { CodeOutcome, ErrorBody, ErrorCode } from './types.js';

export interface RedeemGatewayErrorInit {
  status: number;
  errorCode: ErrorCode;
  message: string;
  requestId?: string | null;
  retryable: boolean;
  retryAfterSec?: number | null;
  body?: unknown;
  cause?: unknown;
}

/**
 * An answer that is not a success, or no answer at all. Branch on `errorCode`, never on
 * `message`. `status` is 0 when no HTTP answer arrived (`network_error`, `timeout`).
 * `retryable` says whether the same call may succeed later (429, 5xx but `job_interrupted`,
 * `idempotency_in_progress`, network errors); the client has already retried those it could.
 */
export class RedeemGatewayError extends Error {
  override name = 'RedeemGatewayError';
  readonly status: number;
  readonly errorCode: ErrorCode;
  readonly requestId: string | null;
  readonly retryable: boolean;
  /** Seconds the service asked to wait (Retry-After), when it did. */
  readonly retryAfterSec: number | null;
  /** The response body as received (the error body, or text when it was not JSON). */
  readonly body: unknown;

  constructor(init: RedeemGatewayErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.errorCode = init.errorCode;
    this.requestId = init.requestId ?? null;
    this.retryable = init.retryable;
    this.retryAfterSec = init.retryAfterSec ?? null;
    this.body = init.body;
  }
}

/**
 * The async job stopped with the process running it (`job_interrupted`): unattempted stock went
 * back to stock and unattempted holds were released. `codes` are the outcomes recorded before the
 * stop (a code out with the upstream then is `failed`, `quarantined`, refunded). Retry the redeem
 * with a new Idempotency-Key, for the codes that still need it.
 */
export class JobInterruptedError extends RedeemGatewayError {
  override name = 'JobInterruptedError';
  readonly jobId: string | null;
  readonly codes: CodeOutcome[];

  constructor(init: RedeemGatewayErrorInit & { jobId: string | null; codes: CodeOutcome[] }) {
    super({ ...init, retryable: false });
    this.jobId = init.jobId;
    this.codes = init.codes;
  }
}

/** Whether a status and error code may succeed when sent again (docs/reference/keys-and-modes.md#error-codes). */
export function isRetryable(status: number, errorCode: string): boolean {
  if (errorCode === 'job_interrupted') return false;
  if (status === 0 || status === 429 || status >= 500) return true;
  return status === 409 && errorCode === 'idempotency_in_progress';
}

/** The error for an HTTP answer that is not a success. */
export function errorFromResponse(
  status: number,
  body: unknown,
  headers: { requestId: string | null; retryAfterSec: number | null },
): RedeemGatewayError {
  const err = isErrorBody(body) ? body : null;
  const errorCode: ErrorCode = err?.error_code ?? 'http_error';
  const init: RedeemGatewayErrorInit = {
    status,
    errorCode,
    message: err?.message ?? `HTTP ${status}`,
    requestId: err?.request_id ?? headers.requestId,
    retryable: isRetryable(status, errorCode),
    retryAfterSec: headers.retryAfterSec ?? err?.retry_after_sec ?? null,
    body,
  };
  if (errorCode === 'job_interrupted') {
    return new JobInterruptedError({ ...init, jobId: err?.job_id ?? null, codes: err?.codes ?? [] });
  }
  return new RedeemGatewayError(init);
}

export function isErrorBody(body: unknown): body is ErrorBody {
  return (
    typeof body === 'object' &&
    body !== null &&
    (body as { ok?: unknown }).ok === false &&
    typeof (body as { error_code?: unknown }).error_code === 'string'
  );
}
