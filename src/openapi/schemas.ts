// JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of every public request and response body.
// The routes validate by hand in the documented order (a JSON Schema validator would answer in
// its own order and with one error code), so these schemas are written here, beside the
// document that publishes them, from the constants the code itself uses (limits, formats, the
// catalog, the error table). The test suite checks every response it receives against them,
// closed (no undocumented field), so a change of shape without a change here fails a test.

import { ERROR_STATUS } from '../core/errors.ts';
import { ERROR_CODE_OF } from '../core/redeem/outcomes.ts';
import { MAX_CODES } from '../core/redeem/request.ts';
import { CODE_STATUSES, DISPOSITIONS, JOB_STATUSES } from '../core/vocabulary.ts';
import {
  Account,
  Health,
  RedeemCompletedEvent,
  RedeemFailedEvent,
  Stock,
  WebhookRegistration,
  WebhookRequest,
} from './account-schemas.ts';
import { CATEGORY, CODE_CHARS, COUNT, JOB_ID, MODE, PLAYER_ID, REQUEST_ID, TIMESTAMP } from './primitives.ts';

export type { JsonSchema } from './primitives.ts';

import type { JsonSchema } from './primitives.ts';

/**
 * Codes only the admin listener answers (docs/reference/operators-and-audit.md#operators-and-roles, docs/reference/operators-and-audit.md#the-admin-door), so not in this reference of the
 * public API. (`conflict` is public: POST /v1/events/{id}/redeliver answers it, docs/reference/webhooks-and-events.md#redelivery.)
 */
const ADMIN_ONLY_ERRORS = new Set(['forbidden', 'misdirected_request']);

/** Every error_code the public API answers, with its HTTP status (src/core/errors.ts). */
export const DOCUMENTED_ERROR_STATUS: Record<string, number> = {
  ...Object.fromEntries(Object.entries(ERROR_STATUS).filter(([code]) => !ADMIN_ONLY_ERRORS.has(code))),
  request_timeout: 408,
};

// The enums are core's one list of each vocabulary (core/vocabulary.ts, redeem/outcomes.ts).
export const CODE_ERROR_CODES = CODE_STATUSES.map((s) => ERROR_CODE_OF[s]);

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
      enum: [...DISPOSITIONS],
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

/** The error body of docs/reference/keys-and-modes.md#the-error-body, with error_code limited to `codes` when given. */
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
    'this order: bad_request, bad_player, ambiguous_source, empty, bad_codes, bad_packs, no_combo.',
  required: ['player_id'],
  additionalProperties: false,
  // Exactly one source given (null counts as absent): the server's ambiguous_source and empty.
  oneOf: [
    { required: ['codes'], properties: { codes: { type: 'array' } } },
    { required: ['packs'], properties: { packs: { type: 'object' } } },
    { required: ['uc'], properties: { uc: { type: 'integer' } } },
  ],
  properties: {
    player_id: {
      description:
        '5 to 20 digits; a JSON integer (5 digits or more, a safe integer) is accepted and turned into a string.',
      oneOf: [PLAYER_ID, { type: 'integer', minimum: 10_000, maximum: Number.MAX_SAFE_INTEGER }],
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
      enum: [...JOB_STATUSES],
      description: 'queued → running → completed | failed | interrupted. Tolerate new values.',
    },
    created_at: TIMESTAMP,
    started_at: { ...TIMESTAMP, type: ['string', 'null'] },
    finished_at: { ...TIMESTAMP, type: ['string', 'null'] },
    player_id: PLAYER_ID,
    source: { type: 'string', enum: ['codes', 'stock'] },
    reference: { type: ['string', 'null'], maxLength: 128 },
    channel: {
      type: 'string',
      enum: ['api', 'bot'],
      description: '`bot`: a manual redeem from the chat bot (not billed, no webhook event).',
    },
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
