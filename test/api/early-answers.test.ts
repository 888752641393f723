// Answers given before a route runs: a body that never arrives is 408 whatever the key (none, a
// wrong one, a good one), and the answers Node's HTTP server gives of its own (a request without
// Host) carry the error body and a request id like every other answer.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';

let quick: TestApp; // REQUEST_TIMEOUT_MS=300
const urls: Record<'api' | 'admin', string> = {} as never;

beforeAll(async () => {
  quick = await createTestApp({ jobWorker: false, env: { REQUEST_TIMEOUT_MS: '300' } });
  urls.api = await quick.api.listen({ host: '127.0.0.1', port: 0 });
  urls.admin = await quick.admin.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await quick?.close();
});

/** Raw bytes on a new connection: everything the server sent, and when its first byte came. */
function raw(base: string, bytes: string): Promise<{ text: string; firstByteMs: number }> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const started = performance.now();
    let firstByteMs = -1;
    const socket = connect(Number(url.port), url.hostname, () => socket.write(bytes));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => {
      if (firstByteMs < 0) firstByteMs = performance.now() - started;
      text += d;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ text, firstByteMs }));
  });
}

const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));
const statusOf = (response: string) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(response)?.[1]);

describe('a body that never arrives is 408 request_timeout, whatever the key', () => {
  test.each([
    ['no key', urls, 'api', '/v1/redeem', ''],
    [
      'a wrong key',
      urls,
      'api',
      '/v1/redeem',
      'Authorization: Bearer rk_test_wrongwrongwrongwrongwrongwrong\r\n',
    ],
    ['no admin token', urls, 'admin', '/admin/v1/customers', ''],
    ['a wrong admin token', urls, 'admin', '/admin/v1/customers', 'Authorization: Bearer nope\r\n'],
  ] as const)('%s', async (_what, all, listener, path, auth) => {
    const { text } = await raw(
      all[listener],
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n` +
        `${auth}Idempotency-Key: stalled-1\r\n\r\n{"player_id":`,
    );
    expect(statusOf(text), text).toBe(408);
    const body = bodyOf(text);
    expect(body).toEqual({
      ok: false,
      error_code: 'request_timeout',
      message: expect.any(String),
      request_id: expect.stringMatching(/^req_/),
    });
    expect(text).toContain(`X-Request-Id: ${body.request_id}\r\n`);
    expect(text).toMatch(/\r\nCache-Control: no-store\r\n/i);
  });

  test('with a good key too (and nothing taken)', async () => {
    const m = await createMerchant(quick);
    const { text } = await raw(
      urls.api,
      'POST /v1/redeem HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n' +
        `Authorization: Bearer ${m.key}\r\nIdempotency-Key: stalled-2\r\n\r\n{"player_id":`,
    );
    expect([statusOf(text), bodyOf(text).error_code]).toEqual([408, 'request_timeout']);
  });

  test('a keyless request with its whole body is still answered 401 at once', async () => {
    const { text } = await raw(
      urls.api,
      'POST /v1/redeem HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
    );
    expect([statusOf(text), bodyOf(text).error_code]).toEqual([401, 'unauthorized']);
  });
});

describe('Node answers of its own carry the error body and a request id', () => {
  test.each(['api', 'admin'] as const)(
    'HTTP/1.1 without Host (%s): 400 with the error body',
    async (listener) => {
      const path = listener === 'api' ? '/v1/redeem' : '/admin/v1/customers';
      const { text } = await raw(urls[listener], `POST ${path} HTTP/1.1\r\nConnection: close\r\n\r\n`);
      expect(statusOf(text), text).toBe(400);
      const body = bodyOf(text);
      expect(body).toEqual({
        ok: false,
        error_code: 'bad_request',
        message: expect.stringMatching(/Host/),
        request_id: expect.stringMatching(/^req_/),
      });
      expect(text.toLowerCase()).toContain(`x-request-id: ${body.request_id.toLowerCase()}\r\n`);
      expect(text).toMatch(/\r\nCache-Control: no-store\r\n/i);
    },
  );

  test('HTTP/1.0 without Host is still served (HTTP/1.0 has no Host)', async () => {
    const { text } = await raw(urls.api, 'GET /v1/health HTTP/1.0\r\n\r\n');
    expect(statusOf(text.replace('HTTP/1.0', 'HTTP/1.1')) || statusOf(text)).toBeLessThan(500);
    expect(text).toMatch(/X-Request-Id: req_/i);
  });

  test('the admin API with a token but no Host: 400, before the Host check', async () => {
    const { text } = await raw(
      urls.admin,
      `GET /admin/v1/customers HTTP/1.1\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nConnection: close\r\n\r\n`,
    );
    expect([statusOf(text), bodyOf(text).error_code]).toEqual([400, 'bad_request']);
  });
});

describe('a request its client abandons', () => {
  test('is logged as aborted, not as "database unavailable"', async () => {
    const m = await createMerchant(quick);
    const before = quick.logs.length;
    for (const [base, auth] of [
      [urls.api, `Authorization: Bearer ${m.key}\r\nIdempotency-Key: gone-1\r\n`],
      [urls.admin, `Authorization: Bearer ${ADMIN_TOKEN}\r\n`],
    ] as const) {
      const path = base === urls.api ? '/v1/redeem' : '/admin/v1/customers';
      await new Promise<void>((resolve, reject) => {
        const url = new URL(base);
        const socket = connect(Number(url.port), url.hostname, () => {
          socket.write(
            `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
              `Content-Length: 1000\r\n${auth}\r\n{"player_id":`,
          );
          setTimeout(() => socket.destroy(), 100);
        });
        socket.on('error', reject);
        socket.on('close', () => resolve());
      });
    }
    await new Promise((r) => setTimeout(r, 200));
    const lines = quick.logs.slice(before).join('');
    expect(lines).not.toContain('database unavailable');
    expect(lines.match(/request aborted by the client/g)?.length).toBe(2);
  });
});

describe('POST /bot/updates', () => {
  test('a body over the limit is 413 payload_too_large, as the document lists (the drift guard checks it)', async () => {
    const res = await quick.api.inject({
      method: 'POST',
      url: '/bot/updates',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ update_id: 1, pad: 'x'.repeat(300_000) }),
    });
    expect([res.statusCode, res.json().error_code]).toEqual([413, 'payload_too_large']);
  });
});
