// Hostile requests (docs/reference/limits.md#hostile-requests, docs/reference/keys-and-modes.md#response-headers): handling cost grows linearly with the size of
// a request whatever its shape (no key needed to try), logs keep at most 512 characters of a URL,
// every answer of both listeners says `Cache-Control: no-store`, a request that does not arrive
// in time is `408 request_timeout`, and two header gaps an outside check found are closed.
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseRedeemRequest } from '../../src/core/redeem/request.ts';
import { redactQueryValues } from '../../src/logger.ts';
import {
  ADMIN_TOKEN,
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  type TestApp,
} from '../helpers/app.ts';
import { uniqueCode } from '../helpers/redeem.ts';

let t: TestApp; // the default listeners
let proxied: TestApp; // TRUST_PROXY set: X-Forwarded-For is parsed
let quick: TestApp; // REQUEST_TIMEOUT_MS=300, a slow sandbox code takes 700 ms
const urls: Record<'api' | 'admin' | 'proxied' | 'quick', string> = {} as never;

beforeAll(async () => {
  [t, proxied, quick] = await Promise.all([
    createTestApp({ jobWorker: false }),
    createTestApp({ jobWorker: false, env: { TRUST_PROXY: '127.0.0.1' } }),
    createTestApp({ jobWorker: false, sandboxSlowMs: 700, env: { REQUEST_TIMEOUT_MS: '300' } }),
  ]);
  t.api.get('/v1/__crash', async () => {
    throw new Error('boom in a test-only route');
  });
  urls.api = await t.api.listen({ host: '127.0.0.1', port: 0 });
  urls.admin = await t.admin.listen({ host: '127.0.0.1', port: 0 });
  urls.proxied = await proxied.api.listen({ host: '127.0.0.1', port: 0 });
  urls.quick = await quick.api.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  agent.destroy();
  await Promise.all([t?.close(), proxied?.close(), quick?.close()]);
});

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * One request over a kept-alive connection of a real listener; sent again once if the server
 * closed the kept-alive connection just as it was reused (Node's documented pattern).
 */
function send(
  base: string,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Answer> {
  return sendOnce(base, path, headers, method).catch((err: NodeJS.ErrnoException & { reused?: boolean }) => {
    if (err.reused && err.code === 'ECONNRESET') return sendOnce(base, path, headers, method);
    throw err;
  });
}

function sendOnce(
  base: string,
  path: string,
  headers: Record<string, string>,
  method: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const req = httpRequest({ host: url.hostname, port: url.port, path, method, headers, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', (err) => reject(Object.assign(err, { reused: req.reusedSocket })));
    req.end();
  });
}

/** Raw bytes on a new connection; resolves with everything the server sent before closing. */
function raw(base: string, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const socket = connect(Number(url.port), url.hostname, () => socket.write(bytes));
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => {
      received += d;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
  });
}

/** CPU time (µs, this process: server, client and database) of `times` requests. */
async function cpuOf(times: number, one: () => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < times; i++) await one();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

/**
 * How much more CPU requests of size 2n take than requests of size n: the least of several
 * alternating rounds of each, so a pause of the machine counts against neither. Linear handling
 * gives at most 2 (less, since every request has a fixed cost); quadratic handling gives about 4.
 */
async function growth(make: (n: number) => () => Promise<unknown>, n: number, times = 12): Promise<number> {
  const small = make(n);
  const large = make(2 * n);
  await small();
  await large();
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < 4; round++) {
    a.push(await cpuOf(times, small));
    b.push(await cpuOf(times, large));
  }
  return Math.min(...b) / Math.min(...a);
}

const LINEAR = 2.6;

describe('handling cost is linear in the request, with no key', () => {
  test('a run of `?` after /v1/health (public) and an admin path: the log redaction is linear', async () => {
    const health = (n: number) => async () => {
      const res = await send(urls.api, `/v1/health${'?'.repeat(n)}`);
      expect(res.status).toBe(200);
    };
    const admin = (n: number) => async () => {
      const res = await send(urls.admin, `/admin/v1/customers/1?${'?'.repeat(n)}`);
      expect(res.status).toBe(401);
    };
    const ratios = { health: await growth(health, 6_000), admin: await growth(admin, 6_000) };
    console.log('[hostile-input] cpu(2n)/cpu(n), ? runs:', ratios);
    expect(ratios.health).toBeLessThan(LINEAR);
    expect(ratios.admin).toBeLessThan(LINEAR);
  });

  test('other query shapes: `&=` runs, `?a` runs, one long value', async () => {
    const shapes: Record<string, (n: number) => string> = {
      ampEq: (n) => `/v1/health?${'&='.repeat(n / 2)}`,
      qa: (n) => `/v1/health${'?a'.repeat(n / 2)}`,
      value: (n) => `/v1/health?token=${'x'.repeat(n)}&=`,
      mixed: (n) => `/v1/health?${'a=?&'.repeat(n / 4)}`,
    };
    const ratios: Record<string, number> = {};
    for (const [name, path] of Object.entries(shapes)) {
      ratios[name] = await growth(
        (n) => async () => {
          const res = await send(urls.api, path(n));
          expect(res.status).toBe(200);
        },
        6_000,
      );
    }
    console.log('[hostile-input] cpu(2n)/cpu(n), query shapes:', ratios);
    for (const r of Object.values(ratios)) expect(r).toBeLessThan(LINEAR);
  });

  test('long paths: an unknown path (404) and a job id far over any id (401 without a key)', async () => {
    const unknown = (n: number) => async () => {
      const res = await send(urls.api, `/v1/${'a'.repeat(n)}`);
      expect(res.status).toBe(404);
    };
    const job = (n: number) => async () => {
      const res = await send(urls.api, `/v1/jobs/${'%41'.repeat(n / 3)}`);
      expect(res.status).toBe(401);
    };
    const ratios = { unknown: await growth(unknown, 6_000), job: await growth(job, 6_000) };
    console.log('[hostile-input] cpu(2n)/cpu(n), long paths:', ratios);
    expect(ratios.unknown).toBeLessThan(LINEAR);
    expect(ratios.job).toBeLessThan(LINEAR);
  });

  test('many headers, and a long X-Forwarded-For through a trusted proxy', async () => {
    const many = (n: number) => {
      const headers: Record<string, string> = {};
      for (let i = 0; i < n; i++) headers[`x-h${i}`] = 'v';
      return async () => {
        const res = await send(urls.api, '/v1/me', headers);
        expect(res.status, `${n} ${res.body}`).toBe(401);
      };
    };
    const forwarded = (n: number) => {
      const xff = Array.from({ length: n }, () => '127.0.0.1').join(',');
      return async () => {
        const res = await send(urls.proxied, '/v1/health', { 'x-forwarded-for': xff });
        expect(res.status).toBe(200);
      };
    };
    // Under 1000 headers: Node keeps the first 2000 header lines' keys and values (maxHeadersCount)
    // and would drop the client's Host, which it requires.
    const ratios = { headers: await growth(many, 400), forwarded: await growth(forwarded, 600) };
    console.log('[hostile-input] cpu(2n)/cpu(n), headers:', ratios);
    expect(ratios.headers).toBeLessThan(LINEAR);
    expect(ratios.forwarded).toBeLessThan(LINEAR);
  });

  test('a redeem body: a code with a long run of spaces inside is validated in linear time', async () => {
    const body = (n: number) => ({ player_id: '5123456789', codes: [`x${' '.repeat(n)}x`] });
    const validate = (n: number) => {
      const b = body(n);
      return async () => {
        expect(() => parseRedeemRequest(b)).toThrow(/codes\[0\]/);
      };
    };
    // `/^ +| +$/` took 1.4 s on 40,000 spaces, and 4 times that on twice as many.
    const ratio = await growth(validate, 40_000, 4);
    console.log('[hostile-input] cpu(2n)/cpu(n), spaces in a code:', ratio);
    expect(ratio).toBeLessThan(LINEAR);
    const m = await createMerchant(t);
    const res = await t.api.inject({
      method: 'POST',
      url: '/v1/redeem',
      headers: { ...bearer(m.key), 'idempotency-key': 'spaces-1', 'content-type': 'application/json' },
      payload: body(200_000),
    });
    expect([res.statusCode, res.json().error_code]).toEqual([400, 'bad_codes']);
  });

  test('the redaction itself: linear work, 512 characters at most, values hidden', () => {
    // The old expression took about 180 ms on this input; the cut keeps the log line short.
    const hostile = `/v1/health${'?'.repeat(16_000)}`;
    expect(redactQueryValues(hostile)).toHaveLength(512);
    expect(redactQueryValues(hostile)!.endsWith('…')).toBe(true);
    expect(redactQueryValues('/v1/me?api_key=rk_test_x&token=t#frag')).toBe(
      '/v1/me?api_key=[redacted]&token=[redacted]#frag',
    );
    expect(redactQueryValues('/a?x=1?y=2&&z&w=')).toBe('/a?x=[redacted]&&z&w=[redacted]');
    // A value is never shown in part when the cut falls inside it.
    const cut = redactQueryValues(`/p?a=${'s'.repeat(1000)}&b=${'t'.repeat(1000)}`)!;
    expect(cut).toBe('/p?a=[redacted]&b=[redacted]');
    expect(redactQueryValues(`/p?${'k'.repeat(600)}=secret`)).not.toContain('secret');
  });

  test('the log keeps at most 512 characters of a hostile URL, with its values redacted', async () => {
    const res = await send(urls.api, `/v1/health?token=${'s'.repeat(3000)}&${'?'.repeat(8000)}`);
    expect(res.status).toBe(200);
    const id = res.headers['x-request-id'];
    const lines = t.logs
      .join('')
      .split('\n')
      .filter((l) => l.includes(String(id)))
      .map((l) => JSON.parse(l) as { req?: { url: string } });
    const logged = lines.filter((l) => l.req).map((l) => l.req!.url);
    expect(logged.length).toBeGreaterThan(0);
    for (const url of logged) {
      expect(url.length).toBeLessThanOrEqual(512);
      expect(url.startsWith('/v1/health?token=[redacted]&???')).toBe(true);
      expect(url).not.toContain('sss');
    }
  });
});

describe('Cache-Control: no-store on every answer of both listeners', () => {
  test('public: 200, 401, 403, 404, 405, 400 bad JSON, 413, a bad URL, 500', async () => {
    const reader = await createMerchant(t, { key: { scopes: ['read'] } });
    const m = await createMerchant(t);
    const answers = await Promise.all([
      t.api.inject({ method: 'GET', url: '/v1/health' }),
      t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(m.key) }),
      t.api.inject({ method: 'GET', url: '/v1/me' }),
      t.api.inject({ method: 'POST', url: '/v1/webhook', headers: bearer(reader.key) }),
      t.api.inject({ method: 'GET', url: '/v1/nope' }),
      t.api.inject({ method: 'DELETE', url: '/v1/me' }),
      t.api.inject({
        method: 'POST',
        url: '/v1/webhook',
        headers: { ...bearer(m.key), 'content-type': 'application/json' },
        payload: '{bad',
      }),
      t.api.inject({
        method: 'POST',
        url: '/v1/webhook',
        headers: { ...bearer(m.key), 'content-type': 'application/json' },
        payload: `"${'x'.repeat(300_000)}"`,
      }),
      t.api.inject({ method: 'GET', url: '/v1/%E0%A4%A' }),
      t.api.inject({ method: 'GET', url: '/v1/__crash' }),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 401, 403, 404, 405, 400, 413, 400, 500]);
    for (const a of answers) {
      expect(a.headers['cache-control'], `${a.statusCode} ${a.body}`).toBe('no-store');
      expect(a.headers['x-request-id']).toBe(a.json().request_id);
    }
  });

  test('admin: 200, 401, 404, 405, 400; and the answers Node gives before Fastify (431-like 400)', async () => {
    const answers = await Promise.all([
      t.admin.inject({ method: 'GET', url: '/admin/v1/customers/1', headers: bearer(ADMIN_TOKEN) }),
      t.admin.inject({ method: 'GET', url: '/admin/v1/customers/1' }),
      t.admin.inject({ method: 'GET', url: '/admin/v1/nope', headers: bearer(ADMIN_TOKEN) }),
      t.admin.inject({ method: 'PATCH', url: '/admin/v1/customers', headers: bearer(ADMIN_TOKEN) }),
      t.admin.inject({
        method: 'POST',
        url: '/admin/v1/customers',
        headers: { ...bearer(ADMIN_TOKEN), 'content-type': 'application/json' },
        payload: '{bad',
      }),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([200, 401, 404, 405, 400]);
    for (const a of answers) expect(a.headers['cache-control'], String(a.statusCode)).toBe('no-store');

    for (const base of [urls.api, urls.admin]) {
      const overflow = await raw(
        base,
        `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      );
      expect(overflow).toMatch(/^HTTP\/1\.1 400 /);
      expect(overflow).toMatch(/\r\nCache-Control: no-store\r\n/i);
      const garbage = await raw(base, 'NOT HTTP AT ALL\r\n\r\n');
      expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
      expect(garbage).toMatch(/\r\nCache-Control: no-store\r\n/i);
    }
  });
});

describe('408 request_timeout (REQUEST_TIMEOUT_MS=300 here; 30 s by default)', () => {
  const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

  test('a body that does not arrive: 408 with the error body, no-store, the connection closed, nothing taken', async () => {
    const m = await createMerchant(quick);
    const response = await raw(
      urls.quick,
      'POST /v1/redeem HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n' +
        `Authorization: Bearer ${m.key}\r\nIdempotency-Key: slow-body-1\r\n\r\n{"player_id":`,
    );
    expect(response).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(response).toMatch(/\r\nCache-Control: no-store\r\n/i);
    expect(response).toMatch(/\r\nConnection: close\r\n/i);
    expect(response).toMatch(/\r\nSVC-Version: 1\.0\.0\r\n/i);
    const body = bodyOf(response);
    expect(body).toEqual({
      ok: false,
      error_code: 'request_timeout',
      message: expect.any(String),
      request_id: expect.stringMatching(/^req_/),
    });
    expect(response).toContain(`X-Request-Id: ${body.request_id}\r\n`);
    const jobs = await quick.ctx.db.query('select 1 from jobs where customer_id = $1', [m.customerId]);
    const keys = await quick.ctx.db.query('select 1 from idempotency_keys where customer_id = $1', [
      m.customerId,
    ]);
    expect([jobs.rowCount, keys.rowCount]).toEqual([0, 0]);
  });

  test('headers that do not arrive: 408 too', async () => {
    const response = await raw(urls.quick, 'GET /v1/health HTTP/1.1\r\nHost: x\r\n');
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
    expect(bodyOf(response).error_code).toBe('request_timeout');
  });

  test('the timeout bounds receiving a request, not answering it: a redeem slower than it is answered', async () => {
    const m = await createMerchant(quick);
    const code = uniqueCode('SLOW');
    const res = await fetch(`${urls.quick}/v1/redeem`, {
      method: 'POST',
      headers: { ...bearer(m.key), 'idempotency-key': 'slow-answer-1', 'content-type': 'application/json' },
      body: JSON.stringify({ player_id: '5123456789', codes: [code] }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).codes).toEqual([expect.objectContaining({ code, status: 'activated' })]);
  });
});

describe('header gaps', () => {
  const quotaHeaders = (h: Record<string, unknown>) => ({
    used: h['svc-quota-used'],
    remaining: h['svc-quota-remaining'],
    balance: h['svc-balance-usd'],
  });

  test('GET /v1/jobs/{id} with an undecodable or over-long id: 404 not_found after authentication, with the quota headers', async () => {
    const m = await createMerchant(t, { topup: { test: '2.5' } });
    const reader = await createMerchant(t, { key: { scopes: [] } });
    for (const id of ['%zz', '%E0%A4%A', `job_${'A'.repeat(200)}`, 'x'.repeat(5000), 'job_%ff%fe']) {
      const res = await t.api.inject({ method: 'GET', url: `/v1/jobs/${id}?x=1`, headers: bearer(m.key) });
      expect({ status: res.statusCode, body: res.json() }, id).toEqual({
        status: 404,
        body: {
          ok: false,
          error_code: 'not_found',
          message: 'unknown job',
          request_id: res.headers['x-request-id'],
        },
      });
      expect(quotaHeaders(res.headers), id).toEqual({ used: '0', remaining: '100', balance: '2.5' });
      // The same as an id that could be a job's and is not.
      const plain = await t.api.inject({
        method: 'GET',
        url: '/v1/jobs/job_unknown',
        headers: bearer(m.key),
      });
      expect(plain.json().error_code).toBe('not_found');
      expect(quotaHeaders(plain.headers)).toEqual(quotaHeaders(res.headers));

      // Authentication still comes first: no key 401 without quota headers, no scope 403 with them.
      const anonymous = await t.api.inject({ method: 'GET', url: `/v1/jobs/${id}` });
      expect([anonymous.statusCode, anonymous.json().error_code]).toEqual([401, 'unauthorized']);
      expect(anonymous.headers['svc-quota-used']).toBeUndefined();
      const unscoped = await t.api.inject({
        method: 'GET',
        url: `/v1/jobs/${id}`,
        headers: bearer(reader.key),
      });
      expect([unscoped.statusCode, unscoped.json().error_code]).toEqual([403, 'scope_denied']);
      expect(unscoped.headers['svc-quota-used']).toBe('0');
    }
    // The log shows the URL as sent, not the routed stand-in.
    const res = await t.api.inject({ method: 'GET', url: '/v1/jobs/%zz', headers: bearer(m.key) });
    const logged = t.logs
      .join('')
      .split('\n')
      .filter((l) => l.includes(String(res.headers['x-request-id'])) && l.includes('"req"'));
    expect(logged.length).toBeGreaterThan(0);
    for (const l of logged) expect(JSON.parse(l).req.url).toBe('/v1/jobs/%zz');
    // Another method on such a URL is a 405, as on any job id.
    const post = await t.api.inject({ method: 'POST', url: '/v1/jobs/%zz', headers: bearer(m.key) });
    expect(post.statusCode).toBe(405);
  });

  test('POST /v1/redeem refused after identification (403 scope_denied, unknown_customer, ip_denied) carries RateLimit-*, not counted', async () => {
    const owner = await createMerchant(t);
    // Two accepted redeems of the owner's customer, then a read-only key of the same customer.
    const ok = async (key: string) =>
      t.api.inject({
        method: 'POST',
        url: '/v1/redeem',
        headers: {
          ...bearer(key),
          'idempotency-key': `gap-${Math.random()}`,
          'content-type': 'application/json',
        },
        payload: { player_id: '5123456789', codes: [uniqueCode()] },
      });
    const first = await ok(owner.key);
    expect(first.headers['ratelimit-remaining']).toBe('29');
    const reader = await createMerchant(t, { key: { scopes: ['read'] } });
    const fenced = await createMerchant(t, { key: { allowed_ips: ['10.9.9.9'] } });
    const disabled = await createMerchant(t);
    await adminCall(t, 'POST', `/admin/v1/customers/${disabled.customerId}/disable`);

    const cases: [string, string][] = [
      [reader.key, 'scope_denied'],
      [fenced.key, 'ip_denied'],
      [disabled.key, 'unknown_customer'],
    ];
    for (const [key, code] of cases) {
      for (let i = 0; i < 2; i++) {
        const res = await ok(key);
        expect([res.statusCode, res.json().error_code]).toEqual([403, code]);
        // Not counted: the window stays empty however many are refused.
        expect(res.headers, code).toMatchObject({
          'ratelimit-limit': '30',
          'ratelimit-remaining': '30',
          'ratelimit-reset': '0',
          'svc-quota-used': expect.any(String),
        });
      }
    }
    // A key with requests in its window reports them on a refusal too: the owner's key, refused
    // by the customer being disabled after its first redeem.
    await adminCall(t, 'POST', `/admin/v1/customers/${owner.customerId}/disable`);
    const after = await ok(owner.key);
    expect([after.statusCode, after.json().error_code]).toEqual([403, 'unknown_customer']);
    expect(after.headers['ratelimit-remaining']).toBe('29');
    expect(Number(after.headers['ratelimit-reset'])).toBeGreaterThan(0);
    // 401s stay bare: a dead key learns nothing.
    const anonymous = await t.api.inject({ method: 'POST', url: '/v1/redeem' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['ratelimit-limit']).toBeUndefined();
  });
});
