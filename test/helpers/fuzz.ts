// The project's own fuzzer: requests generated from the public OpenAPI document, the admin app's
// route table (the admin API has no OpenAPI document; its routes are read from the app itself)
// and the shapes of Telegram updates, with valid, boundary and hostile values and every kind of
// credential. Every answer is checked: no 5xx, a request id, the contract's error body on every
// error, and on the public API the document (documented status, headers, body schema).
// Used by test/fuzz.test.ts (a short seeded run) and bench/fuzz.ts (a long one, several processes).
//
// Values come from a seeded generator over fixed pools rather than fast-check or an OpenAPI
// sampler: the pools are the point (the NUL, lone surrogates, boundary lengths and numbers that
// broke things before), fast-check's shrinking needs a property run in-process and cannot shrink
// against a server shared by thousands of requests in flight, and the document's schemas are
// small enough that a 40-line sampler covers them. The same seed gives the same requests.
import { Agent, request } from 'undici';
import { loadConfig } from '../../src/config.ts';
import { buildAdminApp } from '../../src/http/admin-app.ts';
import type { ServerContext } from '../../src/http/context.ts';
import { createLogger } from '../../src/logger.ts';
import { openApiDocument } from '../../src/openapi/document.ts';
import { registerAdminRoutes } from '../../src/routes/admin/index.ts';
import { checkResponse } from './openapi-match.ts';

export type Listener = 'public' | 'admin';

export interface FuzzCase {
  listener: Listener;
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /**
   * Sent from another loopback address (127.0.0.2): requests with a bad or no credential, so the
   * per-address limits they run into (the admin lockout, the unknown-key limit) are theirs alone
   * and the requests with good credentials still reach the routes.
   */
  stranger?: boolean;
}

export interface Finding {
  case: FuzzCase;
  status: number;
  problems: string[];
  body: string;
}

/** What the fuzzer knows of the service it talks to: its addresses, credentials and some ids. */
export interface FuzzWorld {
  publicUrl: string;
  adminUrl: string;
  /** Admin routes as `METHOD /path/:param` (from the admin app's own route table). */
  adminRoutes: string[];
  keys: { live: string; test: string; readOnly: string; ipLimited: string; revoked: string };
  admin: { root: string; viewer: string; revoked: string };
  botSecret: string | null;
  ids: { customer: number; spareCustomer: number; keyIds: string[]; jobIds: string[]; operatorIds: string[] };
}

// ---- a seeded generator -------------------------------------------------------------------

export type Random = () => number;

/** mulberry32: small, fast, good enough to pick from pools; the same seed, the same sequence. */
export function seeded(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = <T>(r: Random, list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
const chance = (r: Random, p: number) => r() < p;

// ---- value pools ---------------------------------------------------------------------------

/** Strings that broke something once, or could: NUL, lone surrogates, boundaries, injections. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udc00',
  '\udc00\ud800',
  '😀',
  '\u202e\u0645\u0631\u062d\u0628\u0627',
  '\t\r\n',
  "' or 1=1 --",
  '"; drop table customers; --',
  '../../etc/passwd',
  '%00',
  '%ED%A0%80',
  '%zz',
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the text itself is the hostile value (log4shell's)
  '${jndi:ldap://x}',
  '__proto__',
  'constructor',
  '-1',
  '0',
  '1e309',
  'NaN',
  '99999999999999999999999',
  '0x10',
  'null',
  'true',
  'a'.repeat(101),
  'b'.repeat(256),
  'c'.repeat(5000),
  'é'.repeat(129),
];
const HOSTILE_NUMBERS: readonly number[] = [
  0,
  -1,
  1,
  2 ** 31,
  2 ** 53,
  -(2 ** 53),
  1.5,
  1e308,
  -1e308,
  0.1,
  1e-7,
  10_000_000,
  10_000_001,
];
const WEIRD_VALUES: readonly unknown[] = [null, true, false, [], {}, [null], { a: 1 }, [1, 'a']];

function hostileValue(r: Random): unknown {
  const roll = r();
  if (roll < 0.6) return pick(r, HOSTILE_STRINGS);
  if (roll < 0.85) return pick(r, HOSTILE_NUMBERS);
  return pick(r, WEIRD_VALUES);
}

/** A path or query value as it travels: encoded, or raw hostile bytes already percent-encoded. */
function urlValue(r: Random, valid: readonly string[]): string {
  const roll = r();
  if (roll < 0.5 && valid.length) return encodeURIComponent(pick(r, valid));
  const s = pick(r, HOSTILE_STRINGS);
  if (s.startsWith('%')) return s; // already encoded bytes (NUL, a surrogate's CESU bytes, bad escapes)
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80'; // a lone surrogate has no UTF-8: its CESU-8 bytes stand in for it
  }
}

// ---- JSON schema sampling (the public document) --------------------------------------------

type Schema = Record<string, unknown>;
const doc = openApiDocument() as unknown as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};
interface Operation {
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  security?: Record<string, unknown>[];
}

function resolve(schema: Schema): Schema {
  const ref = schema.$ref;
  if (typeof ref === 'string') return resolve(doc.components.schemas[ref.split('/').pop()!] ?? {});
  return schema;
}

/** A value that fits `schema` most of the time, and a boundary or hostile one otherwise. */
function sample(r: Random, raw: Schema, depth = 0): unknown {
  const schema = resolve(raw);
  if (depth > 4) return null;
  if (chance(r, 0.08)) return hostileValue(r);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return pick(r, schema.enum);
  if (Array.isArray(schema.examples) && chance(r, 0.5)) return pick(r, schema.examples);
  if (schema.example !== undefined && chance(r, 0.5)) return schema.example;
  const alternatives = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (alternatives) return sample(r, pick(r, alternatives), depth + 1);
  const type = Array.isArray(schema.type) ? pick(r, schema.type as string[]) : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set((schema.required ?? []) as string[]);
      for (const [name, ps] of Object.entries(props)) {
        if (required.has(name) ? chance(r, 0.95) : chance(r, 0.5)) out[name] = sample(r, ps, depth + 1);
      }
      if (chance(r, 0.05)) out[pick(r, HOSTILE_STRINGS)] = hostileValue(r);
      return out;
    }
    case 'array': {
      const n = pick(r, [0, 1, 1, 2, 3, 10, 101]);
      return Array.from({ length: n }, () => sample(r, (schema.items ?? {}) as Schema, depth + 1));
    }
    case 'integer':
      return pick(r, [0, 1, 5, 60, 325, 660, 100, -1, 2 ** 53, ...(schema.maximum ? [schema.maximum] : [])]);
    case 'number':
      return pick(r, [0, 0.5, 1, 12.34, -1]);
    case 'boolean':
      return chance(r, 0.5);
    case 'string': {
      if (schema.format === 'uri')
        return pick(r, ['https://example.com/hook', 'http://127.0.0.1/x', 'ftp://x']);
      if (schema.format === 'date-time') return pick(r, ['2026-11-22T09:00:00Z', '2026-13-01T00:00:00Z']);
      const max = typeof schema.maxLength === 'number' ? schema.maxLength : 12;
      return pick(r, ['5123456789', 'ABCD1234EFGH5678', 'x', 'a'.repeat(max), 'a'.repeat(max + 1)]);
    }
    default:
      return hostileValue(r);
  }
}

// ---- requests ------------------------------------------------------------------------------

const PUBLIC_OPS = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
);

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

function publicAuth(r: Random, w: FuzzWorld, op: Operation): Record<string, string> {
  if (op.security?.some((s) => 'telegramSecret' in s)) {
    const roll = r();
    const secret = roll < 0.7 ? w.botSecret : roll < 0.85 ? 'wrong-secret' : null;
    return secret ? { 'x-telegram-bot-api-secret-token': secret } : {};
  }
  return keyAuth(r, w);
}

function keyAuth(r: Random, w: FuzzWorld): Record<string, string> {
  const roll = r();
  const key =
    roll < 0.35
      ? w.keys.test
      : roll < 0.5
        ? w.keys.live
        : roll < 0.6
          ? w.keys.readOnly
          : roll < 0.67
            ? w.keys.ipLimited
            : roll < 0.74
              ? w.keys.revoked
              : roll < 0.8
                ? `rk_test_${'A'.repeat(32)}`
                : roll < 0.85
                  ? pick(r, ['rk_live_short', 'sk_test_x', '', 'rk_test_\u00e9', 'rk_test_%00'])
                  : null;
  if (key === null)
    return chance(r, 0.5) ? {} : { authorization: pick(r, ['Basic YTpi', 'Bearer', 'bearer  x']) };
  return { authorization: `Bearer ${key}` };
}

function adminAuth(r: Random, w: FuzzWorld): Record<string, string> {
  const roll = r();
  const token =
    roll < 0.6
      ? w.admin.root
      : roll < 0.72
        ? w.admin.viewer
        : roll < 0.8
          ? w.admin.revoked
          : roll < 0.88
            ? `adm_${'x'.repeat(40)}`
            : null;
  return token === null ? {} : { authorization: `Bearer ${token}` };
}

/** Telegram update shapes (Bot API `Update`): messages, commands, buttons, edits, odd ones. */
function botUpdate(r: Random, updateId: number): unknown {
  // Mostly people the bot has not met, each in a chat of their own (Telegram allows a chat one
  // message a second); a few odd ids.
  const id = chance(r, 0.9) ? 80_000_000 + Math.floor(r() * 1e8) : pick(r, [1, 2 ** 53]);
  const from = { id, is_bot: false, first_name: 'fuzz' };
  const chat = { id: from.id, type: 'private' };
  const text = chance(r, 0.6)
    ? pick(r, [
        '/start',
        '/help',
        '/balance',
        '/me',
        '/redeem 5123456789 ABCD1234',
        '/link xyz',
        '/stock',
        'hello',
      ])
    : pick(r, HOSTILE_STRINGS);
  const message = { message_id: Math.floor(r() * 1e6), date: 1795000000, chat, from, text };
  const roll = r();
  if (roll < 0.55) return { update_id: updateId, message };
  if (roll < 0.7)
    return {
      update_id: updateId,
      callback_query: {
        id: String(updateId),
        from,
        chat_instance: '1',
        data: pick(r, ['x', 'redeem:1', ...HOSTILE_STRINGS]),
        message,
      },
    };
  if (roll < 0.78) return { update_id: updateId, edited_message: message };
  if (roll < 0.85) return { update_id: updateId, my_chat_member: { chat, from, date: 1795000000 } };
  if (roll < 0.92) return { update_id: pick(r, [updateId, -1, 0, 1.5, '1', null]), message: sample(r, {}) };
  return sample(r, { type: 'object', properties: { update_id: { type: 'integer' } } });
}

/** The next request of a seeded stream. */
export function caseGenerator(w: FuzzWorld, seed: number): () => FuzzCase {
  const r = seeded(seed);
  let updateId = 500_000_000 + (seed % 1000) * 100_000;
  const adminRoutes = w.adminRoutes.filter((route) => !ADMIN_SKIP.test(route) && !route.startsWith('HEAD '));
  const pathIds = {
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

  return () => {
    const roll = r();
    if (roll < 0.5) {
      let { path, method, op } = pick(r, PUBLIC_OPS);
      // Each update the bot acts on sends a reply, and Telegram allows about 30 a second: the bot's
      // share stays small so that the run measures the listeners, not Telegram's limit.
      if (path === '/bot/updates' && chance(r, 0.8)) ({ path, method, op } = pick(r, PUBLIC_OPS));
      const headers: Record<string, string> = { ...publicAuth(r, w, op) };
      const stranger = isStranger(w, headers);
      let url = path.replace(/\{(\w+)\}/g, () => urlValue(r, w.ids.jobIds));
      const query: string[] = [];
      for (const p of op.parameters ?? []) {
        if (p.in === 'query' && chance(r, 0.5)) query.push(`${p.name}=${queryValue(r, p.schema ?? {})}`);
        if (p.in === 'header' && chance(r, 0.9)) {
          const v = chance(r, 0.85)
            ? `fuzz-${Math.floor(r() * 1e9)}`
            : pick(r, ['', ' ', 'a'.repeat(300), 'é']);
          if (/^[\x20-\x7e]*$/.test(v)) headers[p.name.toLowerCase()] = v;
        }
      }
      if (chance(r, 0.1)) query.push(`${pick(r, ['x', 'q', 'limit'])}=${urlValue(r, [])}`);
      if (query.length) url += `?${query.join('&')}`;
      let body: string | undefined;
      const schema = op.requestBody?.content['application/json']?.schema;
      if (path === '/bot/updates') body = JSON.stringify(botUpdate(r, updateId++));
      else if (schema) body = JSON.stringify(sample(r, schema));
      if (body !== undefined && chance(r, 0.04)) body = pick(r, ['{', '[]', '"x"', '{"a":1,}', '\u0000', '']);
      if (body !== undefined) headers['content-type'] = 'application/json';
      return { listener: 'public', method, url, headers, body, stranger };
    }
    if (roll < 0.95) {
      const route = pick(r, adminRoutes);
      const [method, path] = route.split(' ') as [string, string];
      const headers: Record<string, string> = { ...adminAuth(r, w) };
      let url = path.replace(/:(\w+)/g, (_m, name: string) => urlValue(r, pathIds[name]?.() ?? ['1']));
      const query: string[] = [];
      const n = chance(r, 0.5) ? Math.floor(r() * 3) + 1 : 0;
      for (let i = 0; i < n; i++)
        query.push(
          `${pick(r, ADMIN_QUERY_NAMES)}=${urlValue(r, ['1', 'test', 'live', '10', 'json', 'csv'])}`,
        );
      if (query.length) url += `?${query.join('&')}`;
      let body: string | undefined;
      if (method !== 'GET' && method !== 'DELETE') {
        body = JSON.stringify(adminBody(r, path));
        headers['content-type'] = 'application/json';
        if (/wallet\/(topup|adjust)$/.test(path) && chance(r, 0.9))
          headers['idempotency-key'] = `fuzz-${Math.floor(r() * 1e12)}`;
      }
      // The console's sign-in takes a token from its body: a wrong one counts against the address.
      const signIn = path.startsWith('/console');
      return { listener: 'admin', method, url, headers, body, stranger: signIn || isStranger(w, headers) };
    }
    // Anything else: unknown paths, odd methods, the console's pages.
    const listener: Listener = chance(r, 0.5) ? 'public' : 'admin';
    const method = pick(r, ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PURGE']);
    const url = pick(r, [
      '/',
      '/v1',
      '/v1/',
      '/admin/v1/',
      '/console/',
      `/v1/${urlValue(r, [])}`,
      '/admin/v1/customers/1/..%2f..%2fx',
      '/%2e%2e/',
    ]);
    const headers = listener === 'admin' ? adminAuth(r, w) : publicAuth(r, w, {});
    return { listener, method, url, headers, stranger: isStranger(w, headers) };
  };
}

/** Whether the request's credential is not one the world issued and still honours. */
function isStranger(w: FuzzWorld, headers: Record<string, string>): boolean {
  const auth = headers.authorization;
  if (headers['x-telegram-bot-api-secret-token'] === w.botSecret && w.botSecret) return false;
  if (auth === undefined) return true;
  const good = [w.keys.live, w.keys.test, w.keys.readOnly, w.keys.ipLimited, w.admin.root, w.admin.viewer];
  return !good.some((k) => auth === `Bearer ${k}`);
}

function queryValue(r: Random, schema: Schema): string {
  const s = resolve(schema);
  const valid = Array.isArray(s.enum)
    ? (s.enum as unknown[]).map(String)
    : s.type === 'integer'
      ? ['1', '10', '100', '500', '501', '0', '-1']
      : ['test', 'live', '2026-11-22', '2026-11-22T00:00:00Z'];
  return urlValue(r, valid);
}

// ---- answers -------------------------------------------------------------------------------

const ERROR_KEYS = ['error_code', 'message', 'ok', 'request_id'];

/** What is wrong with an answer; empty when nothing is. */
export function checkAnswer(
  c: FuzzCase,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: string,
): string[] {
  const problems: string[] = [];
  if (status >= 500) problems.push(`5xx: ${status}`);
  const id = headers['x-request-id'];
  if (typeof id !== 'string' || !/^req_[A-Za-z0-9]+$/.test(id)) problems.push('no request id');
  if (status >= 400 && c.method !== 'HEAD') {
    try {
      const parsed = JSON.parse(body) as Record<string, unknown>;
      const keys = Object.keys(parsed)
        .filter((k) => k !== 'retry_after_sec' && k !== 'details')
        .sort();
      if (
        parsed.ok !== false ||
        typeof parsed.error_code !== 'string' ||
        typeof parsed.message !== 'string' ||
        parsed.request_id !== id ||
        !ERROR_KEYS.every((k) => keys.includes(k))
      )
        problems.push('not the error body');
    } catch {
      problems.push('error body is not JSON');
    }
  }
  if (
    c.listener === 'public' &&
    c.method !== 'HEAD' &&
    (c.url.startsWith('/v1/') || c.url.startsWith('/bot/'))
  ) {
    const found = checkResponse({ method: c.method, url: c.url, status, headers, body });
    for (const p of found) problems.push(`document: ${p}`);
  }
  if (c.listener === 'admin' && status >= 200 && status < 300 && c.method !== 'HEAD') {
    const type = String(headers['content-type'] ?? '');
    if (type.startsWith('application/json')) {
      try {
        JSON.parse(body);
      } catch {
        problems.push('a 2xx JSON body that is not JSON');
      }
    }
  }
  return problems;
}

// ---- running -------------------------------------------------------------------------------

export interface FuzzTotals {
  requests: number;
  byStatus: Record<string, number>;
  /** Answers by listener, status and error_code (`admin 429 rate_limited`). */
  byAnswer: Record<string, number>;
  fiveXx: number;
  noRequestId: number;
  schemaMismatches: number;
  findings: Finding[];
  /** Requests that got no answer (connection error, client timeout). */
  transportErrors: number;
}

export const emptyTotals = (): FuzzTotals => ({
  requests: 0,
  byStatus: {},
  byAnswer: {},
  fiveXx: 0,
  noRequestId: 0,
  schemaMismatches: 0,
  findings: [],
  transportErrors: 0,
});

export interface RunOptions {
  world: FuzzWorld;
  seed: number;
  /** Stop after this many requests (default unlimited). */
  requests?: number;
  /** Stop after this long (default unlimited). */
  durationMs?: number;
  /** Requests in flight at once (default 16). */
  concurrency?: number;
  /** Findings kept in full (the counts go on). Default 50. */
  keepFindings?: number;
  /** Called every second with the totals so far. */
  onProgress?: (t: FuzzTotals) => void;
}

/** Sends generated requests until a limit is reached; every answer is checked. */
export async function runFuzz(o: RunOptions): Promise<FuzzTotals> {
  const next = caseGenerator(o.world, o.seed);
  const totals = emptyTotals();
  const agent = (localAddress: string) =>
    new Agent({ connections: o.concurrency ?? 16, pipelining: 1, keepAliveTimeout: 10_000, localAddress });
  const trusted = agent('127.0.0.1');
  const stranger = agent('127.0.0.2');
  const deadline = o.durationMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + o.durationMs;
  const limit = o.requests ?? Number.POSITIVE_INFINITY;
  let started = 0;
  const progress = o.onProgress ? setInterval(() => o.onProgress!(totals), 1000) : undefined;
  const keep = o.keepFindings ?? 50;
  const kinds = new Set<string>();

  async function one(c: FuzzCase) {
    const base = c.listener === 'public' ? o.world.publicUrl : o.world.adminUrl;
    let status = 0;
    let headers: Record<string, string | string[] | undefined> = {};
    let body = '';
    try {
      const res = await request(`${base}${c.url}`, {
        method: c.method as 'GET',
        headers: c.headers,
        body: c.body,
        dispatcher: c.stranger ? stranger : trusted,
        headersTimeout: 60_000,
        bodyTimeout: 60_000,
      });
      status = res.statusCode;
      headers = res.headers;
      body = await res.body.text();
    } catch (err) {
      totals.transportErrors++;
      if (totals.findings.length < keep)
        totals.findings.push({
          case: c,
          status: 0,
          problems: [`no answer: ${(err as Error).message}`],
          body: '',
        });
      return;
    }
    totals.requests++;
    totals.byStatus[status] = (totals.byStatus[status] ?? 0) + 1;
    const code = status >= 400 ? (/"error_code":"(\w+)"/.exec(body)?.[1] ?? '?') : 'ok';
    const answer = `${c.listener} ${status} ${code}`;
    totals.byAnswer[answer] = (totals.byAnswer[answer] ?? 0) + 1;
    const problems = checkAnswer(c, status, headers, body);
    if (problems.length === 0) return;
    if (problems.some((p) => p.startsWith('5xx'))) totals.fiveXx++;
    if (problems.includes('no request id')) totals.noRequestId++;
    if (problems.some((p) => p.startsWith('document:') || p.includes('error body') || p.includes('2xx JSON')))
      totals.schemaMismatches++;
    // The first of each kind is kept, so a frequent finding cannot hide a rare one.
    const kind = `${c.listener} ${c.method} ${templateOf(c.url)} ${status} ${problems.join('; ')}`;
    if (totals.findings.length < keep && !kinds.has(kind)) {
      kinds.add(kind);
      totals.findings.push({ case: c, status, problems, body: body.slice(0, 400) });
    }
  }

  async function lane() {
    while (started < limit && Date.now() < deadline) {
      started++;
      await one(next());
    }
  }
  try {
    await Promise.all(Array.from({ length: o.concurrency ?? 16 }, lane));
  } finally {
    if (progress) clearInterval(progress);
    await Promise.all([trusted.close(), stranger.close()]);
  }
  return totals;
}

// ---- the world ------------------------------------------------------------------------------

async function call(url: string, token: string, method: string, path: string, body?: unknown) {
  const res = await request(`${url}${path}`, {
    method: method as 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'idempotency-key': `world-${Math.random().toString(36).slice(2)}`,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * Creates what the fuzzer's requests refer to, through the admin and public APIs as an operator
 * and a merchant would: a customer with a plan, a wallet, keys of every kind and a few jobs; a
 * spare customer the admin requests may disable, revoke and top up; a viewer and a revoked operator.
 */
export async function prepareWorld(o: {
  publicUrl: string;
  adminUrl: string;
  rootToken: string;
  adminRoutes: string[];
  botSecret?: string | null;
}): Promise<FuzzWorld> {
  const a = (method: string, path: string, body?: unknown) =>
    call(o.adminUrl, o.rootToken, method, path, body);
  const customer = Number((await a('POST', '/admin/v1/customers', { name: 'fuzz merchant' })).customer_id);
  const spare = Number((await a('POST', '/admin/v1/customers', { name: 'fuzz spare' })).customer_id);
  for (const id of [customer, spare]) {
    await a('PUT', `/admin/v1/customers/${id}/plan`, {
      label: 'fuzz',
      daily_limit: null,
      per_request_usd: '0',
      overage: true,
      active: true,
    });
    for (const mode of ['test', 'live'])
      await a('POST', `/admin/v1/customers/${id}/wallet/topup`, { mode, usd: '1000', note: 'fuzz' });
  }
  const key = async (id: number, spec: Record<string, unknown>) =>
    a('POST', `/admin/v1/customers/${id}/keys`, spec) as Promise<{ key: string; key_id: string }>;
  const live = await key(customer, { mode: 'live' });
  const test = await key(customer, { mode: 'test' });
  const readOnly = await key(customer, { mode: 'test', scopes: ['read'] });
  const ipLimited = await key(customer, { mode: 'test', allowed_ips: ['203.0.113.7'] });
  const revoked = await key(customer, { mode: 'test' });
  await a('POST', `/admin/v1/keys/${revoked.key_id}/revoke`, {});
  const spareKeys = [await key(spare, { mode: 'test' }), await key(spare, { mode: 'live' })];
  const viewer = await a('POST', '/admin/v1/operators', { name: 'fuzz-viewer', role: 'viewer' });
  const gone = await a('POST', '/admin/v1/operators', { name: 'fuzz-gone', role: 'admin' });
  await a('POST', `/admin/v1/operators/${gone.operator_id ?? gone.id}/revoke`, {});
  const jobIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await call(o.publicUrl, test.key, 'POST', '/v1/redeem', {
      player_id: '5123456789',
      codes: [`OK-FUZZ${Date.now().toString(36)}${i}`.toUpperCase()],
      async: true,
    }).catch(() => null);
    if (res && typeof res.job_id === 'string') jobIds.push(res.job_id);
  }
  return {
    publicUrl: o.publicUrl,
    adminUrl: o.adminUrl,
    adminRoutes: o.adminRoutes,
    keys: {
      live: live.key,
      test: test.key,
      readOnly: readOnly.key,
      ipLimited: ipLimited.key,
      revoked: revoked.key,
    },
    admin: { root: o.rootToken, viewer: String(viewer.token), revoked: String(gone.token) },
    botSecret: o.botSecret ?? null,
    ids: {
      customer,
      spareCustomer: spare,
      keyIds: spareKeys.map((k) => k.key_id),
      jobIds: jobIds.length ? jobIds : ['job_0000000000000000000000'],
      operatorIds: [String(gone.operator_id ?? gone.id)],
    },
  };
}

/** A URL's path with its ids and values folded, so answers of one route group together. */
export const templateOf = (url: string) => url.split('?')[0]!.replace(/\/[^/]*[\d%][^/]*/g, '/…');

/** A finding as one line a person can replay with curl. */
export function describeFinding(f: Finding): string {
  const c = f.case;
  return `${c.listener} ${c.method} ${c.url} ${JSON.stringify(c.headers)} ${c.body?.slice(0, 200) ?? ''} → ${f.status}: ${f.problems.join('; ')} ${f.body.slice(0, 200)}`;
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
