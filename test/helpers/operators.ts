// Helpers of the operator tests (docs/reference/operators-and-audit.md): an admin app that also lists its routes, operators
// made through the API, and the audit rows a request left behind.
import type { FastifyInstance, LightMyRequestResponse, RouteOptions } from 'fastify';
import { buildAdminApp } from '../../src/http/admin-app.ts';
import { registerAdminRoutes } from '../../src/routes/admin/index.ts';
import { ADMIN_TOKEN, type TestApp } from './app.ts';

export interface ListedAdmin {
  app: FastifyInstance;
  /** Every route registered, as "METHOD /path" with its options. */
  routes: { key: string; options: RouteOptions }[];
}

/** The admin app as the process builds it, plus the list of every route it registered. */
export async function adminWithRoutes(t: TestApp): Promise<ListedAdmin> {
  const routes: ListedAdmin['routes'] = [];
  const app = await buildAdminApp(t.ctx, (a, ctx, sessions) => {
    a.addHook('onRoute', (r) => {
      for (const m of [r.method].flat()) routes.push({ key: `${m} ${r.url}`, options: r });
    });
    registerAdminRoutes(a, ctx, sessions);
  });
  await app.ready();
  return { app, routes };
}

/** The routes that may change state: every method but GET and HEAD, outside the console's own. */
export const writeRoutes = (l: ListedAdmin) =>
  [
    ...new Set(
      l.routes
        .filter(
          (r) =>
            !['GET', 'HEAD'].includes(r.key.split(' ')[0]!) &&
            !r.options.config?.consolePublic &&
            // The 405 answers of addMethodNotAllowedRoutes (src/http/plumbing.ts) change nothing.
            !(r.options.config as { methodNotAllowed?: boolean } | undefined)?.methodNotAllowed,
        )
        .map((r) => r.key),
    ),
  ].sort();

export async function addOperator(
  app: FastifyInstance,
  name: string,
  role: 'admin' | 'viewer',
): Promise<{ operator_id: string; token: string }> {
  const res = await app.inject({
    method: 'POST',
    url: '/admin/v1/operators',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { name, role },
  });
  if (res.statusCode !== 201) throw new Error(`operator ${name}: ${res.statusCode} ${res.body}`);
  return res.json();
}

export interface AuditRow {
  actor: string;
  action: string;
  customer_id: number | null;
  target: string | null;
  request_id: string;
  ip: string;
  details: Record<string, unknown>;
}

/** Audit rows written so far (by one actor when given). */
export async function auditCount(t: TestApp, actor?: string): Promise<number> {
  const r = await t.ctx.db.query<{ n: number }>(
    'select count(*)::int as n from audit_events where $1::text is null or actor = $1',
    [actor ?? null],
  );
  return r.rows[0]!.n;
}

export async function auditRowsOf(t: TestApp, res: LightMyRequestResponse): Promise<AuditRow[]> {
  const r = await t.ctx.db.query<AuditRow>(
    `select actor, action, customer_id, target, request_id, ip, details from audit_events where request_id = $1`,
    [res.headers['x-request-id']],
  );
  return r.rows;
}

/** Sends one admin request with a token (and an Idempotency-Key for wallet writes). */
export function send(
  app: FastifyInstance,
  token: string,
  method: string,
  url: string,
  payload?: unknown,
): Promise<LightMyRequestResponse> {
  const idem = /\/wallet\/(topup|adjust)$/.test(url) ? { 'idempotency-key': `k-${Math.random()}` } : {};
  return app.inject({
    method: method as 'POST',
    url,
    headers: { authorization: `Bearer ${token}`, ...idem },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}
