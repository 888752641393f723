// The operations of the public API as the OpenAPI document describes them: the response headers
// each status carries, the closed list of error codes per operation, and the shared parameters.
// document.ts and the path files build the document from these.
import { DEFAULT_TOLERANCE_SEC, SIGNATURE_HEADER } from '../core/webhooks/signing.ts';
import { DOCUMENTED_ERROR_STATUS, errorBody, type JsonSchema } from './schemas.ts';

export type Header = { description: string; required?: boolean; schema: JsonSchema };

export const int = (description: string, required = true): Header => ({
  description,
  required,
  schema: { type: 'integer', minimum: 0 },
});

/** Response headers, by name; `$ref`-ed from every response that carries them. */
export const HEADERS: Record<string, Header> = {
  'X-Request-Id': {
    description:
      'The request id, equal to `request_id` in the body (an idempotent replay repeats the original).',
    required: true,
    schema: { type: 'string', pattern: '^req_[0-9A-Za-z]{20,}$' },
  },
  'SVC-Version': {
    description: 'The API contract version, semver (as `info.version` here).',
    required: true,
    schema: { type: 'string', pattern: '^\\d+\\.\\d+\\.\\d+$' },
  },
  'SVC-Cost': int('Requests billed by this call (0 unless this call billed; 0 on a 202 and on a replay).'),
  'SVC-Idempotent-Replay': {
    description: '`true` when the response replays an earlier answer of the same Idempotency-Key.',
    required: true,
    schema: { type: 'string', enum: ['true', 'false'] },
  },
  'Cache-Control': {
    description: 'Every answer is `no-store`.',
    required: true,
    schema: { type: 'string', const: 'no-store' },
  },
  'SVC-Quota-Used': int(
    "Today's (UTC) requests held or billed, after the call. Sent once the key is identified.",
  ),
  'SVC-Quota-Remaining': int(
    'Included requests left today, after the call. Sent once the key is identified.',
  ),
  'SVC-Balance-Usd': {
    description:
      'Spendable wallet balance in USD after the call (at most 6 decimals). Sent once the key is identified.',
    required: true,
    schema: { type: 'string', pattern: '^-?\\d+(\\.\\d{1,6})?$' },
  },
  'RateLimit-Limit': int('Redeems accepted per key in any sliding 10 seconds (30).'),
  'RateLimit-Remaining': int('Slots left in the window after this request.'),
  'RateLimit-Reset': int('Whole seconds, rounded up, until the oldest counted request leaves the window.'),
  'Retry-After': {
    description: 'Seconds to wait before trying again.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
  Location: {
    description: 'The job to poll: `/v1/jobs/{job_id}`.',
    required: true,
    schema: { type: 'string', pattern: '^/v1/jobs/job_[0-9A-Za-z]{20,}$' },
  },
};

export const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
export const optional = (name: string) => ({ ...HEADERS[name]!, required: false });

export const EVERY = ['X-Request-Id', 'SVC-Version', 'SVC-Cost', 'SVC-Idempotent-Replay', 'Cache-Control'];
export const ACCOUNT = ['SVC-Quota-Used', 'SVC-Quota-Remaining', 'SVC-Balance-Usd'];
export const RATE = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

export interface Op {
  /** Key-authenticated (false: no key). */
  auth: boolean;
  /** Counted by the burst limit: RateLimit-* headers. */
  burst?: boolean;
  /** Error codes this operation can answer, besides those of every operation. */
  errors: string[];
}

/** Headers of one response: the required ones, then the optional ones. */
export function headersFor(op: Op, status: number, extra: { required?: string[]; optional?: string[] } = {}) {
  const out: Record<string, unknown> = {};
  for (const h of EVERY) out[h] = ref(h);
  // The key is identified on every answer but 401 and those answered before authentication.
  const identified = op.auth && ![400, 401, 408, 413, 500, 503].includes(status);
  // A 429 of the unknown-key limit (docs/reference/limits.md#unknown-key-floods) is answered before any key is identified.
  const sure = identified && status !== 429;
  for (const h of ACCOUNT) out[h] = op.auth && sure ? ref(h) : op.auth ? optional(h) : undefined;
  // The burst slot is taken after authorization: a 403 comes before it.
  if (op.burst) for (const h of RATE) out[h] = sure && status !== 403 ? ref(h) : optional(h);
  for (const h of extra.required ?? []) out[h] = ref(h);
  for (const h of extra.optional ?? []) out[h] = optional(h);
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

export const json = (schema: JsonSchema) => ({ 'application/json': { schema } });

export const AUTH_401 = ['unauthorized', 'revoked', 'expired'];
/** Answered by every operation: a malformed URL, a body that never arrives, a crash, a stopping process. */
export const EVERY_ERROR = ['bad_request', 'request_timeout', 'internal', 'unavailable'];

/** The error responses of an operation, one per status, each with its closed list of error_codes. */
export function errorResponses(op: Op) {
  // Every keyed operation may answer rate_limited: the unknown-key limit per client address
  // (docs/reference/limits.md#read-budget), besides its own limit (the burst limit, the read budget, registrations).
  const codes = [
    ...new Set([...EVERY_ERROR, ...(op.auth ? [...AUTH_401, 'rate_limited'] : []), ...op.errors]),
  ];
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const status = DOCUMENTED_ERROR_STATUS[code];
    if (status === undefined) throw new Error(`undocumented error code ${code}`);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const retry = status === 429 || status === 503 ? { required: ['Retry-After'] } : {};
    const retry409 =
      status === 409 && list.includes('idempotency_in_progress') ? { optional: ['Retry-After'] } : {};
    out[String(status)] = {
      description: ERROR_DESCRIPTIONS[status] ?? 'Error.',
      headers: headersFor(op, status, { ...retry, ...retry409 }),
      content: json(errorBody(list)),
    };
  }
  return out;
}

export const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is malformed: fix it (no retry).',
  401: 'No valid key: `unauthorized`, `revoked` or `expired` (fix or rotate the key).',
  402: 'Billing refused the request before any code was attempted; nothing is held or billed.',
  403: 'The key was identified but may not do this here.',
  404: '`not_found`: no such job of your customer and mode (no existence leak).',
  408: '`request_timeout`: the body did not arrive within 30 seconds.',
  409: '`no_stock` (nothing billed), or `idempotency_in_progress` (an identical request still runs: wait Retry-After, then retry with the same key).',
  413: '`payload_too_large`: the body is over 262,144 bytes (checked while reading).',
  422: 'Same Idempotency-Key, different body: use a new key.',
  429: '`rate_limited` (`retry_after_sec` in the body): the burst limit of POST /v1/redeem, the read budget of a key (300 reads per sliding 10 s over GET /v1/me, /v1/stock, /v1/jobs/{id}, /v1/events and /v1/statements), 10 webhook registrations and 10 redeliveries a minute per customer and mode, or too many unknown keys from one client address (50 per 10 s; answered before the key is identified, so without the quota headers). Or `quota_exceeded` (no overage; until 00:00 UTC). Holds and bills nothing.',
  500: '`internal`: retry with the same Idempotency-Key. Never carries internal detail.',
  503: "`unavailable` (the database is away or the process is stopping): retry with backoff and the same Idempotency-Key. `job_interrupted`: the key's async job stopped; retry with a new key.",
};

export const KEYED = [{ bearerAuth: [] }];
export const PUBLIC: unknown[] = [];

export const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description:
    'Makes retries safe: the same key and body within 24 hours replays the stored answer and bills nothing ' +
    'again. Scoped to your customer and mode. A request refused before work starts (400, 402, 409 no_stock, ' +
    '429) takes no key.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
};

export const redeemOp: Op = {
  auth: true,
  burst: true,
  errors: [
    'bad_player',
    'bad_codes',
    'bad_packs',
    'no_combo',
    'empty',
    'ambiguous_source',
    'idempotency_required',
    'no_plan',
    'subscription_expired',
    'insufficient_funds',
    'ip_denied',
    'scope_denied',
    'unknown_customer',
    'no_stock',
    'idempotency_in_progress',
    'payload_too_large',
    'idempotency_conflict',
    'quota_exceeded',
    'rate_limited',
    'job_interrupted',
  ],
};
export const webhookOp: Op = {
  auth: true,
  errors: [
    'https_required',
    'webhook_url_blocked',
    'ip_denied',
    'scope_denied',
    'unknown_customer',
    'payload_too_large',
  ],
};
export const meOp: Op = { auth: true, errors: ['ip_denied', 'unknown_customer'] };
export const readOp: Op = { auth: true, errors: ['ip_denied', 'scope_denied', 'unknown_customer'] };
export const jobOp: Op = {
  auth: true,
  errors: ['ip_denied', 'scope_denied', 'unknown_customer', 'not_found'],
};
export const openOp: Op = { auth: false, errors: [] };

export function redeemResponses() {
  const errors = errorResponses(redeemOp) as Record<
    string,
    { content: Record<string, { schema: JsonSchema }> }
  >;
  const conflict = errors['422']!;
  return {
    '200': {
      description:
        'At least one code activated. Also the replay of a finished sync redeem (SVC-Idempotent-Replay: true).',
      headers: headersFor(redeemOp, 200),
      content: json({ $ref: '#/components/schemas/RedeemResult' }),
    },
    '202': {
      description:
        '`"async": true`: the job is queued; poll Location or wait for the webhook. SVC-Cost is 0.',
      headers: headersFor(redeemOp, 202, { required: ['Location'] }),
      content: json({ $ref: '#/components/schemas/Accepted' }),
    },
    ...errors,
    '422': {
      description:
        'Two meanings (specification 7.5): a redeem result with a `codes` array where no code activated ' +
        '(billed outcomes such as code_used are still billed), or the error `idempotency_conflict`.',
      headers: headersFor(redeemOp, 422),
      content: json({
        oneOf: [{ $ref: '#/components/schemas/RedeemResult' }, conflict.content['application/json']!.schema],
      }),
    },
  };
}

export const WEBHOOK_HEADERS = [
  {
    name: SIGNATURE_HEADER,
    in: 'header',
    required: true,
    description:
      '`t=<unix seconds>,v1=<hex>`: v1 is HMAC-SHA256 keyed with the whole secret string (`whsec_…`, as ' +
      'UTF-8, not decoded) over the bytes `<t>.` followed by the raw body bytes. Several v1 values may ' +
      `appear; accept if any matches (constant-time). Refuse a t more than ${DEFAULT_TOLERANCE_SEC} s ` +
      'from your clock. Verify the raw bytes as received, never a re-serialised object.',
    schema: { type: 'string', pattern: '^t=\\d+(,[a-z0-9]+=[^,]*)+$' },
  },
  {
    name: 'SVC-Event',
    in: 'header',
    required: true,
    description: 'The event name.',
    schema: { type: 'string' },
  },
  {
    name: 'SVC-Delivery-Id',
    in: 'header',
    required: true,
    description: 'The event id (`evt_…`), the same on every retry of one event: deduplicate on it.',
    schema: { type: 'string' },
  },
];

export function webhook(event: string, schema: string, summary: string) {
  return {
    post: {
      operationId: event.replace('.', '_'),
      summary,
      description:
        'Sent to the URL registered with POST /v1/webhook when an async job ends. Answer any 2xx within 10 ' +
        'seconds, then do slow work; otherwise it is retried up to 3 times with growing pauses, then dropped ' +
        '(GET /v1/jobs/{id} stays the fallback). Redirects are not followed.',
      parameters: WEBHOOK_HEADERS,
      requestBody: { required: true, content: json({ $ref: `#/components/schemas/${schema}` }) },
      responses: { '2XX': { description: 'Received.' } },
    },
  };
}

/** Where GET /docs serves its one stylesheet (render-html.ts links it, the document lists it). */
export const DOCS_CSS_PATH = '/docs/assets/reference.css';
