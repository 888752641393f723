// The OpenAPI 3.1 document of the public API (docs/reference/running.md#served-documentation), built once from the body
// schemas in schemas.ts and the constants the code uses. GET /v1/openapi.json serves it, GET
// /docs renders it, and the test suite checks every public response against it.
import { API_VERSION } from '../http/headers.ts';
import { botPaths } from './bot-paths.ts';
import { corePaths } from './core-paths.ts';
import { errorResponses, HEADERS, headersFor, json, KEYED, webhook } from './operations.ts';
import { eventPaths, reconcileSchemas, statementPaths } from './reconcile-paths.ts';
import { componentSchemas } from './schemas.ts';

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
        'use a deterministic sandbox: a player id starting with 000 is bad_player; a code containing USED ' +
        'is code_used, INVALID invalid_code, FAIL failed, TIMEOUT failed with the outcome unknown (the code ' +
        'quarantined); a code containing SLOW activates after a delay; anything else activates once. A code ' +
        'ending in -<size> of the catalog (e.g. -660) reports that category and its uc; without one, `uc` is null.',
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
      ...corePaths(),
      ...botPaths(),
      // The event log and statements (docs/reference/webhooks-and-events.md#the-event-log, docs/reference/statements.md#the-answer).
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
        telegramSecret: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Telegram-Bot-Api-Secret-Token',
          description:
            'BOT_WEBHOOK_SECRET, as Telegram sends it with each webhook delivery (POST /bot/updates only).',
        },
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
