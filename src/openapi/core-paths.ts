// The paths of the public API's core operations (redeem, jobs, account, webhook registration,
// the service's own documents); the event log and statements are in reconcile-paths.ts.
import { BODY_LIMIT } from '../http/plumbing.ts';
import {
  DOCS_CSS_PATH,
  errorResponses,
  headersFor,
  idempotencyKey,
  jobOp,
  json,
  meOp,
  openOp,
  PUBLIC,
  readOp,
  redeemResponses,
  webhookOp,
} from './operations.ts';

export function corePaths() {
  return { ...redeemPaths(), ...accountPaths(), ...servicePaths() };
}

/** POST /v1/redeem and GET /v1/jobs/{id}. */
function redeemPaths() {
  return {
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
  };
}

/** The calling key's account, stock and webhook registration. */
function accountPaths() {
  return {
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
  };
}

/** Health and the service's own documents (no key). */
function servicePaths() {
  return {
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
  };
}
