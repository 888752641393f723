// The API's bodies, as the OpenAPI document (GET /v1/openapi.json) describes them. The service may
// add new values of `status`, `error_code` and `disposition`, and new fields: the string unions
// below stay open (`string & {}`) so an unknown value type-checks and can be handled as a generic
// failure.

/** A string union that still accepts values the SDK does not know yet. */
export type Open<T extends string> = T | (string & {});

export type Mode = 'live' | 'test';
/** The per-code statuses this SDK knows (the service's one list of them). */
export type KnownCodeStatus = 'activated' | 'code_used' | 'invalid_code' | 'bad_player' | 'failed';
export type CodeStatus = Open<KnownCodeStatus>;
export type CodeErrorCode = Open<
  '' | 'CODE_USED' | 'INVALID_CODE' | 'CHARACTER_NOT_FOUND' | 'ACTIVATION_FAILED'
>;
/** What to do with the code in your own inventory. */
export type Disposition = Open<'consumed' | 'deleted' | 'kept' | 'returned' | 'quarantined'>;
export type JobStatus = Open<'queued' | 'running' | 'completed' | 'failed' | 'interrupted'>;
export type ErrorCode = Open<
  | 'bad_request'
  | 'bad_player'
  | 'bad_codes'
  | 'bad_packs'
  | 'no_combo'
  | 'empty'
  | 'ambiguous_source'
  | 'idempotency_required'
  | 'https_required'
  | 'webhook_url_blocked'
  | 'unauthorized'
  | 'revoked'
  | 'expired'
  | 'subscription_expired'
  | 'no_plan'
  | 'insufficient_funds'
  | 'ip_denied'
  | 'scope_denied'
  | 'unknown_customer'
  | 'not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'no_stock'
  | 'idempotency_in_progress'
  | 'payload_too_large'
  | 'idempotency_conflict'
  | 'quota_exceeded'
  | 'rate_limited'
  | 'internal'
  | 'unavailable'
  | 'job_interrupted'
  // Raised by the SDK itself, never sent by the service:
  | 'network_error'
  | 'timeout'
  | 'http_error'
>;

/** The body of POST /v1/redeem. Give exactly one of `codes`, `packs` or `uc`. */
export type RedeemRequest = {
  /** 5 to 20 digits. */
  player_id: string | number;
  /** Optional: inferred from the field given. */
  source?: 'codes' | 'stock';
  /** Reference sent back in the result, the job and webhooks (at most 128 characters). */
  reference?: string;
} & (
  | { codes: string[]; packs?: never; uc?: never }
  | { packs: Record<string, number>; codes?: never; uc?: never }
  | { uc: number; codes?: never; packs?: never }
);

export interface CodeOutcome {
  /** A caller code as sent; a stock code masked with `*` but for its last 4 characters. */
  code: string;
  category: string | null;
  uc: number | null;
  status: CodeStatus;
  error_code: CodeErrorCode;
  disposition: Disposition;
  billed: boolean;
}

export interface RedeemResult {
  /** True exactly when at least one code activated (HTTP 200); false on a 422 result. */
  ok: boolean;
  request_id: string;
  job_id?: string;
  player_id: string;
  mode: Mode;
  source: Open<'codes' | 'stock'>;
  reference: string | null;
  codes: CodeOutcome[];
  summary: Record<KnownCodeStatus, number>;
  uc_delivered: number;
  billed_requests: number;
  refunded_requests: number;
}

export interface JobResult extends RedeemResult {
  job_id: string;
}

export interface Accepted {
  ok: true;
  request_id: string;
  job_id: string;
  status: 'queued';
}

export interface ErrorBody {
  ok: false;
  error_code: ErrorCode;
  message: string;
  request_id: string;
  retry_after_sec?: number;
  subscription_expired_at?: string;
  job_id?: string;
  /** With job_interrupted: the outcomes recorded before the stop. */
  codes?: CodeOutcome[];
}

export interface JobView {
  ok: true;
  request_id: string;
  job_id: string;
  status: JobStatus;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  player_id: string;
  source: Open<'codes' | 'stock'>;
  reference: string | null;
  progress: { total: number; done: number };
  result: JobResult | null;
  error: (ErrorBody & { job_id: string }) | null;
}

export interface Account {
  ok: true;
  request_id: string;
  customer_id: number;
  key_prefix: string;
  scopes: Open<'redeem' | 'read'>[];
  mode: Mode;
  plan: string | null;
  plan_active: boolean;
  quota: { daily_limit: number | null; used_today: number; remaining_today: number; overage_today: number };
  per_request_usd: number;
  balance_usd: number;
  subscription: { required: boolean; active: boolean; expires_at: string | null; days_left: number | null };
}

export interface Stock {
  ok: true;
  request_id: string;
  mode: Mode;
  categories: { category: string; uc: number; available: number; reserved: number; quarantined: number }[];
  total_available: number;
  total_uc_available: number;
}

export interface WebhookRegistration {
  ok: true;
  request_id: string;
  url: string;
  /** Signs deliveries; shown only now. */
  secret: string;
  note: string;
}

export type WebhookEvent =
  | { id: string; event: 'redeem.completed'; created_at: number; data: JobResult }
  | { id: string; event: 'redeem.failed'; created_at: number; data: ErrorBody & { job_id: string } };
