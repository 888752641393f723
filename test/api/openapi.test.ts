// GET /v1/openapi.json (docs/reference/running.md#served-documentation): a valid OpenAPI 3.1 document of the whole public API,
// served without a key. The drift guard (helpers/openapi-check.ts) checks every public response
// of the suite against it; here: the document itself, and that the guard does fail on drift.
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openApiDocument } from '../../src/openapi/document.ts';
import { DOCUMENTED_ERROR_STATUS } from '../../src/openapi/schemas.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { checkResponse } from '../helpers/openapi-check.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
});
afterAll(async () => {
  await t.close();
});

type Doc = {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<
    string,
    { post: Operation & { parameters: { name: string; in: string; required: boolean }[] } }
  >;
  components: Record<string, Record<string, unknown>>;
};
type Operation = {
  security?: unknown[];
  responses: Record<
    string,
    {
      headers?: Record<string, unknown>;
      content?: Record<
        string,
        { schema: { properties?: { error_code?: { enum?: string[] } }; oneOf?: unknown[] } }
      >;
    }
  >;
};

const doc = openApiDocument() as unknown as Doc;
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => ({ path, method, op })),
);

/** The closed error_code list of one documented error response. */
function errorCodes(op: Operation, status: string): string[] {
  const schema = op.responses[status]?.content?.['application/json']?.schema;
  if (!schema) return [];
  const variants = (schema.oneOf ?? [schema]) as { properties?: { error_code?: { enum?: string[] } } }[];
  return variants.flatMap((v) => v.properties?.error_code?.enum ?? []);
}

describe('GET /v1/openapi.json', () => {
  test('is served without a key, as JSON, and is the document the code builds', async () => {
    const res = await t.api.inject({ method: 'GET', url: '/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['svc-version']).toBe('1.0.0');
    expect(res.json()).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    expect(res.json().info.version).toBe(res.headers['svc-version']);
    // The same bytes every time.
    expect((await t.api.inject({ method: 'GET', url: '/v1/openapi.json' })).body).toBe(res.body);
  });

  test('passes an OpenAPI 3.1 validator', async () => {
    const res = await t.api.inject({ method: 'GET', url: '/v1/openapi.json' });
    const validator = new Validator();
    const result = await validator.validate(res.json());
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  test('every $ref points at something in the document', () => {
    const refs: string[] = [];
    const walk = (v: unknown) => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object')
        for (const [k, x] of Object.entries(v)) {
          if (k === '$ref') refs.push(String(x));
          else walk(x);
        }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(50);
    for (const ref of new Set(refs)) {
      const target = ref
        .replace(/^#\//, '')
        .split('/')
        .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], doc);
      expect(target, ref).toBeDefined();
    }
  });

  test('every public route of the app is documented, and every documented operation exists', async () => {
    const expected = [
      'post /v1/redeem',
      'get /v1/jobs/{id}',
      'get /v1/me',
      'get /v1/stock',
      'post /v1/webhook',
      'get /v1/health',
      'get /v1/openapi.json',
      'get /docs',
      'get /docs/assets/reference.css',
      'get /v1/events',
      'get /v1/events/{id}',
      'post /v1/events/{id}/redeliver',
      'get /v1/statements',
      'post /bot/updates',
    ];
    expect(operations.map((o) => `${o.method} ${o.path}`).sort()).toEqual(expected.sort());
    for (const { path, method } of operations) {
      const url = path.replace(/\{(\w+)\}/g, ':$1');
      expect(t.api.hasRoute({ method: method.toUpperCase() as 'GET', url }), `${method} ${path}`).toBe(true);
    }
  });

  test('every error_code of the error table is documented, each under its own status only', () => {
    const seen = new Set<string>();
    for (const { op, path, method } of operations) {
      for (const status of Object.keys(op.responses)) {
        for (const code of errorCodes(op, status)) {
          expect(DOCUMENTED_ERROR_STATUS[code], `${method} ${path} ${status} ${code}`).toBe(Number(status));
          seen.add(code);
        }
      }
    }
    // method_not_allowed is the answer to an operation that is not there (described in info).
    const all = Object.keys(DOCUMENTED_ERROR_STATUS).filter((c) => c !== 'method_not_allowed');
    expect([...seen].sort()).toEqual(all.sort());
  });

  test('section 12: 503 unavailable with Retry-After on every key-authenticated operation, 408 on every operation', () => {
    for (const { op, path, method } of operations) {
      const where = `${method} ${path}`;
      expect(errorCodes(op, '408'), where).toEqual(['request_timeout']);
      expect(errorCodes(op, '503'), where).toContain('unavailable');
      expect(Object.keys(op.responses['503']!.headers ?? {}), where).toContain('Retry-After');
      // A redelivery answers 202 (queued), every other operation 200.
      const ok = op.responses['200'] ?? op.responses['202']!;
      expect(Object.keys(ok.headers ?? {}), where).toEqual(
        expect.arrayContaining([
          'X-Request-Id',
          'SVC-Version',
          'SVC-Cost',
          'SVC-Idempotent-Replay',
          'Cache-Control',
        ]),
      );
      const keyed = op.security === undefined;
      // Keyed operations, and the bot's webhook (Telegram's secret header), may answer 401.
      const secured = keyed || (op.security?.length ?? 0) > 0;
      expect(errorCodes(op, '401').length > 0, where).toBe(secured);
      if (keyed) expect(Object.keys(ok.headers ?? {}), where).toContain('SVC-Balance-Usd');
    }
    const redeem = doc.paths['/v1/redeem']!.post!;
    expect(errorCodes(redeem, '503').sort()).toEqual(['job_interrupted', 'unavailable']);
    expect(errorCodes(redeem, '429').sort()).toEqual(['quota_exceeded', 'rate_limited']);
    expect(Object.keys(redeem.responses['200']!.headers!)).toEqual(
      expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
    );
    expect(Object.keys(redeem.responses['202']!.headers!)).toContain('Location');
    const code = (
      doc.components.schemas!.CodeOutcome as {
        properties: { code: { pattern: string; description: string } };
      }
    ).properties.code;
    expect(new RegExp(code.pattern).test('**************J9K2')).toBe(true);
    expect(code.description).toContain('masked');
  });

  test('webhooks: both events with SVC-Signature, SVC-Event and SVC-Delivery-Id; the bearer scheme', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual(['redeem.completed', 'redeem.failed']);
    for (const hook of Object.values(doc.webhooks)) {
      expect(hook.post.parameters.filter((p) => p.in === 'header' && p.required).map((p) => p.name)).toEqual([
        'SVC-Signature',
        'SVC-Event',
        'SVC-Delivery-Id',
      ]);
    }
    expect(doc.components.securitySchemes).toEqual({
      bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      telegramSecret: expect.objectContaining({
        type: 'apiKey',
        in: 'header',
        name: 'X-Telegram-Bot-Api-Secret-Token',
      }),
    });
  });
});

describe('the drift guard', () => {
  const good = {
    method: 'GET',
    url: '/v1/health',
    status: 200,
    headers: {
      'x-request-id': 'req_abcdefghijklmnopqrstuvwx',
      'svc-version': '1.0.0',
      'svc-cost': '0',
      'svc-idempotent-replay': 'false',
      'cache-control': 'no-store',
      'content-type': 'application/json; charset=utf-8',
    },
    body: JSON.stringify({
      ok: true,
      request_id: 'req_abcdefghijklmnopqrstuvwx',
      status: 'ok',
      version: '1.0.0',
      time: '2026-11-22T09:00:00Z',
      checks: { database: 'ok' },
    }),
  };

  test('accepts a matching response and refuses a new field, a missing header, a wrong type and an undocumented status', () => {
    expect(checkResponse(good)).toEqual([]);
    const extra = { ...good, body: good.body.replace('"ok":true', '"ok":true,"extra":1') };
    expect(checkResponse(extra).join()).toMatch(/must NOT have additional properties/);
    const { 'svc-cost': _, ...noCost } = good.headers;
    expect(checkResponse({ ...good, headers: noCost })).toEqual(['header SVC-Cost is missing']);
    expect(checkResponse({ ...good, headers: { ...good.headers, 'svc-cost': 'x' } }).join()).toMatch(
      /SVC-Cost/,
    );
    expect(checkResponse({ ...good, status: 418 })).toEqual([
      'status 418 is not documented for GET /v1/health',
    ]);
  });

  test('refuses an error_code outside the closed list of that status', () => {
    const body = (code: string) =>
      JSON.stringify({
        ok: false,
        error_code: code,
        message: 'm',
        request_id: 'req_abcdefghijklmnopqrstuvwx',
      });
    const res = { ...good, url: '/v1/me', status: 401, body: body('unauthorized') };
    expect(checkResponse(res)).toEqual([]);
    expect(checkResponse({ ...res, body: body('rate_limited') }).join()).toMatch(/allowed values/);
  });

  test('a wrong method on a documented path must be a 405 error body', () => {
    const body = JSON.stringify({
      ok: false,
      error_code: 'method_not_allowed',
      message: 'm',
      request_id: 'req_abcdefghijklmnopqrstuvwx',
    });
    expect(checkResponse({ ...good, method: 'DELETE', url: '/v1/me', status: 405, body })).toEqual([]);
    expect(checkResponse({ ...good, method: 'DELETE', url: '/v1/me', status: 200, body }).length).toBe(1);
  });
});

// A client (or a fuzzer) driven by the document generates what the server
// accepts: the document refuses what the server refuses.
describe('the document states what the server enforces', () => {
  const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  const refs = (s: unknown): unknown =>
    JSON.parse(JSON.stringify(s).replaceAll('"#/components/schemas/', '"components#/$defs/'));
  ajv.addSchema({ $id: 'components', $defs: refs(doc.components.schemas) as object });
  const redeemBody = ajv.compile(refs(doc.components.schemas!.RedeemRequest) as object);
  const param = (path: string, name: string) => {
    const p = (doc.paths[path]!.get as unknown as { parameters: { name: string; schema: object }[] })
      .parameters;
    return ajv.compile(p.find((x) => x.name === name)!.schema);
  };

  test.each([
    [{ player_id: '5123456789', codes: ['ABCD-1234'] }, true],
    [{ player_id: 5123456789, packs: { '60': 1 } }, true],
    [{ player_id: '51234', uc: 60, codes: null }, true],
    [{ player_id: '5123456789' }, false],
    [{ player_id: '5123456789', codes: ['ABCD-1234'], uc: 60 }, false],
    [{ player_id: '5123456789', packs: { '60': 1 }, uc: 60 }, false],
    [{ player_id: '5123456789', codes: null, packs: null, uc: null }, false],
    [{ player_id: 1234, codes: ['ABCD-1234'] }, false],
    [{ player_id: 0, codes: ['ABCD-1234'] }, false],
  ])('redeem body %j: valid %s', (body, valid) => {
    expect(redeemBody(body)).toBe(valid);
  });

  test('event filters and statement dates have the server patterns', () => {
    const jobId = param('/v1/events', 'job_id');
    expect(jobId(`job_${'a'.repeat(20)}`)).toBe(true);
    expect(jobId('job_x')).toBe(false);
    const type = param('/v1/events', 'type');
    expect(type('redeem.completed')).toBe(true);
    expect(type('Redeem Completed')).toBe(false);
    for (const name of ['from', 'to']) {
      const date = param('/v1/statements', name);
      expect(date('2026-11-22')).toBe(true);
      for (const bad of ['2026-13-01', '2026-02-30', '1999-12-31', '10000-01-01', '2026-1-1'])
        expect(date(bad), bad).toBe(false);
    }
  });
});
