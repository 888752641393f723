// One error class with a stable error_code from a closed list, and one table from code to status.
import { isConnectionError } from '../db/connection-errors.ts';

export const ERROR_STATUS = {
  bad_request: 400,
  bad_player: 400,
  bad_codes: 400,
  bad_packs: 400,
  no_combo: 400,
  empty: 400,
  ambiguous_source: 400,
  idempotency_required: 400,
  https_required: 400,
  webhook_url_blocked: 400,
  unauthorized: 401,
  revoked: 401,
  expired: 401,
  subscription_expired: 402,
  no_plan: 402,
  insufficient_funds: 402,
  ip_denied: 403,
  scope_denied: 403,
  unknown_customer: 403,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  no_stock: 409,
  conflict: 409,
  idempotency_in_progress: 409,
  payload_too_large: 413,
  idempotency_conflict: 422,
  misdirected_request: 421,
  quota_exceeded: 429,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
  job_interrupted: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra fields of the error body (retry_after_sec, subscription_expired_at, job_id). */
    readonly extra: Record<string, unknown> = {},
    /** Extra response headers (Retry-After, Allow). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}

export function errorBody(
  code: ErrorCode,
  message: string,
  requestId: string,
  extra: Record<string, unknown> = {},
) {
  return { ok: false as const, error_code: code, message, request_id: requestId, ...extra };
}

/** What a client is told to wait when the database is away (docs/reference/running.md#database-loss). */
export const DATABASE_RETRY_AFTER_SEC = 2;

/** The 503 of a request that needed the database while it was away. */
export class DatabaseUnavailableError extends ApiError {
  override name = 'DatabaseUnavailableError';
  constructor() {
    super(
      'unavailable',
      'the service cannot reach its database; retry shortly',
      {},
      {
        'Retry-After': String(DATABASE_RETRY_AFTER_SEC),
      },
    );
  }
}

export function databaseUnavailable(): ApiError {
  return new DatabaseUnavailableError();
}

/**
 * Anything thrown, as the ApiError to answer with: an ApiError as it is, a lost or unobtainable
 * database connection as 503 unavailable; null for everything else (a bug: 500 internal).
 */
export function knownError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (isConnectionError(err)) return databaseUnavailable();
  return null;
}
