// The OpenAPI paths and schemas of what a merchant reconciles with (docs/reference/webhooks-and-events.md#the-event-log, docs/reference/statements.md#reconciliation):
// the webhook event log with redelivery, and statements (JSON or CSV). document.ts hands its
// response helpers in, so this file needs none of its code at run time.

import { CODE_STATUSES, EVENT_STATES, MODES } from '../core/vocabulary.ts';
import { EVENT_JOB_ID_FORMAT, EVENT_TYPE_FORMAT } from '../core/webhooks/event-log.ts';
import type { JsonSchema } from './schemas.ts';

interface Op {
  auth: boolean;
  errors: string[];
}

export interface PathHelpers {
  json(schema: JsonSchema): Record<string, { schema: JsonSchema }>;
  headersFor(op: Op, status: number, extra?: { required?: string[]; optional?: string[] }): unknown;
  errorResponses(op: Op): Record<string, unknown>;
}

const REQUEST_ID = { type: 'string', pattern: '^req_[0-9A-Za-z]{20,}$' };
const EVENT_ID = { type: 'string', pattern: '^evt_[0-9A-Za-z]{20,}$' };
const TIMESTAMP = { type: 'string', format: 'date-time', description: 'ISO 8601 UTC with a Z.' };
const COUNT = { type: 'integer', minimum: 0 };
const USD = { type: 'number', description: 'US dollars, at most 6 decimals (exact micro-dollars).' };
const DATE = {
  type: 'string',
  format: 'date',
  pattern: '^\\d{4}-\\d{2}-\\d{2}$',
  description: 'A UTC day, YYYY-MM-DD.',
};
/** A day the statement routes accept: a real date of the years 2000 to 9999. */
const DATE_PARAM = {
  ...DATE,
  pattern: '^[2-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$',
  description: 'A UTC day, YYYY-MM-DD, of the years 2000 to 9999.',
};

const ERROR_CLASSES = ['timeout', 'connection', 'tls', 'blocked', 'http_status'];

const EventAttempt: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['at', 'status', 'error', 'duration_ms', 'redelivery'],
  properties: {
    at: TIMESTAMP,
    status: { type: ['integer', 'null'], description: "The receiver's HTTP status; null when none came." },
    error: {
      type: ['string', 'null'],
      enum: [null, ...ERROR_CLASSES],
      description: 'Null when the attempt got a 2xx; else why it failed.',
    },
    duration_ms: COUNT,
    redelivery: { type: 'boolean', description: 'Sent on request (POST …/redeliver), outside the schedule.' },
  },
};

const eventProperties = {
  id: EVENT_ID,
  event: { type: 'string', description: '`redeem.completed` or `redeem.failed`; new types may appear.' },
  job_id: { type: 'string', pattern: '^job_[0-9A-Za-z]{20,}$' },
  mode: { type: 'string', enum: [...MODES] },
  created_at: TIMESTAMP,
  state: {
    type: 'string',
    enum: [...EVENT_STATES],
    description:
      '`pending`: an attempt is still due or in flight; `delivered`: an attempt got a 2xx; `failed`: every ' +
      'automatic attempt used and none got a 2xx.',
  },
  next_attempt_at: { type: ['string', 'null'], format: 'date-time' },
  attempts: { type: 'array', items: { $ref: '#/components/schemas/EventAttempt' } },
};
const EVENT_REQUIRED = ['id', 'event', 'job_id', 'created_at', 'state', 'next_attempt_at', 'attempts'];

const WebhookEvent: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: EVENT_REQUIRED,
  properties: eventProperties,
};

const EventList: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['ok', 'request_id', 'events', 'next_cursor'],
  properties: {
    ok: { const: true },
    request_id: REQUEST_ID,
    events: { type: 'array', items: { $ref: '#/components/schemas/WebhookEvent' } },
    next_cursor: {
      type: ['string', 'null'],
      description: 'Pass as `cursor` for the next (older) page; null on the last page.',
    },
  },
};

const EventDetail: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['ok', 'request_id', ...EVENT_REQUIRED, 'data'],
  properties: {
    ok: { const: true },
    request_id: REQUEST_ID,
    ...eventProperties,
    data: { type: 'object', description: "The payload's `data`, as a delivery now would carry it." },
  },
};

const RedeliveryAccepted: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['ok', 'request_id', 'event_id'],
  properties: { ok: { const: true }, request_id: REQUEST_ID, event_id: EVENT_ID },
};

const CODES = [...CODE_STATUSES];
const counts = (keys: string[]) => Object.fromEntries(keys.map((k) => [k, COUNT]));
const STATEMENT_COUNTS = ['requests_included', 'requests_overage', 'requests_refunded'];
const STATEMENT_MONEY = [
  'charged_usd',
  'topups_usd',
  'adjustments_usd',
  'opening_balance_usd',
  'closing_balance_usd',
];
const statementRow = (extra: Record<string, JsonSchema>, required: string[]): JsonSchema => ({
  type: 'object',
  additionalProperties: false,
  required: [...required, ...STATEMENT_COUNTS, 'codes', ...STATEMENT_MONEY],
  properties: {
    ...extra,
    ...counts(STATEMENT_COUNTS),
    codes: { type: 'object', additionalProperties: false, required: CODES, properties: counts(CODES) },
    ...Object.fromEntries(STATEMENT_MONEY.map((k) => [k, USD])),
  },
});

const Statement: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['ok', 'request_id', 'mode', 'currency', 'from', 'to', 'days', 'totals'],
  properties: {
    ok: { const: true },
    request_id: REQUEST_ID,
    mode: { type: 'string', enum: [...MODES] },
    currency: { const: 'USD' },
    from: DATE,
    to: DATE,
    days: { type: 'array', items: statementRow({ date: DATE }, ['date']) },
    totals: statementRow({}, []),
  },
};

export const reconcileSchemas = {
  EventAttempt,
  WebhookEvent,
  EventList,
  EventDetail,
  RedeliveryAccepted,
  Statement,
};

const readOp: Op = { auth: true, errors: ['ip_denied', 'scope_denied', 'unknown_customer'] };
const eventOp: Op = { auth: true, errors: ['ip_denied', 'scope_denied', 'unknown_customer', 'not_found'] };
const redeliverOp: Op = {
  auth: true,
  errors: ['ip_denied', 'scope_denied', 'unknown_customer', 'not_found', 'conflict'],
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const query = (name: string, description: string, schema: JsonSchema) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});
const eventIdParam = { name: 'id', in: 'path', required: true, schema: EVENT_ID };

export function eventPaths(h: PathHelpers) {
  return {
    '/v1/events': {
      get: {
        operationId: 'listEvents',
        tags: ['Webhooks'],
        summary: 'Your webhook events, newest first',
        description:
          "Scope `read` or `redeem`. Not billed. The key's customer and mode only. Each event lists its " +
          'attempts (automatic and redeliveries) with their status, error class and duration.',
        parameters: [
          query('state', 'Only events in this state.', {
            type: 'string',
            enum: [...EVENT_STATES],
          }),
          query('type', 'Only events of this type (`redeem.completed`, `redeem.failed`).', {
            type: 'string',
            pattern: EVENT_TYPE_FORMAT.source,
          }),
          query('job_id', "Only this job's events.", { type: 'string', pattern: EVENT_JOB_ID_FORMAT.source }),
          query('limit', 'Events per page, 1 to 100 (default 20).', {
            type: 'integer',
            minimum: 1,
            maximum: 100,
          }),
          query('cursor', '`next_cursor` of the previous page.', { type: 'string' }),
        ],
        responses: {
          '200': {
            description: 'A page of events.',
            headers: h.headersFor(readOp, 200),
            content: h.json(ref('EventList')),
          },
          ...h.errorResponses(readOp),
        },
      },
    },
    '/v1/events/{id}': {
      get: {
        operationId: 'getEvent',
        tags: ['Webhooks'],
        summary: 'One webhook event with its payload data',
        description: "Scope `read` or `redeem`. Another customer's or mode's event is `404 not_found`.",
        parameters: [eventIdParam],
        responses: {
          '200': {
            description: 'The event.',
            headers: h.headersFor(eventOp, 200),
            content: h.json(ref('EventDetail')),
          },
          ...h.errorResponses(eventOp),
        },
      },
    },
    '/v1/events/{id}/redeliver': {
      post: {
        operationId: 'redeliverEvent',
        tags: ['Webhooks'],
        summary: 'Send an event once more, now',
        description:
          'Scope `redeem`. One extra attempt to the URL registered now, signed with the current secret, with ' +
          'the same event id and SVC-Delivery-Id. It neither uses up nor resets the automatic retries; a ' +
          'delivered or failed event may be redelivered. `409 conflict`: no webhook registered, or a ' +
          "redelivery of this event is still queued or in flight. Its result appears in the event's " +
          '`attempts` with `redelivery: true`.',
        parameters: [eventIdParam],
        responses: {
          '202': {
            description: 'Queued; the webhook worker sends it at once.',
            headers: h.headersFor(redeliverOp, 202),
            content: h.json(ref('RedeliveryAccepted')),
          },
          ...h.errorResponses(redeliverOp),
        },
      },
    },
  };
}

export function statementPaths(h: PathHelpers) {
  return {
    '/v1/statements': {
      get: {
        operationId: 'getStatement',
        tags: ['Account'],
        summary: 'Your statement per UTC day: requests, outcomes and money',
        description:
          "Scope `read`. Not billed. The key's mode. One entry per day of the range, oldest first, days " +
          'without activity included. Money reconciles exactly: `closing = opening + topups + adjustments − ' +
          'charged`, each opening is the previous closing, and when `to` is today the last closing is the ' +
          'wallet balance now (settled, without open holds). With `Accept: text/csv` the same days as CSV ' +
          '(RFC 4180, a header row, `codes` flattened as `codes_activated` …).',
        parameters: [
          query('from', 'First UTC day (default: 29 days before `to`).', DATE_PARAM),
          query('to', 'Last UTC day, included (default: today). At most 366 days in all.', DATE_PARAM),
        ],
        responses: {
          '200': {
            description: 'The statement.',
            headers: h.headersFor(readOp, 200),
            content: {
              ...h.json(ref('Statement')),
              'text/csv': {
                schema: {
                  type: 'string',
                  description:
                    'Columns: date, requests_included, requests_overage, requests_refunded, codes_activated, ' +
                    'codes_code_used, codes_invalid_code, codes_bad_player, codes_failed, charged_usd, ' +
                    'topups_usd, adjustments_usd, opening_balance_usd, closing_balance_usd.',
                },
              },
            },
          },
          ...h.errorResponses(readOp),
        },
      },
    },
  };
}
