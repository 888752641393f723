// The OpenAPI 3.1 document of the public API (contract section 12.9), built once from the body
// schemas in schemas.ts and the constants the code uses. GET /v1/openapi.json serves it, GET
// /docs renders it, and the test suite checks every public response against it.
import { DEFAULT_TOLERANCE_SEC, SIGNATURE_HEADER } from '../core/webhooks/signing.ts';
import { API_VERSION } from '../http/headers.ts';
import { BODY_LIMIT } from '../http/plumbing.ts';
import { eventPaths, reconcileSchemas, statementPaths } from './reconcile-paths.ts';
import { componentSchemas, DOCUMENTED_ERROR_STATUS, errorBody, type JsonSchema } from './schemas.ts';

type Header = { description: string; required?: boolean; schema: JsonSchema };

const int = (description: string, required = true): Header => ({
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

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
const optional = (name: string) => ({ ...HEADERS[name]!, required: false });

const EVERY = ['X-Request-Id', 'SVC-Version', 'SVC-Cost', 'SVC-Idempotent-Replay', 'Cache-Control'];
const ACCOUNT = ['SVC-Quota-Used', 'SVC-Quota-Remaining', 'SVC-Balance-Usd'];
const RATE = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

interface Op {
  /** Key-authenticated (false: no key). */
  auth: boolean;
  /** Counted by the burst limit: RateLimit-* headers. */
  burst?: boolean;
  /** Error codes this operation can answer, besides those of every operation. */
  errors: string[];
}

/** Headers of one response: the required ones, then the optional ones. */
function headersFor(op: Op, status: number, extra: { required?: string[]; optional?: string[] } = {}) {
  const out: Record<string, unknown> = {};
  for (const h of EVERY) out[h] = ref(h);
  // The key is identified on every answer but 401 and those answered before authentication.
  const identified = op.auth && ![400, 401, 408, 413, 500, 503].includes(status);
  for (const h of ACCOUNT) out[h] = op.auth && identified ? ref(h) : op.auth ? optional(h) : undefined;
  // The burst slot is taken after authorization: a 403 comes before it.
  if (op.burst) for (const h of RATE) out[h] = identified && status !== 403 ? ref(h) : optional(h);
  for (const h of extra.required ?? []) out[h] = ref(h);
  for (const h of extra.optional ?? []) out[h] = optional(h);
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

/** Where GET /docs serves its one stylesheet (render-html.ts links it, the document lists it). */
export const DOCS_CSS_PATH = '/docs/assets/reference.css';

const json = (schema: JsonSchema) => ({ 'application/json': { schema } });

const AUTH_401 = ['unauthorized', 'revoked', 'expired'];
/** Answered by every operation: a malformed URL, a body that never arrives, a crash, a stopping process. */
const EVERY_ERROR = ['bad_request', 'request_timeout', 'internal', 'unavailable'];

/** The error responses of an operation, one per status, each with its closed list of error_codes. */
function errorResponses(op: Op) {
  const codes = [...EVERY_ERROR, ...(op.auth ? AUTH_401 : []), ...op.errors];
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

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is malformed: fix it (no retry).',
  401: 'No valid key: `unauthorized`, `revoked` or `expired` (fix or rotate the key).',
  402: 'Billing refused the request before any code was attempted; nothing is held or billed.',
  403: 'The key was identified but may not do this here.',
  404: '`not_found`: no such job of your customer and mode (no existence leak).',
  408: '`request_timeout`: the body did not arrive within 30 seconds.',
  409: '`no_stock` (nothing billed), or `idempotency_in_progress` (an identical request still runs: wait Retry-After, then retry with the same key).',
  413: '`payload_too_large`: the body is over 262,144 bytes (checked while reading).',
  422: 'Same Idempotency-Key, different body: use a new key.',
  429: '`rate_limited` (burst limit; `retry_after_sec` in the body) or `quota_exceeded` (no overage; until 00:00 UTC). Holds and bills nothing.',
  500: '`internal`: retry with the same Idempotency-Key. Never carries internal detail.',
  503: "`unavailable` (the database is away or the process is stopping): retry with backoff and the same Idempotency-Key. `job_interrupted`: the key's async job stopped; retry with a new key.",
};

const KEYED = [{ bearerAuth: [] }];
const PUBLIC: unknown[] = [];

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description:
    'Makes retries safe: the same key and body within 24 hours replays the stored answer and bills nothing ' +
    'again. Scoped to your customer and mode. A request refused before work starts (400, 402, 409 no_stock, ' +
    '429) takes no key.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
};

const redeemOp: Op = {
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
const webhookOp: Op = {
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
const meOp: Op = { auth: true, errors: ['ip_denied', 'unknown_customer'] };
const readOp: Op = { auth: true, errors: ['ip_denied', 'scope_denied', 'unknown_customer'] };
const jobOp: Op = { auth: true, errors: ['ip_denied', 'scope_denied', 'unknown_customer', 'not_found'] };
const openOp: Op = { auth: false, errors: [] };

function redeemResponses() {
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

const WEBHOOK_HEADERS = [
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

function webhook(event: string, schema: string, summary: string) {
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

function buildDocument() {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Redeem Gateway API',
      version: API_VERSION,
      summary: 'Redeem prepaid UC codes for a player; billed per outcome.',
      description:
        'All bodies are JSON (`application/json; charset=utf-8`). Every response carries X-Request-Id, ' +
        'SVC-Version, SVC-Cost, SVC-Idempotent-Replay and Cache-Control: no-store; every error, at any ' +
        'status, is the error body (`ok: false`, `error_code`, `message`, `request_id`). Tolerate unknown ' +
        '`status`, `error_code` and `disposition` values and new fields. An unknown path is `404 not_found` ' +
        'and a known path with another method `405 method_not_allowed` (with Allow), with or without a key. ' +
        '4xx answers do not succeed on retry; 429 and 5xx do (same Idempotency-Key). Test keys (`rk_test_`) ' +
        'use a deterministic sandbox: a player id starting with 000 is bad_player; a code containing USED, ' +
        'INVALID, FAIL, TIMEOUT or SLOW gets that outcome; anything else activates once.',
    },
    servers: [{ url: '/', description: 'This service' }],
    security: KEYED,
    tags: [
      { name: 'Redeem', description: 'Redeem codes, synchronously or as a job.' },
      { name: 'Account', description: 'The calling key, its plan, quota, wallet and stock.' },
      { name: 'Webhooks', description: 'Signed deliveries when an async job ends.' },
      { name: 'Service', description: 'Health and this document.' },
    ],
    paths: {
      '/v1/redeem': {
        post: {
          operationId: 'redeem',
          tags: ['Redeem'],
          summary: 'Redeem codes for a player',
          description:
            `Scope \`redeem\`. Body at most ${BODY_LIMIT} bytes. Burst limit: 30 per key in any sliding 10 s ` +
            '(429 rate_limited). Billing is decided before any code is attempted (include first, then the ' +
            'wallet); each code is then billed (activated, code_used, invalid_code) or refunded (bad_player, ' +
            'failed).',
          parameters: [idempotencyKey],
          requestBody: {
            required: true,
            description: `JSON object, at most ${BODY_LIMIT} bytes (exactly ${BODY_LIMIT} is accepted).`,
            content: json({ $ref: '#/components/schemas/RedeemRequest' }),
          },
          responses: redeemResponses(),
        },
      },
      '/v1/jobs/{id}': {
        get: {
          operationId: 'getJob',
          tags: ['Redeem'],
          summary: 'Read an async job',
          description:
            'Scope `read` or `redeem`. Every state of a job of your customer and mode; poll no faster than ' +
            'about once a second (Retry-After: 1 while queued or running).',
          parameters: [
            {
              name: 'id',
              in: 'path',
              required: true,
              schema: { type: 'string', pattern: '^job_[0-9A-Za-z]{20,}$' },
            },
          ],
          responses: {
            '200': {
              description: 'The job.',
              headers: headersFor(jobOp, 200, { optional: ['Retry-After'] }),
              content: json({ $ref: '#/components/schemas/JobView' }),
            },
            ...errorResponses(jobOp),
          },
        },
      },
      '/v1/me': {
        get: {
          operationId: 'me',
          tags: ['Account'],
          summary: 'The account record of the calling key',
          description: 'Any valid key. Not billed.',
          responses: {
            '200': {
              description: 'The account record.',
              headers: headersFor(meOp, 200),
              content: json({ $ref: '#/components/schemas/Account' }),
            },
            ...errorResponses(meOp),
          },
        },
      },
      '/v1/stock': {
        get: {
          operationId: 'stock',
          tags: ['Account'],
          summary: "Your stock of codes in the key's mode, by category",
          description: 'Scope `read`. Not billed.',
          responses: {
            '200': {
              description: 'Counts per category.',
              headers: headersFor(readOp, 200),
              content: json({ $ref: '#/components/schemas/Stock' }),
            },
            ...errorResponses(readOp),
          },
        },
      },
      '/v1/webhook': {
        post: {
          operationId: 'registerWebhook',
          tags: ['Webhooks'],
          summary: "Register or replace the webhook URL of the key's mode",
          description:
            'Scope `redeem`. One registration per customer and mode; registering again replaces the URL and ' +
            'the secret at once (the old secret signs nothing more). There is no GET. Not billed.',
          requestBody: { required: true, content: json({ $ref: '#/components/schemas/WebhookRequest' }) },
          responses: {
            '200': {
              description: 'The registration, with the signing secret (shown only now).',
              headers: headersFor(webhookOp, 200),
              content: json({ $ref: '#/components/schemas/WebhookRegistration' }),
            },
            ...errorResponses(webhookOp),
          },
        },
      },
      '/v1/health': {
        get: {
          operationId: 'health',
          tags: ['Service'],
          summary: 'Service health',
          description:
            'No key. 503 unavailable when the database does not answer, and 503 unavailable with ' +
            '`"status": "draining"` from the moment the process begins to stop (take it out of the ' +
            'load balancer; other requests are still served for DRAIN_DELAY_MS).',
          security: PUBLIC,
          responses: {
            '200': {
              description: 'Healthy.',
              headers: headersFor(openOp, 200),
              content: json({ $ref: '#/components/schemas/Health' }),
            },
            ...errorResponses(openOp),
          },
        },
      },
      '/v1/openapi.json': {
        get: {
          operationId: 'openapi',
          tags: ['Service'],
          summary: 'This document',
          security: PUBLIC,
          responses: {
            '200': {
              description: 'The OpenAPI 3.1 document.',
              headers: headersFor(openOp, 200),
              content: json({ type: 'object', required: ['openapi', 'info', 'paths'] }),
            },
            ...errorResponses(openOp),
          },
        },
      },
      '/docs': {
        get: {
          operationId: 'docs',
          tags: ['Service'],
          summary: 'This document as an HTML reference',
          security: PUBLIC,
          responses: {
            '200': {
              description: 'The HTML reference; its stylesheet is served by the service too.',
              headers: headersFor(openOp, 200),
              content: { 'text/html': { schema: { type: 'string' } } },
            },
            ...errorResponses(openOp),
          },
        },
      },
      [DOCS_CSS_PATH]: {
        get: {
          operationId: 'docsStylesheet',
          tags: ['Service'],
          summary: 'The stylesheet of the HTML reference',
          security: PUBLIC,
          responses: {
            '200': {
              description: 'CSS.',
              headers: headersFor(openOp, 200),
              content: { 'text/css': { schema: { type: 'string' } } },
            },
            ...errorResponses(openOp),
          },
        },
      },
      // The event log and statements (contract 13.6, 13.7).
      ...eventPaths({ json, headersFor, errorResponses }),
      ...statementPaths({ json, headersFor, errorResponses }),
    },
    webhooks: {
      'redeem.completed': webhook(
        'redeem.completed',
        'RedeemCompletedEvent',
        "An async redeem finished (whatever the codes' outcomes)",
      ),
      'redeem.failed': webhook(
        'redeem.failed',
        'RedeemFailedEvent',
        'An async job failed (internal) or was interrupted (job_interrupted); holds released',
      ),
    },
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'rk_live_… or rk_test_… (32 base62 characters after the prefix)',
          description:
            '`Authorization: Bearer <key>`. The prefix sets the mode: live or test data, never both. Scopes: ' +
            '`redeem`, `read`. A key may be limited to IP addresses and may expire or be revoked.',
        },
      },
      headers: HEADERS,
      schemas: { ...componentSchemas, ...reconcileSchemas },
    },
  };
}

export type OpenApiDocument = ReturnType<typeof buildDocument>;

let built: { doc: OpenApiDocument; json: string } | undefined;

// Built on first use, not at import: a document nobody asks for costs nothing.
function document() {
  if (!built) {
    const doc = buildDocument();
    built = { doc, json: JSON.stringify(doc) };
  }
  return built;
}

/** The document. Treat it as read-only. */
export const openApiDocument = (): OpenApiDocument => document().doc;
/** The document as served (the same bytes every time). */
export const openApiJson = (): string => document().json;
