// Real server processes for crash and multi-process tests: `node bin/redeem-gateway.js serve`
// on free ports, on the PGlite directory given or on DATABASE_URL, killed with real signals.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, inject } from 'vitest';
import { recordResponse } from './openapi-check.ts';

const ROOT = join(import.meta.dirname, '..', '..');
export const TEST_ADMIN_TOKEN = 'process-test-admin-token-0123456789';
export const TEST_CODE_KEY = Buffer.alloc(32, 9).toString('base64');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  adminUrl: string;
  output: () => string;
  /** SIGKILL, and wait for the process to be gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * The server processes of one test file: each `dataDir()` is a new temporary directory, and
 * after the file every process started here is killed and every directory removed.
 */
export function serverProcesses() {
  const servers: ServerProcess[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.kill()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    dataDir(): string {
      const dir = mkdtempSync(join(tmpdir(), 'rg-proc-'));
      dirs.push(dir);
      return dir;
    },
    async start(dataDir: string, env?: Record<string, string>): Promise<ServerProcess> {
      const server = await startServerProcess({ dataDir, ...(env ? { env } : {}) });
      servers.push(server);
      return server;
    },
  };
}

/** Public URLs of the server processes started in this file: their answers are checked. */
const publicUrls = new Set<string>();
let fetchChecked = false;

/**
 * The drift guard for server processes: a fetch to a public listener started here (by a test or
 * by the SDK under test) is checked against the OpenAPI document (helpers/openapi-check.ts).
 */
function checkFetchedResponses() {
  if (fetchChecked) return;
  fetchChecked = true;
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const res = await realFetch(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!publicUrls.has(url.origin)) return res;
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const body = await res
      .clone()
      .text()
      .catch(() => null);
    // A body cut off by a killed process is a transport failure, not a broken rule.
    if (body !== null) {
      recordResponse({
        method,
        url: url.pathname + url.search,
        status: res.status,
        headers: Object.fromEntries(res.headers),
        body,
      });
    }
    return res;
  };
}

/** The test file's PostgreSQL settings for a server process ({} on PGlite). */
export function databaseEnv(): Record<string, string> {
  const names = ['DATABASE_URL', 'DATABASE_DIRECT_URL', 'DATABASE_POOL_MODE'] as const;
  if (!process.env.DATABASE_URL) return {};
  return Object.fromEntries(names.flatMap((n) => (process.env[n] ? [[n, process.env[n]!]] : [])));
}

/**
 * Starts a server and waits until both listeners answer. A free port is closed again before the
 * child binds it, so another process on the machine can take it meanwhile: a start that fails
 * with EADDRINUSE on ports chosen here is tried again on new ones.
 */
export async function startServerProcess(opts: {
  dataDir: string;
  env?: Record<string, string>;
}): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerProcessOnce(opts);
    } catch (err) {
      const fixedPorts = Boolean(opts.env?.PORT || opts.env?.ADMIN_PORT);
      if (fixedPorts || attempt >= 3 || !/EADDRINUSE/.test(String((err as Error).message))) throw err;
    }
  }
}

async function startServerProcessOnce(opts: {
  dataDir: string;
  env?: Record<string, string>;
}): Promise<ServerProcess> {
  // A new PGlite database costs seconds: start from a copy of the migrated template instead.
  const template = process.env.DATABASE_URL ? '' : inject('pgliteTemplate');
  const pgliteDir = join(opts.dataDir, 'pglite');
  if (template && !existsSync(pgliteDir)) cpSync(template, pgliteDir, { recursive: true });
  // Fixed ports when the caller gives them (a restart behind a load balancer), else free ones.
  const port = opts.env?.PORT ? Number(opts.env.PORT) : await freePort();
  const adminPort = opts.env?.ADMIN_PORT ? Number(opts.env.ADMIN_PORT) : await freePort();
  let out = '';
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    DATA_DIR: opts.dataDir,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    // A keyring (docs/reference/operators-and-audit.md#encryption-key-rotation): the processes write under TEST_CODE_KEY, and also read what a
    // test app (helpers/app.ts, key 7…7) wrote to the same database, whose rows a start must
    // cover or it is refused.
    CODE_ENCRYPTION_KEY: `${TEST_CODE_KEY},${Buffer.alloc(32, 7).toString('base64')}`,
    ...databaseEnv(),
    ...opts.env,
  };
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'redeem-gateway.js'), 'serve'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => {
    out += String(d);
  });
  child.stderr!.on('data', (d) => {
    out += String(d);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  checkFetchedResponses();
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${out}`);
    try {
      const [a, b] = await Promise.all([
        fetch(`${url}/v1/health`),
        fetch(`${adminUrl}/admin/v1/customers/0`),
      ]);
      if (a.status === 200 && b.status) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  // Checked against the document only once it is ours: until the child binds the free port,
  // another process may hold it (another test's admin listener answered 404 there once).
  publicUrls.add(url);
  return {
    child,
    url,
    adminUrl,
    output: () => out,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Calls an admin endpoint of a server process; throws on an unexpected status. */
export async function adminHttp<T = Record<string, unknown>>(
  server: Pick<ServerProcess, 'adminUrl'>,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${server.adminUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
      'content-type': 'application/json',
      // Wallet writes need an Idempotency-Key (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments); a fixture's is new each time.
      ...(/\/wallet\/(topup|adjust)$/.test(path) ? { 'idempotency-key': `fixture-${randomUUID()}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as T;
  if (res.status >= 300) throw new Error(`admin ${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** A customer with a plan, a funded test wallet and a test key, made through the admin API. */
export async function createProcessMerchant(
  server: Pick<ServerProcess, 'adminUrl'>,
  plan: { daily_limit: number | null; per_request_usd: string } = {
    daily_limit: 100,
    per_request_usd: '0.01',
  },
) {
  const { customer_id: customerId } = await adminHttp<{ customer_id: number }>(
    server,
    'POST',
    '/admin/v1/customers',
    {
      name: 'process merchant',
    },
  );
  await adminHttp(server, 'PUT', `/admin/v1/customers/${customerId}/plan`, {
    label: 'standard',
    ...plan,
    overage: true,
    active: true,
  });
  await adminHttp(server, 'POST', `/admin/v1/customers/${customerId}/wallet/topup`, { mode: 'test', usd: 5 });
  const { key } = await adminHttp<{ key: string }>(server, 'POST', `/admin/v1/customers/${customerId}/keys`, {
    mode: 'test',
  });
  return { customerId, key };
}

/** An async redeem of one code through a server process (the code is its Idempotency-Key too); its job id. */
export async function submitAsyncRedeem(server: Pick<ServerProcess, 'url'>, key: string, code: string) {
  const res = await fetch(`${server.url}/v1/redeem`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'idempotency-key': code, 'content-type': 'application/json' },
    body: JSON.stringify({ player_id: '5123456789', codes: [code], async: true }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
}

/** Polls `fn` every 25 ms until it returns something (not undefined), for up to `timeoutMs`. */
export async function waitUntil<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
