// Builds the real public and admin apps on a real test database, with a manual clock and a
// logger whose lines are kept for assertions. Fixtures go through the admin API, as an operator.

import { Writable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect } from 'vitest';
import { createSandboxActivator } from '../../src/activators/sandbox.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { type JobWorker, startJobWorker } from '../../src/core/jobs/worker.ts';
import { redeemJobRunner } from '../../src/core/redeem/job-runner.ts';
import { buildAdminApp } from '../../src/http/admin-app.ts';
import type { ServerContext } from '../../src/http/context.ts';
import { buildPublicApp } from '../../src/http/public-app.ts';
import { createLogger } from '../../src/logger.ts';
import { createMetrics } from '../../src/metrics/registry.ts';
import { registerAdminRoutes } from '../../src/routes/admin/index.ts';
import { registerPublicRoutes } from '../../src/routes/public.ts';
import { openTestDatabase, type TestDatabase } from './db.ts';
import { recordResponse } from './openapi-check.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface TestApp {
  ctx: ServerContext;
  clock: ManualClock;
  api: FastifyInstance;
  admin: FastifyInstance;
  testDb: TestDatabase;
  /** Every log line written so far, as raw text. */
  logs: string[];
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  clock?: ManualClock;
  sandboxSlowMs?: number;
  /** Run the async job worker (default true). */
  jobWorker?: boolean;
  /** Connections of the PostgreSQL pool (hot-path-cost counts one connection's commits). */
  poolMax?: number;
}

export async function createTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const testDb = await openTestDatabase({ poolMax: opts.poolMax });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const config: Config = loadConfig({ LOG_LEVEL: 'info', ...opts.env });
  const clock = opts.clock ?? new ManualClock('2026-11-22T09:00:00Z');
  const codeKey = Buffer.alloc(32, 7);
  const sandbox = createSandboxActivator({ db: testDb.db, codeKey, slowMs: opts.sandboxSlowMs });
  const ctx: ServerContext = {
    db: testDb.db,
    config,
    clock,
    logger: createLogger('trace', sink),
    adminToken: ADMIN_TOKEN,
    codeKey,
    activatorFor: () => sandbox,
    jobs: { wake: () => worker?.wake() },
    metrics: createMetrics({ db: testDb.db, processMetrics: false }),
  };
  let worker: JobWorker | undefined;
  if (opts.jobWorker !== false) worker = startJobWorker(ctx, redeemJobRunner, { pollMs: 50 });
  const api = await buildPublicApp(ctx, registerPublicRoutes);
  // The drift guard: every public response, by inject or over a socket, is checked against the
  // OpenAPI document; a mismatch fails the test that received it (helpers/openapi-check.ts).
  api.addHook('onSend', async (request, reply, payload) => {
    recordResponse({
      method: request.method,
      url: request.url,
      status: reply.statusCode,
      headers: reply.getHeaders(),
      body: typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '',
    });
    return payload;
  });
  const admin = await buildAdminApp(ctx, registerAdminRoutes);
  return {
    ctx,
    clock,
    api,
    admin,
    testDb,
    logs,
    async close() {
      await worker?.stop(2000);
      await api.close();
      await admin.close();
      await testDb.close();
    },
  };
}

/**
 * One test app for the file (or the describe block this is called in): made before its tests,
 * handed to `ready` (which keeps it, and may add fixtures), closed after them.
 */
export function useTestApp(opts: TestAppOptions, ready: (t: TestApp) => void | Promise<void>): void {
  let app: TestApp | undefined;
  beforeAll(async () => {
    app = await createTestApp(opts);
    await ready(app);
  });
  afterAll(() => app?.close());
}

/** Calls the admin API as the operator; fails the test on an unexpected status. */
export async function adminCall<T = Record<string, unknown>>(
  t: TestApp,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  payload?: unknown,
  expectStatus = method === 'POST' && /\/(customers|keys)$/.test(url) ? 201 : 200,
): Promise<T> {
  // Wallet writes need an Idempotency-Key (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments); a fixture's top-up is a new one each time.
  const idempotency = /\/wallet\/(topup|adjust)$/.test(url)
    ? { 'idempotency-key': `fixture-${Math.random().toString(36).slice(2)}` }
    : {};
  const res = await t.admin.inject({
    method,
    url,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...idempotency },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  if (res.statusCode !== expectStatus) {
    throw new Error(`admin ${method} ${url} answered ${res.statusCode}: ${res.body}`);
  }
  return res.json() as T;
}

export interface MerchantSpec {
  plan?: {
    label?: string;
    daily_limit: number | null;
    per_request_usd: number | string;
    overage?: boolean;
    active?: boolean;
  } | null;
  subscription?: { required: boolean; expires_at: string | null };
  topup?: { live?: number | string; test?: number | string };
  key?: { mode?: 'live' | 'test'; scopes?: string[]; allowed_ips?: string[]; expires_at?: string | null };
}

export interface Merchant {
  customerId: number;
  key: string;
  keyId: string;
  keyPrefix: string;
}

/** A fresh customer, nothing else: no plan, no key, empty wallets. */
export async function createCustomer(t: TestApp, name = `customer ${Math.random().toString(36).slice(2)}`) {
  return (await adminCall<{ customer_id: number }>(t, 'POST', '/admin/v1/customers', { name })).customer_id;
}

/** A GET on the admin listener, as the operator unless the headers say otherwise; the answer unchecked. */
export const adminGet = (t: TestApp, url: string, headers: Record<string, string> = {}) =>
  t.admin.inject({ method: 'GET', url, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers } });

/** A GET on the public API with a key (and from an address, if given); the answer unchecked. */
export const merchantGet = (t: TestApp, url: string, key: string, remoteAddress?: string) =>
  t.api.inject({ method: 'GET', url, headers: bearer(key), ...(remoteAddress ? { remoteAddress } : {}) });

/** An error answer, whole: status, body and its request id (the message, when given). */
export function expectErrorAnswer(
  res: LightMyRequestResponse,
  status: number,
  code: string,
  message?: string | RegExp,
) {
  expect({ status: res.statusCode, body: res.json() }).toEqual({
    status,
    body: {
      ok: false,
      error_code: code,
      message:
        message === undefined
          ? expect.any(String)
          : typeof message === 'string'
            ? message
            : expect.stringMatching(message),
      request_id: res.headers['x-request-id'],
    },
  });
}

/** A fresh customer with (by default) a plan of 100 included requests at $0.01 and a test key. */
export async function createMerchant(t: TestApp, spec: MerchantSpec = {}): Promise<Merchant> {
  const customerId = await createCustomer(t, `merchant ${Math.random().toString(36).slice(2)}`);
  const plan = spec.plan === undefined ? { daily_limit: 100, per_request_usd: '0.01' } : spec.plan;
  if (plan) {
    await adminCall(t, 'PUT', `/admin/v1/customers/${customerId}/plan`, {
      label: plan.label ?? 'standard',
      daily_limit: plan.daily_limit,
      per_request_usd: plan.per_request_usd,
      overage: plan.overage ?? true,
      active: plan.active ?? true,
    });
  }
  if (spec.subscription)
    await adminCall(t, 'PUT', `/admin/v1/customers/${customerId}/subscription`, spec.subscription);
  for (const mode of ['live', 'test'] as const) {
    const usd = spec.topup?.[mode];
    if (usd !== undefined)
      await adminCall(t, 'POST', `/admin/v1/customers/${customerId}/wallet/topup`, { mode, usd });
  }
  const k = await issueTestKey(t, customerId, spec.key);
  return { customerId, ...k };
}

export async function issueTestKey(t: TestApp, customerId: number, spec: MerchantSpec['key'] = {}) {
  const r = await adminCall<{ key: string; key_id: string; key_prefix: string }>(
    t,
    'POST',
    `/admin/v1/customers/${customerId}/keys`,
    {
      mode: spec.mode ?? 'test',
      scopes: spec.scopes ?? ['redeem', 'read'],
      allowed_ips: spec.allowed_ips ?? [],
      expires_at: spec.expires_at ?? null,
      label: 'test',
    },
  );
  return { key: r.key, keyId: r.key_id, keyPrefix: r.key_prefix };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
