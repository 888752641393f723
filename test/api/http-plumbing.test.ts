// What every public response goes through (docs/reference/keys-and-modes.md#conventions, docs/reference/keys-and-modes.md#response-headers): request ids, the SVC-
// headers, the error body for 404, 405, bad JSON, oversize bodies (also chunked) and crashes.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  ADMIN_TOKEN,
  bearer,
  createMerchant,
  createTestApp,
  type Merchant,
  type TestApp,
} from '../helpers/app.ts';

const REQUEST_ID = /^req_[0-9A-Za-z]{20,}$/;
const QUOTA_HEADERS = ['svc-quota-used', 'svc-quota-remaining', 'svc-balance-usd'] as const;
const LIMIT = 262_144;
const SECRET = 'password=hunter2 at /srv/app/src/secret-module.ts:42';

interface Answer {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/** The headers every public response carries, and the quota headers iff a key was identified. */
function expectCommonHeaders(res: Answer, opts: { identified: boolean }) {
  expect(res.headers['x-request-id']).toMatch(REQUEST_ID);
  expect(res.headers['svc-version']).toBe('1.0.0');
  expect(res.headers['svc-cost']).toBe('0');
  expect(res.headers['svc-idempotent-replay']).toBe('false');
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  for (const h of QUOTA_HEADERS) {
    if (opts.identified) expect(res.headers[h], h).toMatch(/^\d+(\.\d{1,6})?$/);
    else expect(res.headers[h], h).toBeUndefined();
  }
}

/** The whole error answer: status, exactly the error body, and the common headers. */
function expectError(res: Answer, status: number, code: string, opts: { identified: boolean }) {
  const body = JSON.parse(res.body);
  expect({ status: res.statusCode, body }).toEqual({
    status,
    body: {
      ok: false,
      error_code: code,
      message: expect.any(String),
      request_id: res.headers['x-request-id'],
    },
  });
  expect(body.message.length).toBeGreaterThan(0);
  expectCommonHeaders(res, opts);
  return body as { message: string; request_id: string };
}

/** A JSON object body of exactly `bytes` bytes. */
const jsonOfSize = (bytes: number) => `{"a":"${'x'.repeat(bytes - 8)}"}`;

let t: TestApp;
let m: Merchant;
beforeAll(async () => {
  t = await createTestApp();
  // Test-only routes, added before the app is ready: a crash, and echoes of the parsed body
  // (one behind a key, one open) so body handling can be checked before POST /v1/redeem exists.
  t.api.get('/v1/__crash', async () => {
    throw new Error(SECRET);
  });
  t.api.get('/v1/__crash_string', async () => {
    throw SECRET;
  });
  t.api.get('/v1/__crash_keyed', { config: { auth: 'any' } }, async () => {
    throw new TypeError(`Cannot read properties of undefined (reading '${SECRET}')`);
  });
  t.api.get('/v1/__crash_db', async () => {
    await t.ctx.db.query('select * from no_such_table_secret_name');
    return { ok: true };
  });
  const echo = async (request: { id: string; body: unknown }) => ({
    ok: true,
    request_id: request.id,
    bytes: request.body === undefined ? 0 : Buffer.byteLength(JSON.stringify(request.body)),
  });
  t.api.post('/v1/__echo', { config: { auth: 'any' } }, echo);
  t.api.post('/v1/__open_echo', echo);
  m = await createMerchant(t, { topup: { test: '12.5' } });
});
afterAll(() => t.close());

describe('request ids and headers on every response', () => {
  test('200: X-Request-Id equals request_id, SVC headers, quota headers', async () => {
    const res = await t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(m.key) });
    expect(res.statusCode).toBe(200);
    expect(res.json().request_id).toBe(res.headers['x-request-id']);
    expectCommonHeaders(res, { identified: true });
    expect(res.headers['svc-quota-used']).toBe('0');
    expect(res.headers['svc-quota-remaining']).toBe('100');
    expect(res.headers['svc-balance-usd']).toBe('12.5');
  });

  test('request ids are fresh on every request and a client-sent X-Request-Id is not echoed', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const res = await t.api.inject({
        method: 'GET',
        url: '/v1/me',
        headers: { ...bearer(m.key), 'x-request-id': 'req_chosen_by_the_client_000000' },
      });
      expect(res.headers['x-request-id']).not.toBe('req_chosen_by_the_client_000000');
      expect(res.headers['x-request-id']).toMatch(REQUEST_ID);
      ids.add(String(res.headers['x-request-id']));
    }
    expect(ids.size).toBe(20);
  });

  test('health: common headers, no quota headers (no key)', async () => {
    const res = await t.api.inject({ method: 'GET', url: '/v1/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json().request_id).toBe(res.headers['x-request-id']);
    expectCommonHeaders(res, { identified: false });
  });

  test('health with a key still reports no account (the route does not identify keys)', async () => {
    const res = await t.api.inject({ method: 'GET', url: '/v1/health', headers: bearer(m.key) });
    expect(res.statusCode).toBe(200);
    expectCommonHeaders(res, { identified: false });
  });

  test('money headers: at most 6 decimals, no trailing zeros', async () => {
    const cases: [string | undefined, string][] = [
      [undefined, '0'],
      ['12.5', '12.5'],
      ['0.0035', '0.0035'],
      ['100', '100'],
      ['0.000001', '0.000001'],
      ['7.10', '7.1'],
    ];
    for (const [usd, header] of cases) {
      const merchant = await createMerchant(t, usd === undefined ? {} : { topup: { test: usd } });
      const res = await t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(merchant.key) });
      expect(res.headers['svc-balance-usd'], String(usd)).toBe(header);
      expect(res.json().balance_usd).toBe(Number(header));
    }
  });
});

describe('404 not_found and 405 method_not_allowed (routing before authentication)', () => {
  test.each([
    ['GET', '/'],
    ['GET', '/nope'],
    ['GET', '/v1'],
    ['GET', '/v1/'],
    ['GET', '/v1/me/'],
    ['GET', '/v1/me/extra'],
    ['GET', '/V1/ME'],
    ['GET', '/v2/me'],
    ['POST', '/v1/nope'],
    ['DELETE', '/v1/jobs'],
    ['GET', '/admin/v1/customers'],
  ])('%s %s → 404, with or without a key, no quota headers', async (method, url) => {
    for (const headers of [{}, bearer(m.key), { authorization: 'Bearer nonsense' }]) {
      const res = await t.api.inject({ method: method as 'GET', url, headers });
      expectError(res, 404, 'not_found', { identified: false });
      expect(res.headers.allow).toBeUndefined();
    }
  });

  test('an unknown path with a query string is 404', async () => {
    const res = await t.api.inject({ method: 'GET', url: '/nope?x=1&y=%00' });
    expectError(res, 404, 'not_found', { identified: false });
  });

  test.each(['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'])(
    '%s /v1/me → 405 with Allow, with or without a key',
    async (method) => {
      for (const headers of [{}, bearer(m.key)]) {
        const res = await t.api.inject({ method: method as 'POST', url: '/v1/me', headers });
        expectError(res, 405, 'method_not_allowed', { identified: false });
        expect(res.headers.allow).toBe('GET, HEAD');
      }
    },
  );

  test('POST /v1/health → 405 with Allow', async () => {
    const res = await t.api.inject({ method: 'POST', url: '/v1/health', payload: {} });
    expectError(res, 405, 'method_not_allowed', { identified: false });
    expect(res.headers.allow).toBe('GET, HEAD');
  });

  test('a body does not change the routing answer: malformed or huge, 404 and 405 stay', async () => {
    const bodies = ['{not json', jsonOfSize(LIMIT + 1), `[${'1,'.repeat(200_000)}1]`];
    for (const payload of bodies) {
      const headers = { ...bearer(m.key), 'content-type': 'application/json' };
      expectError(
        await t.api.inject({ method: 'POST', url: '/v1/nope', payload, headers }),
        404,
        'not_found',
        { identified: false },
      );
      const res = await t.api.inject({ method: 'POST', url: '/v1/me', payload, headers });
      expectError(res, 405, 'method_not_allowed', { identified: false });
      expect(res.headers.allow).toBe('GET, HEAD');
    }
  });
});

describe('400 bad_request for malformed JSON', () => {
  test.each([
    ['truncated object', '{"a": 1'],
    ['not JSON at all', 'hello'],
    ['single quotes', "{'a': 1}"],
    ['trailing comma', '{"a": 1,}'],
    ['two documents', '{"a":1}{"b":2}'],
    ['NaN', '{"a": NaN}'],
    ['a lone brace', '{'],
    ['prototype pollution', '{"__proto__": {"admin": true}}'],
    ['constructor pollution', '{"constructor": {"prototype": {"admin": true}}}'],
  ])('%s', async (_name, payload) => {
    for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) {
      const res = await t.api.inject({
        method: 'POST',
        url: '/v1/__echo',
        payload,
        headers: { ...bearer(m.key), 'content-type': type },
      });
      expectError(res, 400, 'bad_request', { identified: true });
    }
  });

  test('valid JSON of any content type is parsed (curl -d sends a form type)', async () => {
    for (const type of ['application/json', 'application/x-www-form-urlencoded', 'text/plain']) {
      const res = await t.api.inject({
        method: 'POST',
        url: '/v1/__echo',
        payload: '{"a":1}',
        headers: { ...bearer(m.key), 'content-type': type },
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ ok: true, request_id: res.headers['x-request-id'], bytes: 7 });
    }
  });

  test('without a key the same malformed body is 401 (authentication first)', async () => {
    const res = await t.api.inject({
      method: 'POST',
      url: '/v1/__echo',
      payload: '{"a":',
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 401, 'unauthorized', { identified: false });
  });
});

describe('413 payload_too_large (262,144 bytes)', () => {
  const post = (payload: string, headers: Record<string, string> = bearer(m.key), url = '/v1/__echo') =>
    t.api.inject({
      method: 'POST',
      url,
      payload,
      headers: { 'content-type': 'application/json', ...headers },
    });

  test('exactly 262,144 bytes is accepted', async () => {
    const res = await post(jsonOfSize(LIMIT));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, request_id: res.headers['x-request-id'], bytes: LIMIT });
    expectCommonHeaders(res, { identified: true });
  });

  test('262,145 bytes is 413 with the error body and the quota headers of the key', async () => {
    const res = await post(jsonOfSize(LIMIT + 1));
    expectError(res, 413, 'payload_too_large', { identified: true });
    expect(res.headers['svc-balance-usd']).toBe('12.5');
  });

  test('a multi-byte body is measured in bytes, not characters', async () => {
    // 131,073 two-byte characters: 262,146 + 8 bytes, but far fewer characters than the limit.
    const res = await post(`{"a":"${'é'.repeat(131_073)}"}`);
    expectError(res, 413, 'payload_too_large', { identified: true });
  });

  test('a much larger body and a body that is not even JSON are 413 too', async () => {
    expectError(await post(jsonOfSize(5 * LIMIT)), 413, 'payload_too_large', { identified: true });
    expectError(await post('x'.repeat(LIMIT + 1)), 413, 'payload_too_large', { identified: true });
  });

  test('on a route without a key: 413 without quota headers', async () => {
    const res = await post(jsonOfSize(LIMIT + 1), {}, '/v1/__open_echo');
    expectError(res, 413, 'payload_too_large', { identified: false });
    expect((await post(jsonOfSize(LIMIT), {}, '/v1/__open_echo')).statusCode).toBe(200);
  });

  describe('over a real socket', () => {
    let base: string;
    beforeAll(async () => {
      await t.api.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(t.api.server.address() as AddressInfo).port}`;
    });

    /** POSTs `bytes` of JSON with Transfer-Encoding: chunked, pausing between chunks. */
    function chunkedPost(path: string, bytes: number, headers: Record<string, string>): Promise<Answer> {
      return new Promise((resolve, reject) => {
        const req = http.request(`${base}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', ...headers },
        });
        let answered = false;
        req.on('response', (res) => {
          answered = true;
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d) => {
            body += d;
          });
          res.on('end', () => resolve({ statusCode: res.statusCode!, headers: res.headers, body }));
        });
        // The server may close the socket after answering 413 while we are still writing.
        req.on('error', (err) => {
          if (!answered) reject(err);
        });
        const text = jsonOfSize(bytes);
        let offset = 0;
        const writeMore = () => {
          while (offset < text.length && !answered) {
            const chunk = text.slice(offset, offset + 8192);
            offset += chunk.length;
            if (!req.write(chunk)) return void req.once('drain', writeMore);
          }
          if (!answered) req.end();
        };
        writeMore();
      });
    }

    test('a chunked body over the limit is 413 with the error body', async () => {
      const res = await chunkedPost('/v1/__echo', LIMIT + 1, bearer(m.key));
      expectError(res, 413, 'payload_too_large', { identified: true });
      const big = await chunkedPost('/v1/__echo', 4 * LIMIT, bearer(m.key));
      expectError(big, 413, 'payload_too_large', { identified: true });
    });

    test('a chunked body of exactly the limit is accepted', async () => {
      const res = await chunkedPost('/v1/__echo', LIMIT, bearer(m.key));
      expect(res.statusCode).toBe(200);
      expect(JSON.parse(res.body)).toEqual({
        ok: true,
        request_id: res.headers['x-request-id'],
        bytes: LIMIT,
      });
    });

    test('a chunked oversize body without a key is 401 (authentication first)', async () => {
      const res = await chunkedPost('/v1/__echo', 2 * LIMIT, {});
      expectError(res, 401, 'unauthorized', { identified: false });
    });

    /** Sends raw bytes and parses the one HTTP answer. */
    function rawRequest(bytes: string | Buffer): Promise<Answer> {
      const { port } = new URL(base);
      return new Promise((done, fail) => {
        const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(bytes));
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (d) => {
          text += d;
        });
        socket.on('error', fail);
        socket.on('close', () => {
          const [head = '', body = ''] = text.split('\r\n\r\n');
          const [statusLine = '', ...lines] = head.split('\r\n');
          const headers: Answer['headers'] = {};
          for (const line of lines) {
            const i = line.indexOf(':');
            headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
          }
          done({ statusCode: Number(statusLine.split(' ')[1]), headers, body });
        });
      });
    }

    test('an Authorization header of 10,000 characters is a plain 401 over a socket', async () => {
      const res = await rawRequest(
        `GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'A'.repeat(10_000)}\r\nConnection: close\r\n\r\n`,
      );
      expectError(res, 401, 'unauthorized', { identified: false });
    });

    test('headers over the parser limit (16 KB) get the error body', async () => {
      const res = await rawRequest(
        `GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'A'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
      );
      expectError(res, 400, 'bad_request', { identified: false });
    });

    test('bytes that are not HTTP, or a bad Content-Length, get the error body', async () => {
      expectError(await rawRequest('HELLO\r\n\r\n'), 400, 'bad_request', { identified: false });
      expectError(
        await rawRequest('POST /v1/__echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'),
        400,
        'bad_request',
        { identified: false },
      );
    });

    test('non-ASCII bytes in the Authorization header are a plain 401', async () => {
      const res = await rawRequest(
        Buffer.concat([
          Buffer.from('GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer '),
          Buffer.from(`${m.key.slice(0, -2)}é`, 'utf8'),
          Buffer.from('\r\nConnection: close\r\n\r\n'),
        ]),
      );
      expectError(res, 401, 'unauthorized', { identified: false });
    });

    test('a URL that cannot be decoded gets the error body, over a socket and by inject', async () => {
      expectError(
        await rawRequest('GET /v1/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
        400,
        'bad_request',
        { identified: false },
      );
      expectError(await t.api.inject({ method: 'GET', url: '/v1/%E0%A4%A' }), 400, 'bad_request', {
        identified: false,
      });
    });

    test('a Content-Length over the limit is refused with 413 and the error body', async () => {
      const res = await fetch(`${base}/v1/__echo`, {
        method: 'POST',
        headers: { ...bearer(m.key), 'content-type': 'application/json' },
        body: jsonOfSize(LIMIT + 1),
      });
      const answer: Answer = {
        statusCode: res.status,
        headers: Object.fromEntries(res.headers),
        body: await res.text(),
      };
      expectError(answer, 413, 'payload_too_large', { identified: true });
    });
  });
});

describe('500 internal', () => {
  test.each(['/v1/__crash', '/v1/__crash_string', '/v1/__crash_db'])(
    '%s: the generic error body, no stack, no detail',
    async (url) => {
      const res = await t.api.inject({ method: 'GET', url });
      const body = expectError(res, 500, 'internal', { identified: false });
      expect(Object.keys(JSON.parse(res.body)).sort()).toEqual(['error_code', 'message', 'ok', 'request_id']);
      for (const leak of ['hunter2', 'secret', 'password', '.ts', 'Error', 'at ', 'no_such_table', 'stack']) {
        expect(res.body).not.toContain(leak);
      }
      expect(body.message).toBe('internal error');
    },
  );

  test('a crash after identification keeps the error body and carries the quota headers', async () => {
    const res = await t.api.inject({ method: 'GET', url: '/v1/__crash_keyed', headers: bearer(m.key) });
    expectError(res, 500, 'internal', { identified: true });
    expect(res.body).not.toContain('hunter2');
    expect(res.body).not.toContain('TypeError');
  });
});

// Every method Node can parse on a known path is a 405 with Allow, and a path
// id longer than the router takes is answered as any unknown id (401 without a key, 404 with one).
describe('routing answers what the document says', () => {
  test.each(['TRACE', 'PROPFIND', 'MKCOL', 'PURGE', 'LINK', 'QUERY', 'SEARCH'])(
    '%s on a known path → 405 with Allow; on an unknown path → 404',
    async (method) => {
      const res = await t.api.inject({ method: method as 'GET', url: '/v1/me', headers: bearer(m.key) });
      expectError(res, 405, 'method_not_allowed', { identified: false });
      expect(res.headers.allow).toBe('GET, HEAD');
      const admin = await t.admin.inject({ method: method as 'GET', url: '/admin/v1/customers' });
      expect([admin.statusCode, admin.json().error_code]).toEqual([405, 'method_not_allowed']);
      expect(admin.headers.allow).toBe('POST, GET, HEAD');
      const unknown = await t.api.inject({ method: method as 'GET', url: '/v1/nope' });
      expectError(unknown, 404, 'not_found', { identified: false });
    },
  );

  test.each(['/v1/events/', '/v1/jobs/'])(
    'a %s{id} over 100 characters: 401 without a key, 404 with one',
    async (prefix) => {
      for (const id of [`evt_${'a'.repeat(120)}`, 'x'.repeat(5000), '%zz']) {
        const anonymous = await t.api.inject({ method: 'GET', url: `${prefix}${id}` });
        expectError(anonymous, 401, 'unauthorized', { identified: false });
        const res = await t.api.inject({ method: 'GET', url: `${prefix}${id}?x=1`, headers: bearer(m.key) });
        expectError(res, 404, 'not_found', { identified: true });
      }
    },
  );

  test('POST /v1/events/{long id}/redeliver: 401 without a key, 404 with one', async () => {
    const url = `/v1/events/evt_${'b'.repeat(150)}/redeliver`;
    expectError(await t.api.inject({ method: 'POST', url }), 401, 'unauthorized', { identified: false });
    expectError(await t.api.inject({ method: 'POST', url, headers: bearer(m.key) }), 404, 'not_found', {
      identified: true,
    });
  });

  test('admin routes with a path id: a long id is 401 without a token, 404 with one', async () => {
    for (const url of [
      `/admin/v1/events/evt_${'c'.repeat(150)}`,
      `/admin/v1/jobs/job_${'d'.repeat(150)}`,
      `/admin/v1/customers/${'9'.repeat(150)}`,
      `/admin/v1/keys/key_${'e'.repeat(150)}/revoke`,
    ]) {
      const method = url.endsWith('revoke') ? 'POST' : 'GET';
      const anonymous = await t.admin.inject({ method, url });
      expect([anonymous.statusCode, anonymous.json().error_code], url).toEqual([401, 'unauthorized']);
      const res = await t.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect([res.statusCode, res.json().error_code], url).toEqual([404, 'not_found']);
    }
  });
});
