// POST /v1/redeem request errors (docs/reference/redeem.md#validation-order, "Request errors, checked in this order"):
// every error with its status, error_code and whole body, the order between them, the field
// rules of the request table, and what a refusal leaves behind (no idempotency key, no billing).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { maskCode } from '../../src/core/crypto/code-crypto.ts';
import {
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  type Merchant,
  type TestApp,
} from '../helpers/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ sandboxSlowMs: 50 });
});
afterAll(() => t.close());

// Codes and keys are unique across runs: on PostgreSQL the database (and the sandbox's memory of
// activated codes, and every stock code) outlives a run.
const RUN = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`.toUpperCase();
let seq = 0;
const uniq = (prefix = 'OK') => `${prefix}-${RUN}-${(seq++).toString(36).toUpperCase()}`;
const freshKey = () => `idem-${RUN}-${seq++}`;

const PLAYER = '5123456789';

interface Send {
  /** API key; null sends no Authorization header. */
  key: string | null;
  /** An object is sent as JSON; a string or Buffer as is; undefined sends no body. */
  body?: unknown;
  /** The Idempotency-Key; null sends none. Default: a fresh key. */
  idem?: string | null;
  headers?: Record<string, string>;
}

/**
 * One POST /v1/redeem. The injected clock moves one second first, so a file's worth of requests
 * on one key never reaches the burst limit (30 per 10 s on that clock).
 */
function send({ key, body, idem = freshKey(), headers = {} }: Send): Promise<LightMyRequestResponse> {
  t.clock.advance(1000);
  const h: Record<string, string> = { 'content-type': 'application/json', ...headers };
  if (key !== null) h.authorization = `Bearer ${key}`;
  if (idem !== null) h['idempotency-key'] = idem;
  const payload =
    body === undefined
      ? undefined
      : typeof body === 'string' || Buffer.isBuffer(body)
        ? body
        : JSON.stringify(body);
  return t.api.inject({
    method: 'POST',
    url: '/v1/redeem',
    headers: h,
    ...(payload === undefined ? {} : { payload }),
  });
}

const redeem = (key: string, body: unknown, idem?: string | null) => send({ key, body, idem });

/**
 * The whole error body of docs/reference/keys-and-modes.md#the-error-body and nothing else, plus the headers every public
 * response carries. `identified`: the key was identified, so the quota and balance headers are
 * there too (docs/reference/keys-and-modes.md#response-headers).
 */
function expectError(
  res: LightMyRequestResponse,
  status: number,
  errorCode: string,
  opts: { identified?: boolean; extra?: Record<string, unknown> } = {},
) {
  const body = res.json();
  expect({ status: res.statusCode, error_code: body.error_code, message: body.message }).toMatchObject({
    status,
    error_code: errorCode,
  });
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(body).toEqual({
    ok: false,
    error_code: errorCode,
    message: expect.any(String),
    request_id: res.headers['x-request-id'],
    ...opts.extra,
  });
  expect(body.message.length).toBeGreaterThan(0);
  expect(body.request_id).toMatch(/^req_[0-9A-Za-z]{20,}$/);
  expect(res.headers['svc-version']).toBe('1.0.0');
  expect(res.headers['svc-cost']).toBe('0');
  expect(res.headers['svc-idempotent-replay']).toBe('false');
  if (opts.identified ?? true) {
    expect(res.headers['svc-quota-used']).toMatch(/^\d+$/);
    expect(res.headers['svc-quota-remaining']).toMatch(/^\d+$/);
    expect(res.headers['svc-balance-usd']).toMatch(/^\d+(\.\d{1,6})?$/);
  }
  return body as { ok: false; error_code: string; message: string; request_id: string };
}

/** A successful redeem result (docs/reference/redeem.md#the-result). */
function expectResult(res: LightMyRequestResponse, status: 200 | 422 = 200) {
  expect({ status: res.statusCode, body: res.json() }).toMatchObject({ status });
  const r = res.json();
  expect(r.ok).toBe(status === 200);
  expect(r.request_id).toBe(res.headers['x-request-id']);
  expect(Array.isArray(r.codes)).toBe(true);
  return r;
}

/** A merchant with a capped plan (100 included at $0.01) and a funded test wallet. */
let m: Merchant;
beforeAll(async () => {
  m = await createMerchant(t, { topup: { test: 5 } });
});

async function addStock(customerId: number, category: string, count: number): Promise<string[]> {
  const codes = Array.from({ length: count }, () => uniq(`STK${category}`));
  const r = await adminCall<{ added: number }>(t, 'POST', `/admin/v1/customers/${customerId}/stock`, {
    mode: 'test',
    category,
    codes,
  });
  expect(r.added).toBe(count);
  return codes;
}

const validCodes = (n = 1) => Array.from({ length: n }, () => uniq());

describe('step 1: body size (262,144 bytes)', () => {
  /** A valid body padded with JSON whitespace to exactly `size` bytes. */
  function paddedBody(size: number): string {
    const core = JSON.stringify({ player_id: PLAYER, codes: [uniq()] });
    return `${core.slice(0, -1)}${' '.repeat(size - core.length)}}`;
  }

  test('exactly 262,144 bytes is accepted, one more is 413 payload_too_large', async () => {
    const exact = paddedBody(262_144);
    expect(Buffer.byteLength(exact)).toBe(262_144);
    expectResult(await redeem(m.key, exact), 200);

    const over = paddedBody(262_145);
    expectError(await redeem(m.key, over), 413, 'payload_too_large');
  });

  test('413 comes before the Idempotency-Key check and before the JSON check', async () => {
    expectError(await redeem(m.key, paddedBody(262_145), null), 413, 'payload_too_large');
    expectError(await redeem(m.key, `{${'x'.repeat(300_000)}`, null), 413, 'payload_too_large');
    expectError(
      await send({ key: m.key, body: paddedBody(300_000), headers: { 'idempotency-key': 'x'.repeat(300) } }),
      413,
      'payload_too_large',
    );
  });

  test('multi-byte characters count as bytes, not characters', async () => {
    // 131,073 two-byte characters: 262,146 bytes in a reference that is far too long anyway.
    const body = JSON.stringify({ player_id: PLAYER, codes: [uniq()], reference: 'é'.repeat(131_073) });
    expect(body.length).toBeLessThan(262_144);
    expect(Buffer.byteLength(body)).toBeGreaterThan(262_144);
    expectError(await redeem(m.key, body), 413, 'payload_too_large');
  });

  test('a chunked body over the limit is refused while reading (real listener)', async () => {
    const address = await t.api.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.api.server.address() as AddressInfo;
    expect(address).toContain(String(port));
    const answer = await new Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }>(
      (resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/redeem',
            headers: { ...bearer(m.key), 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => {
              text += c;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
          },
        );
        req.on('error', (err) => {
          // The server may close the connection after answering; the answer is what matters.
          if (
            (err as NodeJS.ErrnoException).code !== 'EPIPE' &&
            (err as NodeJS.ErrnoException).code !== 'ECONNRESET'
          )
            reject(err);
        });
        // No Idempotency-Key either: 413 is step 1. 20 chunks of 16 KiB = 320 KiB.
        t.clock.advance(1000);
        const chunk = ' '.repeat(16_384);
        req.write('{"player_id":"5123456789",');
        let i = 0;
        const writeMore = () => {
          while (i < 20) {
            i++;
            if (!req.write(chunk)) return req.once('drain', writeMore);
          }
          req.end('"codes":["ABCD"]}');
        };
        writeMore();
      },
    );
    expect(answer.status).toBe(413);
    const body = JSON.parse(answer.body);
    expect(body).toEqual({
      ok: false,
      error_code: 'payload_too_large',
      message: expect.any(String),
      request_id: answer.headers['x-request-id'],
    });
  });
});

describe('step 2: Idempotency-Key', () => {
  const good = () => ({ player_id: PLAYER, codes: [uniq()] });

  test('missing or blank → 400 idempotency_required, also with a malformed or empty body', async () => {
    expectError(await redeem(m.key, good(), null), 400, 'idempotency_required');
    expectError(await redeem(m.key, good(), ''), 400, 'idempotency_required');
    expectError(await redeem(m.key, good(), '   '), 400, 'idempotency_required');
    expectError(await redeem(m.key, '{"player_id": ', null), 400, 'idempotency_required');
    expectError(await redeem(m.key, 'not json at all', null), 400, 'idempotency_required');
    expectError(await redeem(m.key, undefined, null), 400, 'idempotency_required');
    expectError(await redeem(m.key, { unknown: 1, player_id: 'x' }, null), 400, 'idempotency_required');
    expectError(await redeem(m.key, '[]', ' '), 400, 'idempotency_required');
  });

  test('exactly 255 printable ASCII characters is accepted; 256 is bad_request', async () => {
    const printable = Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)).join('');
    const k255 = `k${printable}${printable}${printable}`.slice(0, 255);
    expect(k255).toHaveLength(255);
    expectResult(await redeem(m.key, good(), k255));
    const k256 = `${k255}z`;
    const res = await redeem(m.key, good(), k256);
    expectError(res, 400, 'bad_request');
    // A long key is not also a malformed-body problem: the key is checked first.
    expectError(await redeem(m.key, '{oops', k256), 400, 'bad_request');
    expect(res.json().message).toMatch(/idempotency/i);
  });

  test('a key with a non-printable or non-ASCII character is bad_request, before the body', async () => {
    for (const bad of ['abc\tdef', 'abc\x7fdef', 'clé-1', 'key\x01', 'ключ', '\x80abc']) {
      const res = await redeem(m.key, { player_id: 'nope', codes: [] }, bad);
      expectError(res, 400, 'bad_request');
      expect(res.json().message).toMatch(/idempotency/i);
    }
  });

  test('a key of one character works', async () => {
    const one = String.fromCharCode(0x21 + (seq++ % 90));
    const other = await createMerchant(t, { topup: { test: 1 } });
    expectResult(await redeem(other.key, good(), one));
  });
});

describe('step 3: body, unknown fields, source / async / reference / uc', () => {
  test('body not JSON → 400 bad_request (after the Idempotency-Key check)', async () => {
    for (const raw of [
      '{"player_id": ',
      'not json',
      '{player_id: "5123456789"}',
      "{'a': 1}",
      '{"a":1}}',
      '\u0000',
      '[1,]',
    ]) {
      expectError(await redeem(m.key, raw), 400, 'bad_request');
    }
  });

  test('empty body → 400 bad_request', async () => {
    expectError(await redeem(m.key, undefined), 400, 'bad_request');
    expectError(await redeem(m.key, ''), 400, 'bad_request');
  });

  test('body JSON but not an object → 400 bad_request', async () => {
    for (const raw of [
      '[]',
      '[{"player_id":"5123456789","codes":["ABCD"]}]',
      '"x"',
      '1',
      '0',
      'true',
      'null',
      '-1.5',
    ]) {
      expectError(await redeem(m.key, raw), 400, 'bad_request');
    }
  });

  test('any Content-Type is read as JSON', async () => {
    const res = await send({
      key: m.key,
      body: JSON.stringify({ player_id: PLAYER, codes: [uniq()] }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectResult(res);
    expectError(
      await send({
        key: m.key,
        body: 'player_id=5123456789',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      400,
      'bad_request',
    );
  });

  test('a field the table does not name → bad_request naming it, before a bad player', async () => {
    for (const [field, value] of [
      ['player', PLAYER],
      ['Player_id', PLAYER],
      ['code', 'ABCD'],
      ['extra', null],
      ['constructor', 1],
      ['toString', 'x'],
      ['hasOwnProperty', 1],
      ['', 1],
    ] as const) {
      const res = await redeem(m.key, { player_id: 'bad', codes: [uniq()], [field]: value });
      expectError(res, 400, 'bad_request');
      if (field !== '') expect(res.json().message).toContain(field);
      // Also with a valid player: the unknown field alone is enough.
      expectError(
        await redeem(m.key, { player_id: PLAYER, codes: [uniq()], [field]: value }),
        400,
        'bad_request',
      );
    }
  });

  test('__proto__ and constructor.prototype keys → bad_request, never 5xx', async () => {
    for (const raw of [
      '{"player_id":"5123456789","codes":["ABCD"],"__proto__":{"x":1}}',
      '{"player_id":"5123456789","packs":{"__proto__":1}}',
      '{"player_id":"5123456789","codes":["ABCD"],"constructor":{"prototype":{"x":1}}}',
    ]) {
      expectError(await redeem(m.key, raw), 400, 'bad_request');
    }
  });

  test('source not "codes"/"stock" → bad_request naming source, before a bad player', async () => {
    for (const source of ['Codes', 'STOCK', '', 'both', 1, true, [], {}, ['codes']]) {
      const res = await redeem(m.key, { player_id: 'x', source, codes: [uniq()] });
      expectError(res, 400, 'bad_request');
      expect(res.json().message).toContain('source');
    }
  });

  test('async not a boolean → bad_request naming async, before a bad player', async () => {
    for (const value of ['true', 'false', 1, 0, [], {}, 'yes']) {
      const res = await redeem(m.key, { player_id: 'x', codes: [uniq()], async: value });
      expectError(res, 400, 'bad_request');
      expect(res.json().message).toContain('async');
    }
  });

  test('async false is a synchronous redeem', async () => {
    const r = expectResult(await redeem(m.key, { player_id: PLAYER, codes: [uniq()], async: false }));
    expect(r.job_id).toBeUndefined();
  });

  test('reference over 128 characters or not a string → bad_request naming reference', async () => {
    for (const reference of ['r'.repeat(129), 'é'.repeat(129), 12, true, ['x'], { a: 1 }]) {
      const res = await redeem(m.key, { player_id: 'x', codes: [uniq()], reference });
      expectError(res, 400, 'bad_request');
      expect(res.json().message).toContain('reference');
    }
  });

  test('reference with U+0000 or a lone surrogate → bad_request naming reference, not a 500 or an altered echo', async () => {
    // A PostgreSQL text column cannot hold U+0000 (this was a 500 internal); a lone surrogate is
    // not Unicode text and came back as U+FFFD.
    for (const raw of ['"a\\u0000b"', '"\\u0000"', '"a\\ud800b"', '"\\udc00"', '"x\\ud83d"']) {
      const res = await redeem(m.key, `{"player_id":"${PLAYER}","codes":["${uniq()}"],"reference":${raw}}`);
      expectError(res, 400, 'bad_request');
      expect(res.json().message).toContain('reference');
    }
  });

  test('reference of 128 characters (or empty) is accepted and echoed', async () => {
    for (const reference of [
      'r'.repeat(128),
      'é'.repeat(128),
      '😀'.repeat(128),
      '',
      'order-1042 / "quoted" \\ ✓\n\t',
    ]) {
      const r = expectResult(await redeem(m.key, { player_id: PLAYER, codes: [uniq()], reference }));
      expect(r.reference).toBe(reference);
    }
  });

  test('uc not a positive integer → bad_request naming uc, before a bad player and an ambiguous source', async () => {
    for (const uc of [0, -5, 1.5, '60', -60, 0.5, true, [60], { 60: 1 }, '']) {
      const res = await redeem(m.key, { player_id: 'bad', uc, codes: [uniq()] });
      expectError(res, 400, 'bad_request');
      expect(res.json().message).toContain('uc');
    }
  });

  test('a field of step 3 beats every later step', async () => {
    // Unknown field + no player + no source at all: still bad_request.
    expectError(await redeem(m.key, { zzz: 1 }), 400, 'bad_request');
    expectError(await redeem(m.key, {}), 400, 'bad_player');
    expectError(await redeem(m.key, { reference: 'r'.repeat(129) }), 400, 'bad_request');
    expectError(await redeem(m.key, { source: 'x', codes: [], packs: {} }), 400, 'bad_request');
  });
});

describe('step 4: player_id', () => {
  test('missing, null or of the wrong type → bad_player', async () => {
    for (const body of [
      { codes: [uniq()] },
      { player_id: null, codes: [uniq()] },
      { player_id: true, codes: [uniq()] },
      { player_id: ['5123456789'], codes: [uniq()] },
      { player_id: { id: '5123456789' }, codes: [uniq()] },
    ]) {
      expectError(await redeem(m.key, body), 400, 'bad_player');
    }
  });

  test('malformed → bad_player: 4 digits, 21 digits, letters, negative, float, spaces', async () => {
    for (const player_id of [
      '1234',
      '123456789012345678901',
      '51234a6789',
      'abcdefg',
      '-12345',
      '12345.5',
      ' 12345',
      '12345 ',
      '12345\n',
      '１２３４５',
      '',
      1234,
      -12345,
      12345.5,
      1e21,
    ]) {
      expectError(await redeem(m.key, { player_id, codes: [uniq()] }), 400, 'bad_player');
    }
    // 21 digits as a JSON integer (raw: a JS literal would round it).
    expectError(
      await redeem(m.key, `{"player_id":123456789012345678901,"codes":["${uniq()}"]}`),
      400,
      'bad_player',
    );
  });

  test('5 and 20 digits are accepted; a JSON integer is turned into a string', async () => {
    for (const [player_id, echoed] of [
      ['12345', '12345'],
      ['12345678901234567890', '12345678901234567890'],
      [5123456789, '5123456789'],
      [12345, '12345'],
    ] as const) {
      const r = expectResult(await redeem(m.key, { player_id, codes: [uniq()] }));
      expect(r.player_id).toBe(echoed);
    }
  });

  test('a JSON number with no fractional part is an integer: 5123456789.0 is "5123456789"', async () => {
    const raw = `{"player_id": 5123456789.0, "codes": ["${uniq()}"]}`;
    const r = expectResult(await redeem(m.key, raw));
    expect(r.player_id).toBe('5123456789');
  });

  test('bad player beats two sources, an empty source and bad codes', async () => {
    expectError(await redeem(m.key, { player_id: '12', codes: [uniq()], uc: 60 }), 400, 'bad_player');
    expectError(
      await redeem(m.key, { player_id: '12', codes: [uniq()], packs: { 60: 1 }, uc: 60 }),
      400,
      'bad_player',
    );
    expectError(await redeem(m.key, { player_id: '12', codes: [] }), 400, 'bad_player');
    expectError(await redeem(m.key, { player_id: '12' }), 400, 'bad_player');
    expectError(await redeem(m.key, { player_id: '12', codes: ['a'] }), 400, 'bad_player');
    expectError(await redeem(m.key, { player_id: '12', packs: { 61: 1 } }), 400, 'bad_player');
    expectError(await redeem(m.key, { player_id: '12', uc: 61 }), 400, 'bad_player');
    expectError(
      await redeem(m.key, { player_id: '12', source: 'stock', codes: [uniq()] }),
      400,
      'bad_player',
    );
  });
});

describe('step 5: ambiguous_source', () => {
  test('more than one of codes / packs / uc → ambiguous_source', async () => {
    for (const sel of [
      { codes: [uniq()], uc: 60 },
      { codes: [uniq()], packs: { 60: 1 } },
      { packs: { 60: 1 }, uc: 60 },
      { codes: [uniq()], packs: { 60: 1 }, uc: 60 },
    ]) {
      expectError(await redeem(m.key, { player_id: PLAYER, ...sel }), 400, 'ambiguous_source');
    }
  });

  test('ambiguous_source comes before empty and before bad codes / packs / no_combo', async () => {
    for (const sel of [
      { codes: [], packs: {} },
      { codes: [], uc: 60 },
      { packs: {}, uc: 60 },
      { codes: ['a'], packs: { 61: 1 } },
      { codes: {}, packs: [] },
      { codes: '', uc: 61 },
      { packs: { 61: 0 }, uc: 61 },
    ]) {
      expectError(await redeem(m.key, { player_id: PLAYER, ...sel }), 400, 'ambiguous_source');
    }
  });

  test('source contradicting the field given → ambiguous_source', async () => {
    for (const sel of [
      { source: 'stock', codes: [uniq()] },
      { source: 'codes', packs: { 60: 1 } },
      { source: 'codes', uc: 60 },
      { source: 'stock', codes: [] },
      { source: 'codes', packs: {} },
      { source: 'stock', codes: 'x' },
      { source: 'codes', uc: 61 },
    ]) {
      expectError(await redeem(m.key, { player_id: PLAYER, ...sel }), 400, 'ambiguous_source');
    }
  });

  test('source agreeing with the field is fine', async () => {
    const r = expectResult(await redeem(m.key, { player_id: PLAYER, source: 'codes', codes: [uniq()] }));
    expect(r.source).toBe('codes');
    expectError(
      await redeem(m.key, { player_id: PLAYER, source: 'stock', packs: { 8100: 1 } }),
      409,
      'no_stock',
    );
    expectError(await redeem(m.key, { player_id: PLAYER, source: 'stock', uc: 8100 }), 409, 'no_stock');
  });

  test('null selection fields count as absent', async () => {
    const r = expectResult(
      await redeem(m.key, { player_id: PLAYER, codes: [uniq()], packs: null, uc: null }),
    );
    expect(r.source).toBe('codes');
    expectError(
      await redeem(m.key, { player_id: PLAYER, codes: null, packs: null, uc: 8100 }),
      409,
      'no_stock',
    );
  });
});

describe('step 6: empty', () => {
  test('none of codes / packs / uc → empty (also with only a source, or only nulls)', async () => {
    for (const body of [
      { player_id: PLAYER },
      { player_id: PLAYER, source: 'stock' },
      { player_id: PLAYER, source: 'codes' },
      { player_id: PLAYER, codes: null, packs: null, uc: null },
      { player_id: PLAYER, async: false, reference: 'x' },
    ]) {
      expectError(await redeem(m.key, body), 400, 'empty');
    }
  });

  test('an empty array for codes, an empty object for packs → empty', async () => {
    expectError(await redeem(m.key, { player_id: PLAYER, codes: [] }), 400, 'empty');
    expectError(await redeem(m.key, { player_id: PLAYER, packs: {} }), 400, 'empty');
    expectError(await redeem(m.key, { player_id: PLAYER, source: 'codes', codes: [] }), 400, 'empty');
    expectError(await redeem(m.key, { player_id: PLAYER, source: 'stock', packs: {} }), 400, 'empty');
  });

  test('the wrong empty type is an error of the field’s own step', async () => {
    expectError(await redeem(m.key, { player_id: PLAYER, codes: {} }), 400, 'bad_codes');
    expectError(await redeem(m.key, { player_id: PLAYER, codes: '' }), 400, 'bad_codes');
    expectError(await redeem(m.key, { player_id: PLAYER, codes: 0 }), 400, 'bad_codes');
    expectError(await redeem(m.key, { player_id: PLAYER, codes: false }), 400, 'bad_codes');
    expectError(await redeem(m.key, { player_id: PLAYER, packs: [] }), 400, 'bad_packs');
    expectError(await redeem(m.key, { player_id: PLAYER, packs: '' }), 400, 'bad_packs');
    expectError(await redeem(m.key, { player_id: PLAYER, packs: 0 }), 400, 'bad_packs');
    expectError(await redeem(m.key, { player_id: PLAYER, packs: false }), 400, 'bad_packs');
  });
});

describe('step 7: codes', () => {
  test('not an array of strings → bad_codes', async () => {
    for (const codes of [
      {},
      '',
      'ABCD',
      12,
      true,
      { 0: 'ABCD' },
      [12],
      [null],
      [['ABCD']],
      [{ code: 'ABCD' }],
      ['ABCDE', 5],
    ]) {
      expectError(await redeem(m.key, { player_id: PLAYER, codes }), 400, 'bad_codes');
    }
  });

  test('malformed codes → bad_codes', async () => {
    for (const code of [
      'ABC',
      'A'.repeat(65),
      'AB_CD',
      'AB CD',
      'AB.CD',
      'ABCD!',
      'ÄBCD',
      'ABCD\t',
      '\tABCD',
      'ABCD\n',
      '',
      '    ',
      ' AB ',
      'ABCＤ',
    ]) {
      expectError(await redeem(m.key, { player_id: PLAYER, codes: [uniq(), code] }), 400, 'bad_codes');
    }
  });

  test('4 and 64 characters are accepted, and the boundary with surrounding spaces too', async () => {
    const four = `${RUN}${seq++}`
      .replace(/[^A-Za-z0-9]/g, '')
      .slice(-4)
      .padStart(4, 'Q');
    const sixtyFour = uniq('L').padEnd(64, 'x');
    expect(sixtyFour).toHaveLength(64);
    const spaced = ` ${uniq('L').padEnd(64, 'y')}  `;
    // (A 4-character code may have been activated by an earlier run on PostgreSQL: its status
    // is not asserted, the other two make the redeem a 200.)
    const r = expectResult(await redeem(m.key, { player_id: PLAYER, codes: [four, sixtyFour, spaced] }));
    expect(r.codes.map((c: { code: string }) => c.code)).toEqual([four, sixtyFour, spaced.trim()]);
  });

  test('duplicates → bad_codes, also after trimming spaces', async () => {
    const a = uniq();
    expectError(await redeem(m.key, { player_id: PLAYER, codes: [a, a] }), 400, 'bad_codes');
    expectError(await redeem(m.key, { player_id: PLAYER, codes: [a, ` ${a}`] }), 400, 'bad_codes');
    expectError(
      await redeem(m.key, { player_id: PLAYER, codes: [`${a}  `, uniq(), `  ${a}`] }),
      400,
      'bad_codes',
    );
  });

  test('51 codes → bad_codes; 50 codes are accepted', async () => {
    expectError(await redeem(m.key, { player_id: PLAYER, codes: validCodes(51) }), 400, 'bad_codes');
    const fifty = validCodes(50);
    const r = expectResult(await redeem(m.key, { player_id: PLAYER, codes: fifty }));
    expect(r.codes).toHaveLength(50);
    expect(r.codes.map((c: { code: string }) => c.code)).toEqual(fifty);
  });

  test('codes are trimmed of surrounding spaces in the result', async () => {
    const a = uniq();
    const b = uniq();
    const r = expectResult(await redeem(m.key, { player_id: PLAYER, codes: [`  ${a}`, `${b}   `] }));
    expect(r.codes.map((c: { code: string }) => c.code)).toEqual([a, b]);
    expect(r.codes.map((c: { status: string }) => c.status)).toEqual(['activated', 'activated']);
  });
});

describe('step 8: packs', () => {
  test('unknown category → bad_packs', async () => {
    for (const packs of [
      { 61: 1 },
      { '060': 1 },
      { '60.0': 1 },
      { ' 60': 1 },
      { UC60: 1 },
      { 60: 1, 100: 1 },
      { '': 1 },
    ]) {
      expectError(await redeem(m.key, { player_id: PLAYER, packs }), 400, 'bad_packs');
    }
  });

  test('a count that is not a positive JSON integer → bad_packs', async () => {
    for (const count of ['2', 0, -1, 1.5, true, null, [1], { n: 1 }, '']) {
      expectError(await redeem(m.key, { player_id: PLAYER, packs: { 60: count } }), 400, 'bad_packs');
    }
  });

  test('a total over 50 → bad_packs; 50 passes validation (no stock: 409)', async () => {
    expectError(await redeem(m.key, { player_id: PLAYER, packs: { 60: 51 } }), 400, 'bad_packs');
    expectError(await redeem(m.key, { player_id: PLAYER, packs: { 60: 26, 325: 25 } }), 400, 'bad_packs');
    expectError(await redeem(m.key, { player_id: PLAYER, packs: { 60: 50 } }), 409, 'no_stock');
    expectError(await redeem(m.key, { player_id: PLAYER, packs: { 60: 25, 8100: 25 } }), 409, 'no_stock');
  });

  test('2.0 counts as 2', async () => {
    const other = await createMerchant(t, { topup: { test: 1 } });
    const stock = await addStock(other.customerId, '325', 2);
    const r = expectResult(await redeem(other.key, `{"player_id":"${PLAYER}","packs":{"325":2.0}}`));
    expect(r.source).toBe('stock');
    expect(r.codes.map((c: { code: string; category: string }) => [c.code, c.category]).sort()).toEqual(
      stock.map((c) => [maskCode(c.slice(-4), c.length), '325']).sort(), // masked (docs/reference/redeem.md#stock-codes-are-masked)
    );
    expect(r.billed_requests).toBe(2);
  });
});

describe('steps 9 and 11: uc', () => {
  test('a uc no combination can make → no_combo', async () => {
    // A JSON integer beyond 2^53 is still a positive integer (step 3 passes): no_combo, not bad_request.
    for (const uc of [61, 1, 59, 5, 405_005, 405_060, 1_000_000, 1e20, 2 ** 53, 1e300]) {
      expectError(await redeem(m.key, { player_id: PLAYER, uc }), 400, 'no_combo');
    }
  });

  test('a uc some combination can make, without stock → 409 no_stock', async () => {
    for (const uc of [60, 120, 385, 405_000]) {
      expectError(await redeem(m.key, { player_id: PLAYER, uc }), 409, 'no_stock');
    }
  });

  test('uc with stock is redeemed', async () => {
    const other = await createMerchant(t, { topup: { test: 1 } });
    const [code] = await addStock(other.customerId, '60', 1);
    const r = expectResult(await redeem(other.key, { player_id: PLAYER, uc: 60, reference: 'uc-ref' }));
    expect(r).toMatchObject({ source: 'stock', reference: 'uc-ref', uc_delivered: 60, billed_requests: 1 });
    expect(r.codes).toEqual([
      {
        code: maskCode(code!.slice(-4), code!.length), // stock codes are masked (docs/reference/redeem.md#stock-codes-are-masked)
        category: '60',
        uc: 60,
        status: 'activated',
        error_code: '',
        disposition: 'consumed',
        billed: true,
      },
    ]);
  });

  test('60.0 is the integer 60 (no_stock, not bad_request)', async () => {
    expectError(await redeem(m.key, `{"player_id":"${PLAYER}","uc":60.0}`), 409, 'no_stock');
  });
});

describe('optional fields sent as null count as absent', () => {
  test('every optional field null with codes: a normal redeem', async () => {
    const code = uniq();
    const r = expectResult(
      await redeem(m.key, {
        player_id: PLAYER,
        source: null,
        codes: [code],
        packs: null,
        uc: null,
        async: null,
        reference: null,
      }),
    );
    expect(r).toMatchObject({ ok: true, player_id: PLAYER, mode: 'test', source: 'codes', reference: null });
    expect(r.codes).toEqual([
      {
        code,
        category: null,
        uc: null,
        status: 'activated',
        error_code: '',
        disposition: 'consumed',
        billed: true,
      },
    ]);
  });
});

describe('a refused request takes no idempotency key and bills nothing', () => {
  const me = async (key: string) => {
    const res = await t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    return { quota: body.quota, balance: body.balance_usd };
  };

  test('every 4xx of validation and no_stock: the same key then works (200), is not a conflict, and nothing is billed', async () => {
    // An uncapped plan bills every request from the wallet: any hold or charge moves the balance.
    const u = await createMerchant(t, {
      plan: { daily_limit: null, per_request_usd: '0.25' },
      topup: { test: 10 },
    });
    const before = await me(u.key);
    expect(before).toEqual({
      quota: { daily_limit: null, used_today: 0, remaining_today: 0, overage_today: 0 },
      balance: 10,
    });
    const refusals: Array<[unknown, number, string]> = [
      ['{"player_id": ', 400, 'bad_request'],
      ['[]', 400, 'bad_request'],
      [{ player_id: PLAYER, codes: ['ABCD'], extra: 1 }, 400, 'bad_request'],
      [{ player_id: PLAYER, codes: ['ABCD'], reference: 'r'.repeat(129) }, 400, 'bad_request'],
      [{ player_id: PLAYER, uc: '60' }, 400, 'bad_request'],
      [{ player_id: '1234', codes: ['ABCD'] }, 400, 'bad_player'],
      [{ player_id: PLAYER, codes: ['ABCD'], uc: 60 }, 400, 'ambiguous_source'],
      [{ player_id: PLAYER, codes: [] }, 400, 'empty'],
      [{ player_id: PLAYER, codes: ['AB_CD'] }, 400, 'bad_codes'],
      [{ player_id: PLAYER, packs: { 61: 1 } }, 400, 'bad_packs'],
      [{ player_id: PLAYER, uc: 61 }, 400, 'no_combo'],
      [{ player_id: PLAYER, uc: 60 }, 409, 'no_stock'],
      [{ player_id: PLAYER, packs: { 60: 1 } }, 409, 'no_stock'],
    ];
    const idem = freshKey();
    for (const [body, status, code] of refusals) {
      expectError(await redeem(u.key, body, idem), status, code);
      expect(await me(u.key)).toEqual(before);
    }
    // Each refusal again with its own key, then the fixed body with that key.
    for (const [body, status, code] of refusals) {
      const k = freshKey();
      expectError(await redeem(u.key, body, k), status, code);
      const fixed = { player_id: PLAYER, codes: [uniq()] };
      const ok = await redeem(u.key, fixed, k);
      expectResult(ok);
      expect(ok.headers['svc-idempotent-replay']).toBe('false');
      expect(ok.headers['svc-cost']).toBe('1');
    }
    // And the first key, used by every refusal above, is still free.
    const fixed = { player_id: PLAYER, codes: [uniq()] };
    const first = await redeem(u.key, fixed, idem);
    expectResult(first);
    expect(first.headers['svc-idempotent-replay']).toBe('false');
    expect(first.headers['svc-cost']).toBe('1');
    const replay = await redeem(u.key, fixed, idem);
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['svc-idempotent-replay']).toBe('true');
    // The checks could fail: the successful redeems moved the counters.
    const after = await me(u.key);
    expect(after.quota.used_today).toBe(refusals.length + 1);
    expect(after.balance).toBe(10 - 0.25 * (refusals.length + 1));
  });

  test('validation comes before idempotency: a taken key with a bad body is the body’s error, not a conflict', async () => {
    const idem = freshKey();
    const body = { player_id: PLAYER, codes: [uniq()] };
    expectResult(await redeem(m.key, body, idem));
    expectError(await redeem(m.key, { ...body, extra: 1 }, idem), 400, 'bad_request');
    expectError(await redeem(m.key, { ...body, player_id: '1' }, idem), 400, 'bad_player');
    expectError(await redeem(m.key, { ...body, codes: [] }, idem), 400, 'empty');
    expectError(await redeem(m.key, { player_id: PLAYER, uc: 61 }, idem), 400, 'no_combo');
    expectError(await redeem(m.key, '{bad', idem), 400, 'bad_request');
    // A different valid body with the taken key is the conflict.
    expectError(
      await redeem(m.key, { player_id: PLAYER, codes: [uniq()] }, idem),
      422,
      'idempotency_conflict',
    );
    // Key order and spacing are not a difference.
    const res = await redeem(
      m.key,
      `{ "codes" : ${JSON.stringify(body.codes)}, "player_id":"${PLAYER}" }`,
      idem,
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['svc-idempotent-replay']).toBe('true');
  });

  test('402 no_plan takes no key: after the operator assigns a plan the same key works', async () => {
    const np = await createMerchant(t, { plan: null, topup: { test: 1 } });
    const idem = freshKey();
    const body = { player_id: PLAYER, codes: [uniq()] };
    expectError(await redeem(np.key, body, idem), 402, 'no_plan');
    await adminCall(t, 'PUT', `/admin/v1/customers/${np.customerId}/plan`, {
      label: 'p',
      daily_limit: 10,
      per_request_usd: '0.01',
      overage: true,
      active: true,
    });
    const ok = await redeem(np.key, body, idem);
    expectResult(ok);
    expect(ok.headers['svc-idempotent-replay']).toBe('false');
  });

  test('the other billing refusals (402 insufficient_funds, 402 subscription_expired, 429 quota_exceeded) take no key either', async () => {
    const body = () => ({ player_id: PLAYER, codes: [uniq()] });
    const setPlan = (customerId: number, plan: Record<string, unknown>) =>
      adminCall(t, 'PUT', `/admin/v1/customers/${customerId}/plan`, {
        label: 'p',
        per_request_usd: '0.5',
        overage: true,
        active: true,
        ...plan,
      });

    // insufficient_funds, then a top-up.
    const poor = await createMerchant(t, { plan: { daily_limit: null, per_request_usd: '0.5' } });
    const k1 = freshKey();
    const b1 = body();
    expectError(await redeem(poor.key, b1, k1), 402, 'insufficient_funds');
    await adminCall(t, 'POST', `/admin/v1/customers/${poor.customerId}/wallet/topup`, {
      mode: 'test',
      usd: '1',
    });
    const ok1 = await redeem(poor.key, b1, k1);
    expectResult(ok1);
    expect(ok1.headers['svc-idempotent-replay']).toBe('false');

    // subscription_expired (with subscription_expired_at), then a renewal.
    const lapsed = await createMerchant(t, {
      subscription: { required: true, expires_at: '2026-01-01T00:00:00Z' },
    });
    const k2 = freshKey();
    const b2 = body();
    expectError(await redeem(lapsed.key, b2, k2), 402, 'subscription_expired', {
      extra: { subscription_expired_at: '2026-01-01T00:00:00Z' },
    });
    await adminCall(t, 'PUT', `/admin/v1/customers/${lapsed.customerId}/subscription`, {
      required: true,
      expires_at: '2027-12-31T00:00:00Z',
    });
    expectResult(await redeem(lapsed.key, b2, k2));

    // quota_exceeded (no overage), then a larger include.
    const capped = await createMerchant(t, {
      plan: { daily_limit: 1, per_request_usd: '0.5', overage: false },
    });
    expectResult(await redeem(capped.key, body()));
    const k3 = freshKey();
    const b3 = body();
    const refused = await redeem(capped.key, b3, k3);
    expect(refused.statusCode).toBe(429);
    const rb = refused.json();
    expect(rb).toMatchObject({
      ok: false,
      error_code: 'quota_exceeded',
      request_id: refused.headers['x-request-id'],
    });
    // Only the error body's documented fields (retry_after_sec is one of them).
    for (const k of Object.keys(rb))
      expect(['ok', 'error_code', 'message', 'request_id', 'retry_after_sec']).toContain(k);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.headers['svc-cost']).toBe('0');
    await setPlan(capped.customerId, { daily_limit: 5, overage: false });
    expectResult(await redeem(capped.key, b3, k3));
  });

  test('SVC-Cost is 0 and the quota headers are unchanged on every refusal', async () => {
    const c = await createMerchant(t, { topup: { test: 1 } });
    expectResult(await redeem(c.key, { player_id: PLAYER, codes: [uniq()] }));
    for (const body of [
      { player_id: PLAYER, codes: [] },
      { player_id: PLAYER, uc: 60 },
      { player_id: 'x' },
    ]) {
      const res = await redeem(c.key, body);
      expect(res.statusCode).toBeGreaterThanOrEqual(400);
      expect(res.headers['svc-cost']).toBe('0');
      expect(res.headers['svc-quota-used']).toBe('1');
      expect(res.headers['svc-quota-remaining']).toBe('99');
      expect(res.headers['svc-balance-usd']).toBe('1');
    }
  });
});

describe('authentication and the burst limit come first', () => {
  test('no key + bad body / no Idempotency-Key / oversize body → 401 unauthorized', async () => {
    expectError(await send({ key: null, body: '{bad' }), 401, 'unauthorized', { identified: false });
    expectError(await send({ key: null, body: { player_id: 'x' }, idem: null }), 401, 'unauthorized', {
      identified: false,
    });
    expectError(await send({ key: null, body: ' '.repeat(300_000), idem: null }), 401, 'unauthorized', {
      identified: false,
    });
    expectError(await send({ key: 'rk_test_notakey', body: '{bad', idem: null }), 401, 'unauthorized', {
      identified: false,
    });
  });

  test('a key without the redeem scope → 403 scope_denied, before body and key checks', async () => {
    const ro = await createMerchant(t, { key: { scopes: ['read'] } });
    for (const s of [
      { body: '{bad', idem: null },
      { body: { player_id: PLAYER, codes: [uniq()] } },
      { body: ' '.repeat(300_000), idem: null },
    ]) {
      expectError(await send({ key: ro.key, ...s }), 403, 'scope_denied');
    }
  });

  test('a rate-limited request is 429 rate_limited whatever its body', async () => {
    const b = await createMerchant(t, { topup: { test: 1 } });
    for (let i = 0; i < 30; i++) {
      const res = await t.api.inject({
        method: 'POST',
        url: '/v1/redeem',
        headers: { ...bearer(b.key), 'idempotency-key': freshKey() },
        payload: '{bad',
      });
      expect(res.statusCode).toBe(400);
    }
    const res = await t.api.inject({
      method: 'POST',
      url: '/v1/redeem',
      headers: { ...bearer(b.key) },
      payload: '{bad',
    });
    const retry = expectError(res, 429, 'rate_limited', {
      extra: { retry_after_sec: expect.any(Number) },
    }) as unknown as {
      retry_after_sec: number;
    };
    expect(retry.retry_after_sec).toBeGreaterThanOrEqual(1);
    expect(res.headers['retry-after']).toBe(String(retry.retry_after_sec));
  });
});

describe('async', () => {
  test('a valid async redeem is answered 202 with a job_id, Location and SVC-Cost 0', async () => {
    const res = await redeem(m.key, { player_id: PLAYER, codes: [uniq()], async: true });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      job_id: expect.stringMatching(/^job_[0-9A-Za-z]{20,}$/),
      status: 'queued',
    });
    expect(res.headers.location).toBe(`/v1/jobs/${res.json().job_id}`);
    expect(res.headers['svc-cost']).toBe('0');
  });

  test('async with a uc or packs beyond the stock is still refused at once: 409 no_stock', async () => {
    expectError(await redeem(m.key, { player_id: PLAYER, uc: 8100, async: true }), 409, 'no_stock');
    expectError(await redeem(m.key, { player_id: PLAYER, packs: { 8100: 2 }, async: true }), 409, 'no_stock');
  });

  test('async true does not hide an earlier request error', async () => {
    expectError(await redeem(m.key, { player_id: '1', codes: [uniq()], async: true }), 400, 'bad_player');
    expectError(await redeem(m.key, { player_id: PLAYER, codes: [], async: true }), 400, 'empty');
    expectError(await redeem(m.key, { player_id: PLAYER, uc: 61, async: true }), 400, 'no_combo');
  });
});
