// The fuzzer's public API requests, driven by the OpenAPI document: every operation, its path and
// query parameters and header parameters, its request body sampled from its schema (or a Telegram
// update for POST /bot/updates), now and then a stray query value or a malformed body.
import { botUpdate } from './bot-updates.ts';
import { isStranger, publicAuth } from './credentials.ts';
import { chance, pick, type Random } from './random.ts';
import type { FuzzCase, FuzzWorld } from './types.ts';
import { doc, resolve, type Schema, sample, urlValue } from './values.ts';

export const PUBLIC_OPS = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
);

/** One public request; `nextUpdateId` numbers the bot's updates. */
export function publicCase(r: Random, w: FuzzWorld, nextUpdateId: () => number): FuzzCase {
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
      const v = chance(r, 0.85) ? `fuzz-${Math.floor(r() * 1e9)}` : pick(r, ['', ' ', 'a'.repeat(300), 'é']);
      if (/^[\x20-\x7e]*$/.test(v)) headers[p.name.toLowerCase()] = v;
    }
  }
  if (chance(r, 0.1)) query.push(`${pick(r, ['x', 'q', 'limit'])}=${urlValue(r, [])}`);
  if (query.length) url += `?${query.join('&')}`;
  let body: string | undefined;
  const schema = op.requestBody?.content['application/json']?.schema;
  if (path === '/bot/updates') body = JSON.stringify(botUpdate(r, nextUpdateId()));
  else if (schema) body = JSON.stringify(sample(r, schema));
  if (body !== undefined && chance(r, 0.04)) body = pick(r, ['{', '[]', '"x"', '{"a":1,}', '\u0000', '']);
  if (body !== undefined) headers['content-type'] = 'application/json';
  return { listener: 'public', method, url, headers, body, stranger };
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
