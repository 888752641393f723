// GET /docs (contract 12.9): the HTML reference rendered from the OpenAPI document, with every
// asset served by the service itself: the page and each asset it references are fetched over a
// real socket and scanned for outside addresses, scripts and fonts.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openApiDocument } from '../src/openapi/document.ts';
import { DOCUMENTED_ERROR_STATUS } from '../src/openapi/schemas.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
  await t.api.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.api.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t.close();
});

/** Any absolute or protocol-relative URL. */
const EXTERNAL =
  /\b(?:https?|wss?|ftp):\/\/[\w[]|(?:src|href|action)\s*=\s*["']?\/\/|url\(\s*["']?(?:[a-z]+:)?\/\//gi;

test('GET /docs: an HTML reference of every operation, error code and schema, without a key', async () => {
  const res = await fetch(`${base}/docs`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  const csp = res.headers.get('content-security-policy') ?? '';
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("style-src 'self'");
  expect(csp).not.toMatch(/unsafe|https?:/);
  const html = await res.text();
  const doc = openApiDocument();
  for (const path of Object.keys(doc.paths)) expect(html).toContain(`<code>${path}</code>`);
  for (const code of Object.keys(DOCUMENTED_ERROR_STATUS).filter((c) => c !== 'method_not_allowed'))
    expect(html, code).toContain(`&#34;${code}&#34;`);
  for (const name of Object.keys(doc.components.schemas)) expect(html).toContain(`id="schema-${name}"`);
  for (const name of Object.keys(doc.components.headers)) expect(html).toContain(`id="header-${name}"`);
  expect(html).toContain('event redeem.completed');
  expect(html).toContain('SVC-Signature');
});

test('the page and every asset it references come from the service; nothing points outside', async () => {
  const html = await (await fetch(`${base}/docs`)).text();
  expect(html.match(EXTERNAL)).toBeNull();
  expect(html).not.toMatch(/<script|<iframe|<object|<embed|@import|@font-face/i);
  const refs = [...html.matchAll(/\b(?:src|href)="([^"#][^"]*)"/g)].map((m) => m[1]!);
  expect(refs.sort()).toEqual(['/docs/assets/reference.css', '/v1/openapi.json', '/v1/openapi.json']);
  for (const ref of new Set(refs)) {
    expect(ref.startsWith('/')).toBe(true);
    const asset = await fetch(`${base}${ref}`);
    expect(asset.status, ref).toBe(200);
    const text = await asset.text();
    expect(text.match(EXTERNAL), ref).toBeNull();
    if (ref.endsWith('.css')) {
      expect(asset.headers.get('content-type')).toBe('text/css; charset=utf-8');
      expect(text).not.toMatch(/@import|@font-face|url\(/i);
    }
  }
  // Every in-page link lands on an anchor of the page.
  const ids = new Set([...html.matchAll(/\bid="([^"]+)"/g)].map((m) => m[1]));
  for (const [, target] of html.matchAll(/href="#([^"]+)"/g)) expect(ids.has(target), target).toBe(true);
});

test('descriptions are escaped, not HTML', async () => {
  const html = await (await fetch(`${base}/docs`)).text();
  // The sandbox description names `rk_test_`; the arrow and quotes of descriptions are text.
  expect(html).toContain('<code>rk_test_</code>');
  expect(html).not.toMatch(
    /<(?!\/?(?:a|br|code|div|ol|h[1-5]|html|head|body|header|li|link|main|meta|nav|p|section|small|span|table|tbody|td|th|thead|title|tr|ul)\b)[a-z]/i,
  );
});
