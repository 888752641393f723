// Secrets never reach the logs (docs/reference/operators-and-audit.md#codes-and-secrets-at-rest, docs/architecture.md#house-rules), and a crash is
// logged with its request id so support can find it.
import { connect } from 'node:net';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import {
  ADMIN_TOKEN,
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  type TestApp,
} from '../helpers/app.ts';

let t: TestApp;
let probeValue = '';
beforeAll(async () => {
  t = await createTestApp();
  t.api.get('/v1/__crash', { config: { auth: 'any' } }, async () => {
    throw new Error('boom in a test-only route');
  });
  // A unique violation of a statement whose parameter is a secret (a webhook URL with a token).
  t.api.get('/v1/__dberror', { config: { auth: 'any' } }, async () => {
    await t.ctx.db.query('insert into log_probe (v) values ($1)', [probeValue]);
    await t.ctx.db.query('insert into log_probe (v) values ($1)', [probeValue]);
    return { ok: true };
  });
});
afterAll(() => t.close());

const parsedLogs = () =>
  t.logs
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('secrets in logs', () => {
  test('API keys, the admin token and wrong tokens never appear in the logs', async () => {
    const m = await createMerchant(t, { key: { allowed_ips: ['10.0.0.1'] } });
    const live = await createMerchant(t, { key: { mode: 'live' } });
    const revoked = await createMerchant(t);
    await adminCall(t, 'POST', `/admin/v1/keys/${revoked.keyId}/revoke`);
    const wrongKey = 'rk_test_WrongWrongWrongWrongWrongWron';
    const wrongAdmin = 'wrong-admin-token-abcdefghijklmnop';
    const garbage = 'garbage-token-zyxwvutsrqponmlkjihgf';
    const secrets = [m.key, live.key, revoked.key, wrongKey, wrongAdmin, garbage, ADMIN_TOKEN];

    const requestIds: string[] = [];
    const call = async (app: 'api' | 'admin', opts: InjectOptions) => {
      const res = await t[app].inject(opts);
      requestIds.push(String(res.headers['x-request-id']));
      return res;
    };
    const statuses = [
      (await call('api', { method: 'GET', url: '/v1/me', headers: bearer(m.key), remoteAddress: '10.0.0.1' }))
        .statusCode,
      (await call('api', { method: 'GET', url: '/v1/me', headers: bearer(m.key), remoteAddress: '10.0.0.2' }))
        .statusCode,
      (await call('api', { method: 'GET', url: '/v1/me', headers: bearer(live.key) })).statusCode,
      (await call('api', { method: 'GET', url: '/v1/me', headers: bearer(revoked.key) })).statusCode,
      (await call('api', { method: 'GET', url: '/v1/me', headers: bearer(wrongKey) })).statusCode,
      (await call('api', { method: 'GET', url: '/v1/me', headers: { authorization: garbage } })).statusCode,
      (
        await call('api', {
          method: 'POST',
          url: '/v1/me',
          headers: bearer(live.key),
          payload: { key: live.key },
        })
      ).statusCode,
      (await call('api', { method: 'GET', url: '/v1/nope', headers: bearer(live.key) })).statusCode,
      (await call('api', { method: 'GET', url: '/v1/__crash', headers: bearer(live.key) })).statusCode,
      // A key misplaced in the query string by a careless client must not be logged either.
      (await call('api', { method: 'GET', url: `/v1/me?api_key=${live.key}&token=${garbage}` })).statusCode,
      (
        await call('admin', {
          method: 'GET',
          url: `/admin/v1/customers/${m.customerId}`,
          headers: bearer(ADMIN_TOKEN),
        })
      ).statusCode,
      (
        await call('admin', {
          method: 'GET',
          url: `/admin/v1/customers/${m.customerId}`,
          headers: bearer(wrongAdmin),
        })
      ).statusCode,
      (
        await call('admin', {
          method: 'POST',
          url: `/admin/v1/customers/${m.customerId}/keys`,
          headers: bearer(ADMIN_TOKEN),
          payload: { mode: 'test', label: 'logged?' },
        })
      ).statusCode,
    ];
    expect(statuses).toEqual([200, 403, 200, 401, 401, 401, 405, 404, 500, 401, 200, 401, 201]);

    const text = t.logs.join('');
    // The logs are really being written: every one of these requests is in them.
    for (const id of requestIds) expect(text).toContain(id);
    for (const secret of secrets) expect(text).not.toContain(secret);
    // Nor any other key issued in this test (admin responses carry keys).
    expect(text).not.toMatch(/rk_(live|test)_[0-9A-Za-z]{32}/);
    expect(text).not.toMatch(/authorization/i);
    // The query's parameter names stay for support; their values do not.
    expect(text).toContain('/v1/me?api_key=[redacted]&token=[redacted]');
  });
});

describe('crash logs', () => {
  test('the error log of a 500 carries the request id of the answer', async () => {
    const m = await createMerchant(t);
    const res = await t.api.inject({ method: 'GET', url: '/v1/__crash', headers: bearer(m.key) });
    expect(res.statusCode).toBe(500);
    const id = res.headers['x-request-id'];
    expect(res.json().request_id).toBe(id);
    const errors = parsedLogs().filter((l) => l.reqId === id && (l.level as number) >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      reqId: id,
      level: 50,
      err: { message: 'boom in a test-only route', type: 'Error' },
    });
    expect(JSON.stringify(errors[0])).not.toContain(m.key);
  });

  test('a 4xx is not logged as an error', async () => {
    const res = await t.api.inject({ method: 'GET', url: '/v1/me' });
    expect(res.statusCode).toBe(401);
    const id = res.headers['x-request-id'];
    const lines = parsedLogs().filter((l) => l.reqId === id);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });
});

describe('error codes reach the log; codes, keys, tokens, secrets and SQL parameters never do', () => {
  /** A logger of its own, its lines parsed. */
  function captured() {
    const lines: string[] = [];
    const logger = createLogger('info', {
      write(chunk: string) {
        lines.push(chunk);
      },
    });
    return { logger, text: () => lines.join(''), parsed: () => lines.map((l) => JSON.parse(l)) };
  }

  test('a database error of a request: its code (23505) is logged, its parameters and detail are not', async () => {
    const secretUrl = 'https://hooks.example/cb?token=tok_SQLPARAMSECRET0123456789';
    await t.ctx.db.query('create table if not exists log_probe (v text primary key)');
    probeValue = secretUrl;
    const m = await createMerchant(t);
    const res = await t.api.inject({ method: 'GET', url: '/v1/__dberror', headers: bearer(m.key) });
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toContain('23505');
    const id = res.headers['x-request-id'];
    const [error] = parsedLogs().filter((l) => l.reqId === id && (l.level as number) >= 50);
    expect(error).toMatchObject({
      err: { code: '23505', message: expect.stringContaining('log_probe_pkey') },
    });
    const text = t.logs.join('');
    expect(text).not.toContain('SQLPARAMSECRET');
    expect(text).not.toContain('hooks.example');
  });

  test('system and library error codes survive (ECONNREFUSED, nested in a cause); secrets in errors do not', async () => {
    const { logger, parsed, text } = captured();
    const refused = await new Promise<Error>((resolve) => {
      const socket = connect(1, '127.0.0.1');
      socket.on('error', resolve);
    });
    logger.error({ err: refused }, 'connect failed');
    logger.error({ err: new Error('sweep failed', { cause: refused }) }, 'wrapped');
    const pgLike = Object.assign(
      new Error('duplicate key value violates unique constraint "webhooks_pkey"'),
      {
        code: '23505',
        detail: 'Key (url)=(https://x.example/?token=tok_DETAILSECRET) already exists.',
        params: ['rk_test_PARAMSECRETPARAMSECRETPARAMSECR1'],
        parameters: ['whsec_PARAMETERSSECRET'],
        query: 'insert into webhooks (url) values ($1)',
      },
    );
    logger.error({ err: pgLike }, 'pg-like');
    logger.error(
      { err: Object.assign(new Error('oops'), { code: 'GIFT-STOCKCODE-SECRET-9K2J' }) },
      'odd code',
    );
    logger.error({ err: Object.assign(new Error('api'), { code: 'idempotency_in_progress' }) }, 'api');
    const [a, b, c, d, e] = parsed();
    expect(a.err.code).toBe('ECONNREFUSED');
    expect(b.err.cause.code).toBe('ECONNREFUSED');
    expect(c.err).toMatchObject({
      code: '23505',
      detail: '[redacted]',
      params: '[redacted]',
      parameters: '[redacted]',
      query: 'insert into webhooks (url) values ($1)',
    });
    expect(d.err.code).toBe('…9K2J');
    expect(e.err.code).toBe('idempotency_in_progress');
    for (const secret of ['DETAILSECRET', 'PARAMSECRET', 'PARAMETERSSECRET', 'STOCKCODE-SECRET']) {
      expect(text()).not.toContain(secret);
    }
  });

  test('fields named code or codes show the last 4 characters; keys, tokens, secrets, Authorization never', () => {
    const { logger, parsed, text } = captured();
    logger.warn(
      {
        code: 'AAAA-BBBB-CCCC-WXYZ',
        codes: ['DDDD-EEEE-FFFF-1111', 'GGGG-HHHH-IIII-2222'],
        job: { code: 'NESTED-JJJJ-KKKK-3333', attempts: [{ code: 'DEEP-LLLL-MMMM-4444' }] },
        key: 'rk_live_KEYKEYKEYKEYKEYKEYKEYKEYKEYKEY12',
        token: 'adm_TOKENTOKENTOKEN',
        secret: 'whsec_SECRETSECRETSECRET',
        webhook: { secret: 'whsec_NESTEDSECRET' },
        authorization: 'Bearer rk_test_AUTHAUTHAUTHAUTHAUTHAUTHAUTHAUTH',
        headers: { authorization: 'Bearer HEADERAUTH' },
        body: { codes: ['BODY-NNNN-OOOO-5555'] },
      },
      'everything at once',
    );
    const [line] = parsed();
    expect(line).toMatchObject({
      code: '…WXYZ',
      codes: ['…1111', '…2222'],
      job: { code: '…3333', attempts: [{ code: '…4444' }] },
      key: '[redacted]',
      token: '[redacted]',
      secret: '[redacted]',
      webhook: { secret: '[redacted]' },
      authorization: '[redacted]',
      body: '[redacted]',
    });
    for (const secret of [
      'AAAA-BBBB',
      'DDDD-EEEE',
      'NESTED-JJJJ',
      'DEEP-LLLL',
      'KEYKEYKEY',
      'TOKENTOKEN',
      'SECRETSECRET',
      'NESTEDSECRET',
      'AUTHAUTH',
      'HEADERAUTH',
      'BODY-NNNN',
    ]) {
      expect(text()).not.toContain(secret);
    }
  });
});
