// The bodies of the account, stock, health and webhook endpoints, and the webhook payloads.
import { CATEGORY, COUNT, type JsonSchema, MODE, REQUEST_ID, TIMESTAMP, USD } from './primitives.ts';

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
