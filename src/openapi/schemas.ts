// JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of every public request and response body.
// The routes validate by hand in the contract's order (a JSON Schema validator would answer in
// its own order and with one error code), so these schemas are written here, beside the
// document that publishes them, from the constants the code itself uses (limits, formats, the
// catalog, the error table). The test suite checks every response it receives against them,
// closed (no undocumented field), so a change of shape without a change here fails a test.

import { ERROR_STATUS } from '../core/errors.ts';
import { CODE_FORMAT, MAX_CODES } from '../core/redeem/request.ts';
import { CATEGORIES } from '../core/stock/catalog.ts';

export type JsonSchema = Record<string, unknown>;

/**
 * Every error_code with its HTTP status. The error table of src/core/errors.ts, plus the codes
 * of contract section 12 whose server side other changes bring (harmless once they are there).
 */
export const DOCUMENTED_ERROR_STATUS: Record<string, number> = {
  ...ERROR_STATUS,
  request_timeout: 408,
};

const REQUEST_ID = {
  type: 'string',
  pattern: '^req_[0-9A-Za-z]{20,}$',
  description: 'Also sent as X-Request-Id.',
};
const JOB_ID = { type: 'string', pattern: '^job_[0-9A-Za-z]{20,}$' };
const TIMESTAMP = { type: 'string', format: 'date-time', description: 'ISO 8601 UTC with a Z.' };
const USD = {
  type: 'number',
  description: 'US dollars, at most 6 decimals (money is kept as integer micro-dollars).',
};
const COUNT = { type: 'integer', minimum: 0 };
const MODE = {
  type: 'string',
  enum: ['live', 'test'],
  description: 'From the key prefix: rk_live_ or rk_test_.',
};
const PLAYER_ID = { type: 'string', pattern: '^[0-9]{5,20}$' };
const CATEGORY = {
  type: 'string',
  enum: [...CATEGORIES],
  description: 'A catalog category: its UC pack size as a string.',
};

/** The code format after trimming spaces (the request accepts surrounding spaces). */
const CODE_CHARS = CODE_FORMAT.source.replace(/^\^|\$$/g, '');

export const CODE_STATUSES = ['activated', 'code_used', 'invalid_code', 'bad_player', 'failed'] as const;
export const CODE_ERROR_CODES = ['', 'CODE_USED', 'INVALID_CODE', 'CHARACTER_NOT_FOUND', 'ACTIVATION_FAILED'];
export const DISPOSITIONS = ['consumed', 'deleted', 'kept', 'returned', 'quarantined'];
export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'interrupted'];

export const CodeOutcome: JsonSchema = {
  type: 'object',
  description:
    'The outcome of one code. Read `status` together with `disposition` before changing your own ' +
    'inventory. New `status`, `error_code` and `disposition` values may appear: treat an unknown ' +
    'one as a generic failure.',
  required: ['code', 'category', 'uc', 'status', 'error_code', 'disposition', 'billed'],
  properties: {
    code: {
      type: 'string',
      pattern: '^[A-Za-z0-9*-]{4,64}$',
      description:
        'A caller code (source `codes`) as sent, trimmed. A stock code (source `stock`) is masked: every ' +
        'character but the last 4 is replaced by `*`, same length (`**************J9K2`). Caller codes of ' +
        'a job older than RETENTION_DAYS are masked the same way.',
    },
    category: {
      type: ['string', 'null'],
      description: 'Known for stock codes and when the activator reports it.',
    },
    uc: { type: ['integer', 'null'], minimum: 1 },
    status: { type: 'string', enum: [...CODE_STATUSES] },
    error_code: {
      type: 'string',
      enum: CODE_ERROR_CODES,
      description: '"" for activated; CODE_USED, INVALID_CODE, CHARACTER_NOT_FOUND or ACTIVATION_FAILED.',
    },
    disposition: {
      type: 'string',
      enum: DISPOSITIONS,
      description:
        'consumed / deleted: gone for good. kept: a caller code, still yours. returned: a stock code back ' +
        'in stock. quarantined: the upstream may have consumed it; held until a status check settles it.',
    },
    billed: { type: 'boolean' },
  },
};

const SUMMARY = {
  type: 'object',
  required: [...CODE_STATUSES],
  properties: Object.fromEntries(CODE_STATUSES.map((s) => [s, COUNT])),
};

function redeemResult(withJobId: boolean): JsonSchema {
  return {
    type: 'object',
    description:
      'One outcome per code. Status 200 when at least one code activated, 422 when none did. ' +
      'billed_requests + refunded_requests = codes attempted.',
    required: [
      'ok',
      'request_id',
      ...(withJobId ? ['job_id'] : []),
      'player_id',
      'mode',
      'source',
      'reference',
      'codes',
      'summary',
      'uc_delivered',
      'billed_requests',
      'refunded_requests',
    ],
    properties: {
      ok: { type: 'boolean', description: 'True exactly when at least one code activated.' },
      request_id: REQUEST_ID,
      ...(withJobId ? { job_id: JOB_ID } : {}),
      player_id: PLAYER_ID,
      mode: MODE,
      source: { type: 'string', enum: ['codes', 'stock'] },
      reference: { type: ['string', 'null'], maxLength: 128 },
      codes: { type: 'array', items: { $ref: '#/components/schemas/CodeOutcome' } },
      summary: SUMMARY,
      uc_delivered: COUNT,
      billed_requests: COUNT,
      refunded_requests: COUNT,
    },
  };
}

export const RedeemResult = redeemResult(false);
/** An async job's result: the same shape plus job_id (GET /v1/jobs/{id}, redeem.completed). */
export const JobResult = redeemResult(true);

/** The error body of specification 2.1, with error_code limited to `codes` when given. */
export function errorBody(codes?: readonly string[]): JsonSchema {
  return {
    type: 'object',
    description:
      'Every error, at any status. Branch on `error_code`, never on `message`; new codes may be added ' +
      '(treat an unknown one as a generic failure).',
    required: ['ok', 'error_code', 'message', 'request_id'],
    properties: {
      ok: { const: false },
      error_code: codes ? { type: 'string', enum: [...codes] } : { type: 'string' },
      message: { type: 'string', description: 'A short technical hint for logs; may change without notice.' },
      request_id: REQUEST_ID,
      retry_after_sec: {
        type: 'integer',
        minimum: 1,
        description: 'With rate_limited and quota_exceeded: the same seconds as Retry-After.',
      },
      subscription_expired_at: { ...TIMESTAMP, description: 'With subscription_expired.' },
      job_id: { ...JOB_ID, description: 'With job_interrupted (a replayed key of an interrupted job).' },
      status: {
        const: 'draining',
        description: 'With unavailable from GET /v1/health once the process has begun to stop.',
      },
    },
  };
}

export const ErrorBody = errorBody();

/** The `error` of a failed or interrupted job, and the `data` of redeem.failed. */
export const JobError: JsonSchema = {
  type: 'object',
  description:
    '`internal` when the job crashed on the service side (every hold released); `job_interrupted` when ' +
    'the process running it stopped: `codes` lists the outcomes recorded before the stop.',
  required: ['ok', 'error_code', 'message', 'request_id', 'job_id'],
  properties: {
    ok: { const: false },
    error_code: { type: 'string', enum: ['internal', 'job_interrupted'] },
    message: { type: 'string' },
    request_id: REQUEST_ID,
    job_id: JOB_ID,
    codes: { type: 'array', items: { $ref: '#/components/schemas/CodeOutcome' } },
  },
};

export const RedeemRequest: JsonSchema = {
  type: 'object',
  description:
    'Give exactly one of `codes` (your codes), `packs` or `uc` (codes from your stock). An optional ' +
    'field sent as null counts as absent; a number with no fractional part is an integer. Checks run in ' +
    'the contract order: bad_request, bad_player, ambiguous_source, empty, bad_codes, bad_packs, no_combo.',
  required: ['player_id'],
  additionalProperties: false,
  properties: {
    player_id: {
      description: '5 to 20 digits; a JSON integer is accepted and turned into a string.',
      oneOf: [PLAYER_ID, { type: 'integer', minimum: 0 }],
    },
    source: {
      type: ['string', 'null'],
      enum: ['codes', 'stock', null],
      description: 'Optional: inferred from which of codes / packs / uc is given.',
    },
    codes: {
      type: ['array', 'null'],
      minItems: 1,
      maxItems: MAX_CODES,
      uniqueItems: true,
      items: { type: 'string', pattern: `^ *${CODE_CHARS} *$` },
      description: `1 to ${MAX_CODES} distinct codes, each 4 to 64 of A-Z a-z 0-9 - after trimming spaces.`,
    },
    packs: {
      type: ['object', 'null'],
      minProperties: 1,
      propertyNames: CATEGORY,
      additionalProperties: { type: 'integer', minimum: 1 },
      description: `Category → count, total 1 to ${MAX_CODES}, taken from your stock.`,
    },
    uc: {
      type: ['integer', 'null'],
      minimum: 1,
      description: `Take the fewest stock codes whose UC values sum exactly to uc (at most ${MAX_CODES} codes).`,
    },
    async: {
      type: ['boolean', 'null'],
      description: 'true: answer 202 at once and run as a job. Default false.',
    },
    reference: {
      type: ['string', 'null'],
      maxLength: 128,
      description: 'Your own reference, echoed in the result, the job and webhooks.',
    },
  },
};

export const Accepted: JsonSchema = {
  type: 'object',
  required: ['ok', 'request_id', 'job_id', 'status'],
  properties: {
    ok: { const: true },
    request_id: REQUEST_ID,
    job_id: JOB_ID,
    status: { const: 'queued' },
  },
};

export const JobView: JsonSchema = {
  type: 'object',
  required: [
    'ok',
    'request_id',
    'job_id',
    'status',
    'created_at',
    'started_at',
    'finished_at',
    'player_id',
    'source',
    'reference',
    'progress',
    'result',
    'error',
  ],
  properties: {
    ok: { const: true },
    request_id: REQUEST_ID,
    job_id: JOB_ID,
    status: {
      type: 'string',
      enum: JOB_STATUSES,
      description: 'queued → running → completed | failed | interrupted. Tolerate new values.',
    },
    created_at: TIMESTAMP,
    started_at: { ...TIMESTAMP, type: ['string', 'null'] },
    finished_at: { ...TIMESTAMP, type: ['string', 'null'] },
    player_id: PLAYER_ID,
    source: { type: 'string', enum: ['codes', 'stock'] },
    reference: { type: ['string', 'null'], maxLength: 128 },
    progress: {
      type: 'object',
      required: ['total', 'done'],
      properties: { total: COUNT, done: COUNT },
    },
    result: {
      description: 'The redeem result (with job_id) when completed; otherwise null.',
      oneOf: [{ $ref: '#/components/schemas/JobResult' }, { type: 'null' }],
    },
    error: {
      description: 'When failed or interrupted; otherwise null.',
      oneOf: [{ $ref: '#/components/schemas/JobError' }, { type: 'null' }],
    },
  },
};

export const Stock: JsonSchema = {
  type: 'object',
  required: ['ok', 'request_id', 'mode', 'categories', 'total_available', 'total_uc_available'],
  properties: {
    ok: { const: true },
    request_id: REQUEST_ID,
    mode: MODE,
    categories: {
      type: 'array',
      description: 'Every catalog category, in catalog order, zero counts included.',
      items: {
        type: 'object',
        required: ['category', 'uc', 'available', 'reserved', 'quarantined'],
        properties: {
          category: CATEGORY,
          uc: { type: 'integer', minimum: 1 },
          available: COUNT,
          reserved: { ...COUNT, description: 'Taken by a redeem in progress.' },
          quarantined: { ...COUNT, description: 'Outcome unknown, held out of stock until checked.' },
        },
      },
    },
    total_available: COUNT,
    total_uc_available: COUNT,
  },
};

export const Account: JsonSchema = {
  type: 'object',
  required: [
    'ok',
    'request_id',
    'customer_id',
    'key_prefix',
    'scopes',
    'mode',
    'plan',
    'plan_active',
    'quota',
    'per_request_usd',
    'balance_usd',
    'subscription',
  ],
  properties: {
    ok: { const: true },
    request_id: REQUEST_ID,
    customer_id: { type: 'integer' },
    key_prefix: {
      type: 'string',
      pattern: '^rk_(live|test)_[0-9A-Za-z]{4}$',
      description: 'First 12 characters of the key.',
    },
    scopes: { type: 'array', items: { type: 'string', enum: ['redeem', 'read'] } },
    mode: MODE,
    plan: { type: ['string', 'null'], description: 'Label of the plan; null when none is assigned.' },
    plan_active: { type: 'boolean' },
    quota: {
      type: 'object',
      required: ['daily_limit', 'used_today', 'remaining_today', 'overage_today'],
      properties: {
        daily_limit: {
          type: ['integer', 'null'],
          minimum: 0,
          description: 'Included requests per UTC day; null: no cap.',
        },
        used_today: COUNT,
        remaining_today: { ...COUNT, description: 'Included requests left today; 0 for an uncapped plan.' },
        overage_today: { ...COUNT, description: 'Requests billed from the wallet today.' },
      },
    },
    per_request_usd: { ...USD, minimum: 0 },
    balance_usd: { ...USD, description: 'Spendable: settled balance minus open holds.' },
    subscription: {
      type: 'object',
      required: ['required', 'active', 'expires_at', 'days_left'],
      properties: {
        required: { type: 'boolean' },
        active: { type: 'boolean', description: 'Always true when required is false.' },
        expires_at: { ...TIMESTAMP, type: ['string', 'null'] },
        days_left: { type: ['integer', 'null'], minimum: 0 },
      },
    },
  },
};

export const Health: JsonSchema = {
  type: 'object',
  required: ['ok', 'request_id', 'status', 'version', 'time', 'checks'],
  properties: {
    ok: { const: true },
    request_id: REQUEST_ID,
    status: { const: 'ok' },
    version: { type: 'string', description: 'The contract version (as SVC-Version).' },
    time: TIMESTAMP,
    checks: { type: 'object', required: ['database'], properties: { database: { const: 'ok' } } },
  },
};

export const WebhookRequest: JsonSchema = {
  type: 'object',
  required: ['url'],
  additionalProperties: false,
  properties: {
    url: {
      type: 'string',
      maxLength: 2048,
      format: 'uri',
      description:
        'An absolute https:// URL without userinfo, whose host is public: not localhost, not an IP literal ' +
        'or a name resolving to a loopback, private, link-local or other reserved address.',
    },
  },
};

export const WebhookRegistration: JsonSchema = {
  type: 'object',
  required: ['ok', 'request_id', 'url', 'secret', 'note'],
  properties: {
    ok: { const: true },
    request_id: REQUEST_ID,
    url: { type: 'string' },
    secret: {
      type: 'string',
      pattern: '^whsec_[0-9A-Za-z]{20,}$',
      description: 'Signs deliveries. Shown only in this answer; registering again replaces it at once.',
    },
    note: { type: 'string', description: 'A human-readable hint about the signature scheme.' },
  },
};

function envelope(event: string, data: JsonSchema): JsonSchema {
  return {
    type: 'object',
    required: ['id', 'event', 'created_at', 'data'],
    properties: {
      id: { type: 'string', pattern: '^evt_[0-9A-Za-z]{20,}$', description: 'The same as SVC-Delivery-Id.' },
      event: { const: event },
      created_at: { type: 'integer', description: 'Unix time in seconds.' },
      data,
    },
  };
}

export const RedeemCompletedEvent = envelope('redeem.completed', { $ref: '#/components/schemas/JobResult' });
export const RedeemFailedEvent = envelope('redeem.failed', { $ref: '#/components/schemas/JobError' });

export const componentSchemas = {
  CodeOutcome,
  RedeemRequest,
  RedeemResult,
  JobResult,
  Accepted,
  JobView,
  JobError,
  Stock,
  Account,
  Health,
  WebhookRequest,
  WebhookRegistration,
  ErrorBody,
  RedeemCompletedEvent,
  RedeemFailedEvent,
};
