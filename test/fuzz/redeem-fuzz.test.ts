// Property-based tests of POST /v1/redeem validation (docs/architecture.md#house-rules). Random bodies, built
// from the request table's field names with values of every type, are sent with a fresh
// Idempotency-Key and checked against an oracle written from
// docs/reference/redeem.md#validation-order, independent of src/core/redeem/request.ts. Whatever the body: a 2xx or
// 4xx with a valid body, never a 5xx.
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  type Merchant,
  type TestApp,
} from '../helpers/app.ts';

let t: TestApp;
let m: Merchant;
beforeAll(async () => {
  t = await createTestApp({ sandboxSlowMs: 50 });
  // Uncapped at $0 a request: every valid body can be paid for, so billing never answers.
  m = await createMerchant(t, { plan: { daily_limit: null, per_request_usd: '0' } });
  // Some stock, so packs and uc bodies sometimes succeed (and later run out: 409 no_stock).
  for (const category of ['60', '325', '660']) {
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/stock`, {
      mode: 'test',
      category,
      codes: Array.from({ length: 15 }, (_, i) => `FZ${category}-${RUN}-${i}`),
    });
  }
});
afterAll(() => t.close());

const RUN = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`.toUpperCase();
let seq = 0;

// ---------------------------------------------------------------------------------------------
// The oracle: docs/reference/redeem.md#validation-order, steps 1 to 9.

const KNOWN_FIELDS = ['player_id', 'source', 'codes', 'packs', 'uc', 'async', 'reference'];
const CATALOG = [60, 325, 660, 1800, 3850, 8100];
const CATEGORIES = CATALOG.map(String);
const MAX_CODES = 50;

/** Every error_code (docs/reference/keys-and-modes.md#error-codes; 405 is never a redeem answer). */
const DOCUMENTED_ERRORS = new Set([
  'unauthorized',
  'revoked',
  'expired',
  'ip_denied',
  'scope_denied',
  'unknown_customer',
  'subscription_expired',
  'no_plan',
  'insufficient_funds',
  'bad_request',
  'bad_player',
  'bad_codes',
  'bad_packs',
  'no_combo',
  'empty',
  'ambiguous_source',
  'idempotency_required',
  'https_required',
  'webhook_url_blocked',
  'not_found',
  'method_not_allowed',
  'no_stock',
  'idempotency_in_progress',
  'idempotency_conflict',
  'payload_too_large',
  'quota_exceeded',
  'rate_limited',
  'unavailable',
  'job_interrupted',
  'internal',
]);

/** Fewest catalog codes summing to each multiple of 5 up to 50 × 8100 (plain "fewest coins"). */
const UNIT = 5;
const FEWEST = (() => {
  const size = (MAX_CODES * 8100) / UNIT;
  const best = new Array<number>(size + 1).fill(Number.POSITIVE_INFINITY);
  best[0] = 0;
  for (let s = 1; s <= size; s++) {
    for (const uc of CATALOG) {
      const u = uc / UNIT;
      if (u <= s && best[s - u]! + 1 < best[s]!) best[s] = best[s - u]! + 1;
    }
  }
  return best;
})();
const ucPossible = (uc: number) =>
  uc % UNIT === 0 && uc / UNIT < FEWEST.length && FEWEST[uc / UNIT]! <= MAX_CODES;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
/** "A JSON number with no fractional part is an integer (2.0 is 2)." */
const isPositiveInteger = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

type Verdict =
  | { error: string }
  | ({ pass: 'codes'; codes: string[] } & Passed)
  | ({ pass: 'packs'; packs: Record<string, number> } & Passed)
  | ({ pass: 'uc'; uc: number } & Passed);
type Passed = { playerId: string; reference: string | null; async: boolean };

/** Steps 3 to 9 for a parsed JSON body (undefined: no body). */
function oracle(body: unknown): Verdict {
  // Step 3.
  if (!isObject(body)) return { error: 'bad_request' };
  if (Object.keys(body).some((k) => !KNOWN_FIELDS.includes(k))) return { error: 'bad_request' };
  const present = (k: string) => Object.hasOwn(body, k) && body[k] !== null;
  if (present('source') && body.source !== 'codes' && body.source !== 'stock')
    return { error: 'bad_request' };
  if (present('async') && typeof body.async !== 'boolean') return { error: 'bad_request' };
  if (present('reference')) {
    const r = body.reference;
    if (typeof r !== 'string' || [...r].length > 128) return { error: 'bad_request' };
    // Not in the request table: text PostgreSQL cannot store (U+0000) or that is not Unicode
    // (a lone surrogate) is refused as out of range, rather than failing with a 500 or being
    // echoed altered (see the closing report).
    if (r.includes('\u0000') || LONE_SURROGATE.test(r)) return { error: 'bad_request' };
  }
  if (present('uc') && !isPositiveInteger(body.uc)) return { error: 'bad_request' };

  // Step 4. A JSON integer beyond 2^53 cannot be turned into its digits faithfully: refused.
  const p = body.player_id;
  const playerId =
    typeof p === 'string' ? p : typeof p === 'number' && Number.isSafeInteger(p) && p >= 0 ? String(p) : null;
  if (playerId === null || !/^[0-9]{5,20}$/.test(playerId)) return { error: 'bad_player' };

  // Step 5.
  const given = ['codes', 'packs', 'uc'].filter(present);
  if (given.length > 1) return { error: 'ambiguous_source' };
  if (given.length === 1 && present('source') && body.source !== (given[0] === 'codes' ? 'codes' : 'stock')) {
    return { error: 'ambiguous_source' };
  }

  // Step 6.
  if (given.length === 0) return { error: 'empty' };
  if (given[0] === 'codes' && Array.isArray(body.codes) && body.codes.length === 0) return { error: 'empty' };
  if (given[0] === 'packs' && isObject(body.packs) && Object.keys(body.packs).length === 0)
    return { error: 'empty' };

  const reference = present('reference') ? (body.reference as string) : null;
  const passed = { playerId, reference, async: body.async === true };
  // Step 7.
  if (given[0] === 'codes') {
    const codes = body.codes;
    if (!Array.isArray(codes) || codes.length > MAX_CODES) return { error: 'bad_codes' };
    const out: string[] = [];
    for (const c of codes) {
      if (typeof c !== 'string') return { error: 'bad_codes' };
      const trimmed = c.replace(/^ +/, '').replace(/ +$/, '');
      if (!/^[A-Za-z0-9-]{4,64}$/.test(trimmed) || out.includes(trimmed)) return { error: 'bad_codes' };
      out.push(trimmed);
    }
    return { pass: 'codes', codes: out, ...passed };
  }
  // Step 8.
  if (given[0] === 'packs') {
    const packs = body.packs;
    if (!isObject(packs)) return { error: 'bad_packs' };
    let total = 0;
    for (const [category, count] of Object.entries(packs)) {
      if (!CATEGORIES.includes(category) || !isPositiveInteger(count)) return { error: 'bad_packs' };
      total += count;
    }
    if (total > MAX_CODES) return { error: 'bad_packs' };
    return { pass: 'packs', packs: packs as Record<string, number>, ...passed };
  }
  // Step 9.
  const uc = body.uc as number;
  if (!ucPossible(uc)) return { error: 'no_combo' };
  return { pass: 'uc', uc, ...passed };
}

/**
 * True when Fastify's secure JSON parser refuses the value (a __proto__ or constructor.prototype
 * key). Iterative: bodies nest up to 131,072 levels.
 */
function hasPoisonKey(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
      continue;
    }
    if (!isObject(v)) continue;
    if (Object.hasOwn(v, '__proto__')) return true;
    const ctor = Object.hasOwn(v, 'constructor') ? v.constructor : undefined;
    if (isObject(ctor) && Object.hasOwn(ctor, 'prototype')) return true;
    for (const item of Object.values(v)) stack.push(item);
  }
  return false;
}

/** The verdict for raw body text, as the service reads it (JSON, a leading BOM ignored). */
function oracleForText(sent: string): Verdict {
  // What the server receives: the text sent as UTF-8, where a lone surrogate (a JS string can
  // hold one, UTF-8 cannot) became U+FFFD. An escaped one (\ud800 in JSON) stays a refusal.
  const text = Buffer.from(sent, 'utf8').toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    return { error: 'bad_request' };
  }
  if (hasPoisonKey(value)) return { error: 'bad_request' };
  return oracle(value);
}

// ---------------------------------------------------------------------------------------------
// Sending and checking.

function post(payload: string | Buffer | undefined): Promise<LightMyRequestResponse> {
  // One second of the injected clock per request: the burst limit (30 per 10 s) never answers.
  t.clock.advance(1000);
  return t.api.inject({
    method: 'POST',
    url: '/v1/redeem',
    headers: {
      ...bearer(m.key),
      'content-type': 'application/json',
      'idempotency-key': `fuzz-${RUN}-${seq++}`,
    },
    ...(payload === undefined ? {} : { payload }),
  });
}

/** Headers and body every answer must have, whatever the request. */
function checkAnyAnswer(res: LightMyRequestResponse) {
  expect(res.statusCode, res.body).toBeLessThan(500);
  expect([200, 202, 400, 402, 409, 413, 422, 429]).toContain(res.statusCode);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.headers['x-request-id']).toMatch(/^req_[0-9A-Za-z]{20,}$/);
  expect(res.headers['svc-version']).toBe('1.0.0');
  expect(res.headers['svc-idempotent-replay']).toBe('false');
  const body = res.json();
  expect(body.request_id).toBe(res.headers['x-request-id']);
  // Status 422 has two meanings (docs/reference/keys-and-modes.md#error-codes): a body with `codes` is a redeem result.
  if (body.ok === false && !Array.isArray(body.codes)) {
    expect(body).toEqual({
      ok: false,
      error_code: expect.any(String),
      message: expect.any(String),
      request_id: res.headers['x-request-id'],
    });
    expect(DOCUMENTED_ERRORS.has(body.error_code), body.error_code).toBe(true);
    expect(res.headers['svc-cost']).toBe('0');
  }
  return body;
}

const STATUSES = ['activated', 'code_used', 'invalid_code', 'bad_player', 'failed'];
const DISPOSITIONS = ['consumed', 'deleted', 'kept', 'returned', 'quarantined'];

/** The answer to a body the oracle judged. */
function checkVerdict(res: LightMyRequestResponse, verdict: Verdict, sent: string) {
  const body = checkAnyAnswer(res);
  const got = { status: res.statusCode, error_code: body.error_code ?? null };
  if ('error' in verdict) {
    expect(got, `body: ${sent.slice(0, 400)}`).toEqual({ status: 400, error_code: verdict.error });
    return;
  }
  // Stock runs out (step 11, also for async: "after the same checks").
  if (verdict.pass !== 'codes' && res.statusCode === 409) {
    expect(got, `body: ${sent.slice(0, 400)}`).toEqual({ status: 409, error_code: 'no_stock' });
    return;
  }
  if (verdict.async) {
    // Async (docs/reference/redeem.md#async-redeems): 202 at once; the job runs later.
    expect({ status: res.statusCode, body }, `body: ${sent.slice(0, 400)}`).toEqual({
      status: 202,
      body: {
        ok: true,
        request_id: res.headers['x-request-id'],
        job_id: expect.stringMatching(/^job_[0-9A-Za-z]{20,}$/),
        status: 'queued',
      },
    });
    expect(res.headers.location).toBe(`/v1/jobs/${body.job_id}`);
    expect(res.headers['svc-cost']).toBe('0');
    return;
  }
  expect([200, 422], `body: ${sent.slice(0, 400)} → ${res.body.slice(0, 300)}`).toContain(res.statusCode);
  expect(body.ok).toBe(res.statusCode === 200);
  expect(body).toMatchObject({
    player_id: verdict.playerId,
    mode: 'test',
    source: verdict.pass === 'codes' ? 'codes' : 'stock',
    reference: verdict.reference,
  });
  const codes = body.codes as Array<{
    code: string;
    category: string | null;
    uc: number | null;
    status: string;
    disposition: string;
    billed: boolean;
    error_code: string;
  }>;
  for (const c of codes) {
    expect(STATUSES).toContain(c.status);
    expect(DISPOSITIONS).toContain(c.disposition);
    expect(c.billed).toBe(['activated', 'code_used', 'invalid_code'].includes(c.status));
    if (c.status === 'activated') expect(c.error_code).toBe('');
  }
  expect(codes.some((c) => c.status === 'activated')).toBe(body.ok);
  expect(body.billed_requests + body.refunded_requests).toBe(codes.length);
  expect(body.billed_requests).toBe(codes.filter((c) => c.billed).length);
  expect(res.headers['svc-cost']).toBe(String(body.billed_requests));
  if (verdict.playerId.startsWith('000')) expect(codes.every((c) => c.status === 'bad_player')).toBe(true);
  if (verdict.pass === 'codes') {
    expect(codes.map((c) => c.code)).toEqual(verdict.codes);
  } else if (verdict.pass === 'packs') {
    const counts: Record<string, number> = {};
    for (const c of codes) counts[c.category!] = (counts[c.category!] ?? 0) + 1;
    expect(counts).toEqual(verdict.packs);
  } else {
    expect(codes.reduce((sum, c) => sum + (c.uc ?? 0), 0)).toBe(verdict.uc);
    expect(codes.length).toBeGreaterThanOrEqual(FEWEST[verdict.uc / UNIT]!);
  }
}

// ---------------------------------------------------------------------------------------------
// Generators.

const digits = (min: number, max: number) => fc.stringMatching(new RegExp(`^[0-9]{${min},${max}}$`));
/** Any JSON value, including deep-ish structures and odd strings. */
const anyJson = fc.jsonValue({ maxDepth: 3 });
const oddString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);

const playerId = fc.oneof(
  { weight: 6, arbitrary: digits(5, 20) },
  { weight: 1, arbitrary: digits(0, 25) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('00012345', '12345 ', ' 12345', '１２３４５', '-12345', '12345.0', '1e5'),
  },
  { weight: 2, arbitrary: fc.integer({ min: -1_000_000, max: Number.MAX_SAFE_INTEGER }) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: anyJson },
);

const codeChar = fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz0123456789-'.split(''));
const goodCode = fc
  .tuple(fc.string({ unit: codeChar, minLength: 1, maxLength: 16 }), fc.nat(99))
  .map(([s, n]) => `${RUN}${n}${s}`.slice(0, 64));
const code = fc.oneof(
  { weight: 8, arbitrary: goodCode },
  { weight: 1, arbitrary: goodCode.map((c) => ` ${c}  `) },
  {
    weight: 1,
    arbitrary: fc.string({
      unit: fc.constantFrom('A', 'b', '9', '-', '_', ' ', '.', '\t', 'é'),
      maxLength: 70,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('ABC', 'ABCD', 'A'.repeat(64), 'A'.repeat(65), 'AB_CD', 'AB CD', ''),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('USED', 'INVALID', 'FAIL', 'TIMEOUT', 'SLOW')
      .map((k) => `${k}-${RUN}-${seq++}`),
  },
  { weight: 1, arbitrary: anyJson },
);
const codes = fc.oneof(
  { weight: 10, arbitrary: fc.array(code, { maxLength: 6 }) },
  // Around the 50-code limit (each code is one sandbox call: kept rare).
  { weight: 1, arbitrary: fc.array(goodCode, { minLength: 48, maxLength: 52 }) },
  { weight: 1, arbitrary: fc.array(code, { maxLength: 3 }).map((a) => [...a, ...a]) },
  { weight: 1, arbitrary: anyJson },
);

const category = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...CATEGORIES) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('61', '060', '60.0', ' 60', 'UC60', '', '0', '__proto__x', 'constructor'),
  },
  { weight: 1, arbitrary: oddString },
);
const count = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 4 }) },
  { weight: 1, arbitrary: fc.integer({ min: -3, max: 60 }) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: anyJson },
);
const packs = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(category, count, { maxKeys: 4 }) },
  { weight: 1, arbitrary: anyJson },
);

const uc = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(...CATALOG, 120, 385, 720, 61, 1, 5, 405_000, 405_005, 0, -60, 1.5, 60.5),
  },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 410_000 }).map((n) => n * (n % 2 ? 1 : 5)) },
  { weight: 1, arbitrary: fc.integer({ min: -10, max: 2_000 }) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: fc.constantFrom(1e20, 2 ** 53, 2 ** 53 + 2, 1e300) },
  { weight: 1, arbitrary: anyJson },
);

const source = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('codes', 'stock') },
  { weight: 1, arbitrary: fc.constantFrom('Codes', 'STOCK', '', 'both') },
  { weight: 1, arbitrary: anyJson },
);
const asyncValue = fc.oneof(
  { weight: 3, arbitrary: fc.constant(false) },
  { weight: 1, arbitrary: fc.constant(true) },
  { weight: 1, arbitrary: anyJson },
);
const reference = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 140 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 120, maxLength: 135 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 130 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'r'.repeat(128),
      'r'.repeat(129),
      'é'.repeat(128),
      '😀'.repeat(128),
      '😀'.repeat(129),
    ),
  },
  { weight: 1, arbitrary: anyJson },
);

/** An optional field: absent, null, or a value. */
const opt = <T>(arb: fc.Arbitrary<T>, presentWeight = 3) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: presentWeight, arbitrary: arb },
  );

const extraFields = fc.oneof(
  { weight: 8, arbitrary: fc.constant({}) },
  {
    weight: 1,
    arbitrary: fc.dictionary(
      fc.oneof(
        fc.constantFrom('player', 'Codes', 'code', 'extra', 'toString', 'constructor', 'hasOwnProperty', ''),
        oddString,
      ),
      anyJson,
      { minKeys: 1, maxKeys: 2 },
    ),
  },
);

/** Objects built from the request table's field names, mostly near-valid. */
const requestBody = fc
  .record({
    player_id: fc.oneof({ weight: 8, arbitrary: playerId }, { weight: 1, arbitrary: fc.constant(undefined) }),
    source: opt(source, 1),
    selection: fc.oneof(
      { weight: 4, arbitrary: fc.record({ codes }) },
      { weight: 2, arbitrary: fc.record({ packs }) },
      { weight: 2, arbitrary: fc.record({ uc }) },
      { weight: 2, arbitrary: fc.record({ codes: opt(codes), packs: opt(packs), uc: opt(uc) }) },
    ),
    async: opt(asyncValue, 1),
    reference: opt(reference, 2),
    extra: extraFields,
  })
  .map(({ selection, extra, ...rest }) => {
    const body: Record<string, unknown> = {};
    for (const [k, v] of Object.entries({ ...rest, ...selection })) if (v !== undefined) body[k] = v;
    // defineProperty, so a key named __proto__ or constructor becomes an ordinary own property.
    for (const [k, v] of Object.entries(extra))
      Object.defineProperty(body, k, { value: v, enumerable: true, writable: true });
    return body;
  });

const fuzzOptions = { numRuns: 200, endOnFailure: true } as const;

// ---------------------------------------------------------------------------------------------

describe('POST /v1/redeem under random bodies', () => {
  test('objects of the known fields with random value types: the contract’s answer, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(requestBody, async (body) => {
        const sent = JSON.stringify(body);
        const verdict = oracleForText(sent);
        checkVerdict(await post(sent), verdict, sent);
      }),
      fuzzOptions,
    );
  }, 120_000);

  test('arbitrary JSON values as the body', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (value) => {
        const sent = JSON.stringify(value);
        checkVerdict(await post(sent), oracleForText(sent), sent);
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  test('fields nested at random depths and places (fc.letrec)', async () => {
    const { node } = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.jsonValue({ maxDepth: 0 }),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(
          fc.constantFrom(...KNOWN_FIELDS, '__proto__', 'constructor', 'prototype', 'x'),
          tie('node'),
          {
            maxKeys: 4,
          },
        ),
      ),
    }));
    await fc.assert(
      fc.asyncProperty(node, playerId, async (value, player) => {
        // Half the time the random structure sits under a known field of an otherwise valid body.
        const sent =
          typeof value === 'object' && value !== null && !Array.isArray(value)
            ? JSON.stringify(value)
            : JSON.stringify({ player_id: player, codes: value });
        checkVerdict(await post(sent), oracleForText(sent), sent);
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  test('raw text bodies: random strings and mutated valid bodies', async () => {
    const validText = fc
      .record({ p: digits(5, 20), c: fc.array(goodCode, { minLength: 1, maxLength: 3 }) })
      .map(({ p, c }) => JSON.stringify({ player_id: p, codes: c, reference: 'r' }));
    const mutated = fc
      .tuple(
        validText,
        fc.array(fc.tuple(fc.nat(), fc.nat(3), fc.string({ unit: 'binary', maxLength: 3 })), {
          minLength: 1,
          maxLength: 3,
        }),
      )
      .map(([text, edits]) => {
        let s = text;
        for (const [at, del, ins] of edits) {
          const i = at % (s.length + 1);
          s = s.slice(0, i) + ins + s.slice(i + del);
        }
        return s;
      });
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.string({
        unit: fc.constantFrom(...'{}[]":,0123456789 \n\t-.eEtrufalsn\\u_'.split('')),
        maxLength: 40,
      }),
      mutated,
    );
    await fc.assert(
      fc.asyncProperty(text, async (sent) => {
        checkVerdict(await post(sent), sent === '' ? { error: 'bad_request' } : oracleForText(sent), sent);
      }),
      { numRuns: 200 },
    );
  }, 120_000);

  test('raw byte bodies (invalid UTF-8 included): a 2xx or 4xx with a valid body, never 5xx', async () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 80 }),
      fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 4 }), fc.nat(60)).map(([junk, at]) => {
        const text = Buffer.from(`{"player_id":"5123456789","codes":["${RUN}B${seq++}"],"reference":"x"}`);
        const i = at % text.length;
        return Buffer.concat([text.subarray(0, i), junk, text.subarray(i)]);
      }),
    );
    await fc.assert(
      fc.asyncProperty(bytes, async (raw) => {
        const buf = Buffer.from(raw);
        const res = await post(buf);
        checkAnyAnswer(res);
        if (res.statusCode !== 200 && res.statusCode !== 422) expect(res.statusCode).toBe(400);
      }),
      { numRuns: 120 },
    );
  }, 120_000);
});

describe('hostile structure', () => {
  const cases: Array<[string, string]> = [
    ['10,000 nested arrays', `${'['.repeat(10_000)}${']'.repeat(10_000)}`],
    ['10,000 nested objects', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`],
    ['131,072 nested arrays (exactly the size limit)', `${'['.repeat(131_072)}${']'.repeat(131_072)}`],
    ['10,000 nested arrays unclosed', '['.repeat(10_000)],
    ['deep arrays as codes', `{"player_id":"5123456789","codes":${'['.repeat(10_000)}${']'.repeat(10_000)}}`],
    ['deep arrays as packs', `{"player_id":"5123456789","packs":${'['.repeat(10_000)}${']'.repeat(10_000)}}`],
    [
      'deep object as a pack count',
      `{"player_id":"5123456789","packs":{"60":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}}`,
    ],
    [
      'deep object as reference',
      `{"player_id":"5123456789","codes":["ABCD"],"reference":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`,
    ],
    [
      'deep object as player_id',
      `{"player_id":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)},"codes":["ABCD"]}`,
    ],
    [
      'deep unknown field',
      `{"player_id":"5123456789","codes":["ABCD"],"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    ],
    ['__proto__ at the top', '{"__proto__":{"player_id":"5123456789","codes":["ABCD"]}}'],
    [
      '__proto__ beside a valid body',
      `{"player_id":"5123456789","codes":["${RUN}P1"],"__proto__":{"isAdmin":true}}`,
    ],
    ['escaped __proto__', `{"player_id":"5123456789","codes":["${RUN}P2"],"\\u005f_proto__":{"a":1}}`],
    ['__proto__ as a pack category', '{"player_id":"5123456789","packs":{"__proto__":1}}'],
    ['__proto__ inside codes', '{"player_id":"5123456789","codes":[{"__proto__":{"a":1}}]}'],
    [
      'constructor.prototype',
      `{"player_id":"5123456789","codes":["${RUN}P3"],"constructor":{"prototype":{"a":1}}}`,
    ],
    ['constructor.prototype in packs', '{"player_id":"5123456789","packs":{"constructor":{"prototype":1}}}'],
    ['a huge number', `{"player_id":"5123456789","uc":1${'0'.repeat(400)}}`],
    ['a huge negative exponent', '{"player_id":"5123456789","uc":1e-400}'],
    ['10,000 keys', `{${Array.from({ length: 10_000 }, (_, i) => `"k${i}":1`).join(',')}}`],
    [
      '30,000-element codes array',
      `{"player_id":"5123456789","codes":[${Array(30_000).fill('"ABCD"').join(',')}]}`,
    ],
    ['duplicate keys', `{"player_id":"1","player_id":"5123456789","codes":["${RUN}D1"]}`],
    ['NUL in a string', `{"player_id":"5123456789","codes":["${RUN}N1"],"reference":"a\\u0000b"}`],
    [
      'lone surrogate in reference',
      `{"player_id":"5123456789","codes":["${RUN}N2"],"reference":"a\\ud800b"}`,
    ],
  ];
  test.each(cases)('%s: the contract’s answer, never 5xx', async (_name, sent) => {
    expect(Buffer.byteLength(sent)).toBeLessThanOrEqual(262_144);
    checkVerdict(await post(sent), oracleForText(sent), sent);
  });

  test('the oracle agrees with the service’s own parser on the hostile cases', () => {
    // Guards against a vacuous oracle: these must be refusals.
    for (const [name, sent] of cases) {
      if (/__proto__|constructor|nested|deep|10,000 keys|huge|codes array|NUL|surrogate/.test(name)) {
        expect('error' in oracleForText(sent), name).toBe(true);
      }
    }
    expect(oracleForText(`{"player_id":"5123456789","codes":["ABCD"]}`)).toMatchObject({ pass: 'codes' });
    expect(oracleForText('{"player_id":"5123456789","uc":1e20}')).toEqual({ error: 'no_combo' });
    expect(ucPossible(405_000)).toBe(true);
    expect(ucPossible(61)).toBe(false);
  });
});
