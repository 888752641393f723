// Configuration (docs/reference/running.md#configuration): every setting validated at start; a bad one stops the
// process with one clear line naming it and a non-zero exit.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startServer } from '../../src/server.ts';
import { ADMIN_TOKEN_FILE, ENCRYPTION_KEY_FILE } from '../../src/start/secrets.ts';
import { onPostgres } from '../helpers/db.ts';
import { databaseEnv, freePort } from '../helpers/process.ts';

const KEY = Buffer.alloc(32, 1).toString('base64');
const BIN = resolve(import.meta.dirname, '../../bin/redeem-gateway.js');

/** loadConfig throws a ConfigError of one line that names `variable`. */
function expectRejected(env: Record<string, string>, variable: string) {
  let error: unknown;
  try {
    loadConfig(env);
  } catch (err) {
    error = err;
  }
  expect(error, JSON.stringify(env)).toBeInstanceOf(ConfigError);
  const message = (error as Error).message;
  expect(message).toContain(variable);
  expect(message).not.toContain('\n');
  return message;
}

describe('loadConfig', () => {
  test('defaults of the main settings', () => {
    const c = loadConfig({});
    // Every main setting (docs/reference/running.md#configuration; others may exist beside them).
    expect(c).toMatchObject({
      HOST: '127.0.0.1',
      PORT: 8080,
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: 8081,
      DATA_DIR: './data',
      ACTIVATOR: 'sandbox',
      TRUST_PROXY: [],
      WEBHOOK_RETRY_DELAYS: [10, 60, 300],
      WEBHOOK_ALLOW_PRIVATE_TARGETS: false,
      LOG_LEVEL: 'info',
      ACTIVATOR_TIMEOUT_MS: 10_000,
      ACTIVATOR_CONCURRENCY: 16,
    });
    for (const unset of [
      'ADMIN_TOKEN',
      'DATABASE_URL',
      'CODE_ENCRYPTION_KEY',
      'ACTIVATOR_URL',
      'ACTIVATOR_KEY',
    ] as const) {
      expect(c[unset], unset).toBeUndefined();
    }
    expect(Object.isFrozen(c)).toBe(true);
  });

  test('a full, valid configuration is read and typed', () => {
    const c = loadConfig({
      HOST: '0.0.0.0',
      PORT: '1',
      ADMIN_PORT: '65535',
      ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
      DATABASE_URL: 'postgresql://u@db:5432/x',
      CODE_ENCRYPTION_KEY: KEY,
      ACTIVATOR: 'http',
      ACTIVATOR_URL: 'https://upstream.example/api',
      ACTIVATOR_KEY: 'k',
      TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,2001:db8::/32',
      WEBHOOK_RETRY_DELAYS: '1, 2,3',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'silent',
    });
    expect(c).toMatchObject({
      PORT: 1,
      ADMIN_PORT: 65535,
      ACTIVATOR: 'http',
      TRUST_PROXY: ['127.0.0.1', '10.0.0.0/8', '::1', '2001:db8::/32'],
      WEBHOOK_RETRY_DELAYS: [1, 2, 3],
      WEBHOOK_ALLOW_PRIVATE_TARGETS: true,
      LOG_LEVEL: 'silent',
    });
  });

  test.each(['0', '65536', 'abc', '-1', '1.5', '8080x', '1e3', '99999999999999999999'])(
    'PORT=%s is rejected, and ADMIN_PORT likewise',
    (value) => {
      expectRejected({ PORT: value }, 'PORT');
      const admin = expectRejected({ ADMIN_PORT: value }, 'ADMIN_PORT');
      expect(admin).toMatch(/ADMIN_PORT/);
    },
  );

  test.each(['0', '-1', 'abc', '1.5', '99999999'])(
    'ACTIVATOR_TIMEOUT_MS / ACTIVATOR_CONCURRENCY=%s is rejected',
    (value) => {
      expectRejected({ ACTIVATOR_TIMEOUT_MS: value }, 'ACTIVATOR_TIMEOUT_MS');
      expectRejected({ ACTIVATOR_CONCURRENCY: value }, 'ACTIVATOR_CONCURRENCY');
    },
  );

  test.each(['0', 'abc', '10,,60', '10,-5', '1.5', '10;60', ',', '10,0,300'])(
    'WEBHOOK_RETRY_DELAYS=%s is rejected',
    (value) => {
      expectRejected({ WEBHOOK_RETRY_DELAYS: value }, 'WEBHOOK_RETRY_DELAYS');
    },
  );

  test.each([
    ['too short', Buffer.alloc(16, 1).toString('base64')],
    ['31 bytes', Buffer.alloc(31, 1).toString('base64')],
    ['33 bytes', Buffer.alloc(33, 1).toString('base64')],
    ['not base64', `${'!'.repeat(43)}=`],
    ['hex of 32 bytes', Buffer.alloc(32, 1).toString('hex')],
    ['plain word', 'secret'],
  ])('CODE_ENCRYPTION_KEY %s is rejected', (_name, value) => {
    expectRejected({ CODE_ENCRYPTION_KEY: value }, 'CODE_ENCRYPTION_KEY');
  });

  test('ACTIVATOR=http without ACTIVATOR_URL names ACTIVATOR_URL', () => {
    const message = expectRejected({ ACTIVATOR: 'http' }, 'ACTIVATOR_URL');
    expect(message).toContain('ACTIVATOR_URL');
    expectRejected({ ACTIVATOR: 'http', ACTIVATOR_URL: '' }, 'ACTIVATOR_URL');
    expectRejected({ ACTIVATOR: 'http', ACTIVATOR_URL: 'ftp://x' }, 'ACTIVATOR_URL');
    expect(loadConfig({ ACTIVATOR: 'http', ACTIVATOR_URL: 'http://127.0.0.1:9000' }).ACTIVATOR).toBe('http');
  });

  test('ACTIVATOR other than sandbox or http is rejected', () => {
    expectRejected({ ACTIVATOR: 'live' }, 'ACTIVATOR');
  });

  test('DATABASE_URL without CODE_ENCRYPTION_KEY names CODE_ENCRYPTION_KEY', () => {
    expectRejected({ DATABASE_URL: 'postgres://postgres@127.0.0.1/x' }, 'CODE_ENCRYPTION_KEY');
    expect(
      loadConfig({ DATABASE_URL: 'postgres://postgres@127.0.0.1/x', CODE_ENCRYPTION_KEY: KEY }).DATABASE_URL,
    ).toBe('postgres://postgres@127.0.0.1/x');
  });

  test('DATABASE_POOL_MODE=transaction needs DATABASE_DIRECT_URL; other modes are rejected', () => {
    const pg = { DATABASE_URL: 'postgres://postgres@127.0.0.1:6432/x', CODE_ENCRYPTION_KEY: KEY };
    expectRejected({ ...pg, DATABASE_POOL_MODE: 'transaction' }, 'DATABASE_POOL_MODE');
    expectRejected({ ...pg, DATABASE_POOL_MODE: 'statement' }, 'DATABASE_POOL_MODE');
    expectRejected({ ...pg, DATABASE_DIRECT_URL: 'mysql://x/y' }, 'DATABASE_DIRECT_URL');
    const config = loadConfig({
      ...pg,
      DATABASE_POOL_MODE: 'transaction',
      DATABASE_DIRECT_URL: 'postgres://postgres@127.0.0.1:5432/x',
    });
    expect([config.DATABASE_POOL_MODE, config.DATABASE_DIRECT_URL]).toEqual([
      'transaction',
      'postgres://postgres@127.0.0.1:5432/x',
    ]);
    expect(loadConfig(pg).DATABASE_POOL_MODE).toBe('session');
  });

  test('DATABASE_URL that is not PostgreSQL is rejected', () => {
    expectRejected({ DATABASE_URL: 'mysql://x/y', CODE_ENCRYPTION_KEY: KEY }, 'DATABASE_URL');
  });

  test.each(['not-an-ip', '10.0.0.0/33', '1.2.3', '127.0.0.1,bogus', '::1/129', 'localhost'])(
    'TRUST_PROXY=%s is rejected',
    (value) => {
      expectRejected({ TRUST_PROXY: value }, 'TRUST_PROXY');
    },
  );

  test('safe-configuration settings: defaults and bad values', () => {
    expect(loadConfig({})).toMatchObject({
      REQUEST_TIMEOUT_MS: 30_000,
      WEBHOOK_DNS_SERVERS: [],
      WEBHOOK_DNS_TIMEOUT_MS: 5_000,
      WEBHOOK_DNS_CONCURRENCY: 8,
      WEBHOOK_CONCURRENCY: 10,
      ACTIVATOR_ALLOW_INSECURE: false,
      ADMIN_ALLOW_REMOTE: false,
    });
    expect(
      loadConfig({ REQUEST_TIMEOUT_MS: '250', WEBHOOK_DNS_SERVERS: '127.0.0.1:5353, [::1]:53,9.9.9.9' }),
    ).toMatchObject({
      REQUEST_TIMEOUT_MS: 250,
      WEBHOOK_DNS_SERVERS: ['127.0.0.1:5353', '[::1]:53', '9.9.9.9'],
    });
    for (const v of ['0', '-1', 'abc', '1.5']) {
      expectRejected({ REQUEST_TIMEOUT_MS: v }, 'REQUEST_TIMEOUT_MS');
      expectRejected({ WEBHOOK_DNS_TIMEOUT_MS: v }, 'WEBHOOK_DNS_TIMEOUT_MS');
      expectRejected({ WEBHOOK_DNS_CONCURRENCY: v }, 'WEBHOOK_DNS_CONCURRENCY');
      expectRejected({ WEBHOOK_CONCURRENCY: v }, 'WEBHOOK_CONCURRENCY');
    }
    for (const v of ['dns.example', '1.2.3.4:0', '1.2.3.4:70000', '[::1]', '1.2.3']) {
      expectRejected({ WEBHOOK_DNS_SERVERS: v }, 'WEBHOOK_DNS_SERVERS');
    }
    expectRejected({ ACTIVATOR_ALLOW_INSECURE: 'yes' }, 'ACTIVATOR_ALLOW_INSECURE');
    expectRejected({ ADMIN_ALLOW_REMOTE: 'yes' }, 'ADMIN_ALLOW_REMOTE');
  });

  test.each([
    'http://upstream.example/api',
    'http://10.0.0.5:9000',
    'http://0.0.0.0:9000',
    'http://127.0.0.1.nip.io/',
  ])('ACTIVATOR_URL=%s (http:// off loopback) is refused unless ACTIVATOR_ALLOW_INSECURE=true', (url) => {
    const message = expectRejected({ ACTIVATOR: 'http', ACTIVATOR_URL: url }, 'ACTIVATOR_URL');
    expect(message).toContain('ACTIVATOR_ALLOW_INSECURE');
    expect(
      loadConfig({ ACTIVATOR: 'http', ACTIVATOR_URL: url, ACTIVATOR_ALLOW_INSECURE: 'true' }).ACTIVATOR_URL,
    ).toBe(url);
  });

  test('ACTIVATOR_URL over https anywhere, or http to loopback, is accepted', () => {
    for (const url of [
      'https://upstream.example/api',
      'http://127.0.0.1:9090',
      'http://127.9.9.9:9090',
      'http://[::1]:9090/x',
      'http://localhost:9090',
    ]) {
      expect(loadConfig({ ACTIVATOR: 'http', ACTIVATOR_URL: url }).ACTIVATOR_URL, url).toBe(url);
    }
  });

  test.each(['0.0.0.0/0', '::/0', '10.0.0.1,1.2.3.4/0', '::ffff:0.0.0.0/0'])(
    'TRUST_PROXY=%s (a /0 entry) is refused',
    (value) => {
      const message = expectRejected({ TRUST_PROXY: value }, 'TRUST_PROXY');
      expect(message).toContain('/0');
    },
  );

  test.each(['0.0.0.0', '::', '10.0.0.8', '203.0.113.5', 'admin.internal'])(
    'ADMIN_HOST=%s (not loopback) is refused unless ADMIN_ALLOW_REMOTE=true',
    (host) => {
      const message = expectRejected({ ADMIN_HOST: host }, 'ADMIN_HOST');
      expect(message).toContain('ADMIN_ALLOW_REMOTE');
      expect(loadConfig({ ADMIN_HOST: host, ADMIN_ALLOW_REMOTE: 'true' }).ADMIN_HOST).toBe(host);
    },
  );

  test('a loopback ADMIN_HOST needs nothing; HOST may be anything', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) {
      expect(loadConfig({ ADMIN_HOST: host }).ADMIN_HOST).toBe(host);
    }
    expect(loadConfig({ HOST: '0.0.0.0' }).HOST).toBe('0.0.0.0');
  });

  test('the chat bot: off by default; a malformed token, an unknown BOT_UPDATES, webhook without its secret', () => {
    expect(loadConfig({}).BOT_TOKEN).toBeUndefined();
    expect(loadConfig({})).toMatchObject({
      BOT_API_ROOT: 'https://api.telegram.org',
      BOT_UPDATES: 'polling',
      BOT_CHECKS_PER_DAY: 500,
      BOT_PAYMENT_CURRENCY: 'USD',
    });
    const token = '123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
    expect(loadConfig({ BOT_TOKEN: token, BOT_API_ROOT: 'http://127.0.0.1:8090/' }).BOT_API_ROOT).toBe(
      'http://127.0.0.1:8090',
    );
    for (const bad of ['abc', '123456', ':secretsecretsecretsecret', '123456:short'])
      expect(expectRejected({ BOT_TOKEN: bad }, 'BOT_TOKEN')).not.toContain(bad);
    expectRejected({ BOT_TOKEN: token, BOT_UPDATES: 'push' }, 'BOT_UPDATES');
    expectRejected({ BOT_TOKEN: token, BOT_UPDATES: 'webhook' }, 'BOT_WEBHOOK_SECRET');
    expectRejected({ BOT_API_ROOT: 'ftp://x' }, 'BOT_API_ROOT');
    expectRejected({ BOT_WEBHOOK_URL: 'http://example.com/bot/updates' }, 'BOT_WEBHOOK_URL');
    expectRejected({ BOT_PAYMENT_CURRENCY: 'usd' }, 'BOT_PAYMENT_CURRENCY');
    expect(
      loadConfig({
        BOT_TOKEN: token,
        BOT_UPDATES: 'webhook',
        BOT_WEBHOOK_SECRET: 's'.repeat(20),
        BOT_WEBHOOK_URL: 'http://127.0.0.1:9/bot/updates',
      }).BOT_UPDATES,
    ).toBe('webhook');
  });

  test('other settings: LOG_LEVEL, WEBHOOK_ALLOW_PRIVATE_TARGETS, ADMIN_TOKEN', () => {
    expectRejected({ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL');
    expectRejected({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE_TARGETS');
    expectRejected({ ADMIN_TOKEN: 'short' }, 'ADMIN_TOKEN');
  });
});

describe('the real process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'rg-config-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  function run(args: string[], env: Record<string, string>) {
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        fail(new Error(`process did not exit: ${stdout} ${stderr}`));
      }, 20_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        done({ code, stdout, stderr });
      });
    });
  }

  test.each([
    ['serve', { PORT: 'abc' }, 'PORT'],
    ['serve', { PORT: '0' }, 'PORT'],
    ['serve', { ADMIN_PORT: '70000' }, 'ADMIN_PORT'],
    ['serve', { ACTIVATOR: 'http' }, 'ACTIVATOR_URL'],
    ['serve', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' }, 'CODE_ENCRYPTION_KEY'],
    ['migrate', { WEBHOOK_RETRY_DELAYS: '0' }, 'WEBHOOK_RETRY_DELAYS'],
    ['serve', { ADMIN_HOST: '0.0.0.0' }, 'ADMIN_HOST'],
    ['serve', { TRUST_PROXY: '10.0.0.1,0.0.0.0/0' }, 'TRUST_PROXY'],
    ['serve', { ACTIVATOR: 'http', ACTIVATOR_URL: 'http://upstream.example/' }, 'ACTIVATOR_URL'],
  ] as const)('%s with %o exits non-zero printing one line naming %s', async (command, env, variable) => {
    const r = await run([command], env);
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(r.stdout).toBe('');
    const lines = r.stderr.split('\n').filter((l) => l.length > 0);
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toContain(variable);
    expect(r.stderr).not.toMatch(/\bat .+:\d+:\d+/); // no stack trace
  });
});

describe('files of the data directory', () => {
  const parent = mkdtempSync(join(tmpdir(), 'rg-modes-'));
  afterAll(() => rmSync(parent, { recursive: true, force: true }));
  const mode = (path: string) => statSync(path).mode & 0o777;

  test('a new DATA_DIR is 0700 (the embedded database in it too), generated secrets 0600', async () => {
    const dataDir = join(parent, 'nested', 'data');
    const lines: string[] = [];
    const logger = createLogger('info', {
      write(chunk: string) {
        lines.push(chunk);
      },
    });
    const running = await startServer(
      loadConfig({ DATA_DIR: dataDir, PORT: String(await freePort()), ADMIN_PORT: String(await freePort()) }),
      { logger },
    );
    try {
      expect({
        dataDir: mode(dataDir),
        pglite: mode(join(dataDir, 'pglite')),
        adminToken: mode(join(dataDir, ADMIN_TOKEN_FILE)),
        encryptionKey: mode(join(dataDir, ENCRYPTION_KEY_FILE)),
      }).toEqual({ dataDir: 0o700, pglite: 0o700, adminToken: 0o600, encryptionKey: 0o600 });
      // The embedded database: no warning about live keys on the sandbox.
      expect(lines.join('')).not.toContain('ACTIVATOR=sandbox on PostgreSQL');
    } finally {
      await running.stop();
    }
  });

  test.runIf(onPostgres)(
    'on PostgreSQL with the sandbox for live keys, a warning is logged at start',
    async () => {
      const lines: string[] = [];
      const logger = createLogger('info', {
        write(chunk: string) {
          lines.push(chunk);
        },
      });
      const running = await startServer(
        loadConfig({
          DATA_DIR: join(parent, 'pg'),
          ...databaseEnv(),
          CODE_ENCRYPTION_KEY: KEY,
          ADMIN_TOKEN: 'config-test-admin-token-0123456789',
          PORT: String(await freePort()),
          ADMIN_PORT: String(await freePort()),
        }),
        { logger },
      );
      await running.stop();
      const warnings = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40);
      expect(warnings.map((w) => w.msg)).toEqual([
        expect.stringContaining('ACTIVATOR=sandbox on PostgreSQL'),
      ]);
    },
  );
});
