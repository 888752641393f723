// The fuzzer's admin API requests. The admin API has no OpenAPI document: its routes are read from
// the admin app's own route table (a new admin route is fuzzed without a list to update), path ids
// come from the world, query values from a pool of names, bodies are well-formed (to reach the
// happy paths) or carry hostile values in a pool of field names.
import { loadConfig } from '../../../src/config.ts';
import { buildAdminApp } from '../../../src/http/admin-app.ts';
import type { ServerContext } from '../../../src/http/context.ts';
import { createLogger } from '../../../src/logger.ts';
import { registerAdminRoutes } from '../../../src/routes/admin/index.ts';
import { adminAuth, isStranger } from './credentials.ts';
import { chance, pick, type Random } from './random.ts';
import type { FuzzCase, FuzzWorld } from './types.ts';
import { hostileValue, urlValue } from './values.ts';

/** Admin routes not sent: a backup copies the whole database and a rotation re-encrypts it. */
const ADMIN_SKIP = /^(GET \/admin\/v1\/backup|POST \/admin\/v1\/encryption\/rotate)$/;

const ADMIN_QUERY_NAMES = [
  'q',
  'status',
  'mode',
  'limit',
  'cursor',
  'from',
  'to',
  'customer_id',
  'format',
  'event',
  'state',
  'channel',
  'route',
  'kind',
  'action',
  'day',
];
const ADMIN_FIELDS = [
  'name',
  'label',
  'daily_limit',
  'per_request_usd',
  'overage',
  'active',
  'required',
  'expires_at',
  'mode',
  'scopes',
  'allowed_ips',
  'usd',
  'category',
  'note',
  'reason',
  'role',
  'codes',
  'token',
  'outcome',
  'uc',
];

/** Well-formed admin bodies, so the fuzzer also reaches the routes' happy paths. */
function validAdminBody(r: Random, route: string): unknown {
  if (route.endsWith('/customers')) return { name: `fuzz ${Math.floor(r() * 1e6)}` };
  if (route.endsWith('/plan'))
    return {
      label: 'fuzz',
      daily_limit: pick(r, [null, 0, 100]),
      per_request_usd: '0.01',
      overage: true,
      active: true,
    };
  if (route.endsWith('/subscription')) return { required: chance(r, 0.5), expires_at: null };
  if (route.endsWith('/keys')) return { mode: pick(r, ['test', 'live']), scopes: ['read'], label: 'fuzz' };
  if (route.endsWith('/topup') || route.endsWith('/adjust'))
    return { mode: pick(r, ['test', 'live']), usd: pick(r, ['1.00', '0.000001', '-1', '1e3']), note: 'fuzz' };
  if (route.endsWith('/operators'))
    return { name: `op${Math.floor(r() * 1e6)}`, role: pick(r, ['viewer', 'admin']) };
  if (route.endsWith('/stock'))
    return {
      mode: 'test',
      category: pick(r, ['60', '325', 'x']),
      codes: [`FUZZ${Math.floor(r() * 1e9)}ABCD`],
    };
  return {};
}

function adminBody(r: Random, route: string): unknown {
  const roll = r();
  if (roll < 0.45) return validAdminBody(r, route);
  const body = (roll < 0.75 ? validAdminBody(r, route) : {}) as Record<string, unknown>;
  const n = 1 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) body[pick(r, ADMIN_FIELDS)] = hostileValue(r);
  return body;
}

/** The admin routes the fuzzer sends (without the skipped ones and HEAD). */
export const fuzzedAdminRoutes = (w: FuzzWorld) =>
  w.adminRoutes.filter((route) => !ADMIN_SKIP.test(route) && !route.startsWith('HEAD '));

/** Where a route's `:param` values come from. */
export function adminPathIds(w: FuzzWorld): Record<string, () => string[]> {
  return {
    id: () => [
      String(w.ids.spareCustomer),
      String(w.ids.customer),
      ...w.ids.jobIds,
      ...w.ids.operatorIds,
      '1',
    ],
    keyId: () => w.ids.keyIds,
    jobId: () => w.ids.jobIds,
    position: () => ['1', '2', '0'],
  } as Record<string, () => string[]>;
}

/** One admin request: a route, its ids, a few query values, a body. */
export function adminCase(
  r: Random,
  w: FuzzWorld,
  adminRoutes: string[],
  pathIds: Record<string, () => string[]>,
): FuzzCase {
  const route = pick(r, adminRoutes);
  const [method, path] = route.split(' ') as [string, string];
  const headers: Record<string, string> = { ...adminAuth(r, w) };
  let url = path.replace(/:(\w+)/g, (_m, name: string) => urlValue(r, pathIds[name]?.() ?? ['1']));
  const query: string[] = [];
  const n = chance(r, 0.5) ? Math.floor(r() * 3) + 1 : 0;
  for (let i = 0; i < n; i++)
    query.push(`${pick(r, ADMIN_QUERY_NAMES)}=${urlValue(r, ['1', 'test', 'live', '10', 'json', 'csv'])}`);
  if (query.length) url += `?${query.join('&')}`;
  let body: string | undefined;
  if (method !== 'GET' && method !== 'DELETE') {
    body = JSON.stringify(adminBody(r, path));
    headers['content-type'] = 'application/json';
    if (/wallet\/(topup|adjust)$/.test(path) && chance(r, 0.9))
      headers['idempotency-key'] = `fuzz-${Math.floor(r() * 1e12)}`;
  }
  // The console's sign-in takes a token from its body: a wrong one counts against the address, so
  // it is a stranger's. Only the sign-in: the console's pages and assets sent from the stranger's
  // address met its lockout (a 429 before the route) whatever their credential.
  const signIn = method === 'POST' && path === '/console/session';
  return { listener: 'admin', method, url, headers, body, stranger: signIn || isStranger(w, headers) };
}

/**
 * The admin API's routes as `METHOD /path/:param`, read from the admin app itself (built, never
 * listening, never touching a database): a new admin route is fuzzed without a list to update.
 */
export async function adminRouteTable(): Promise<string[]> {
  const routes: string[] = [];
  const ctx = { config: loadConfig({}), logger: createLogger('silent'), clock: { now: () => new Date() } };
  const app = await buildAdminApp(ctx as unknown as ServerContext, (a, c, sessions) => {
    a.addHook('onRoute', (route) => {
      if ((route.config as { methodNotAllowed?: boolean } | undefined)?.methodNotAllowed) return;
      for (const method of [route.method].flat()) routes.push(`${method} ${route.url}`);
    });
    registerAdminRoutes(a, c, sessions);
  });
  await app.close();
  return routes;
}
