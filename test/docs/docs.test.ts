// GET /docs (docs/reference/running.md#served-documentation): the HTML reference rendered from the OpenAPI document, with every
// asset served by the service itself: the page and each asset it references are fetched over a
// real socket and scanned for outside addresses, scripts and fonts.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openApiDocument } from '../../src/openapi/document.ts';
import { EXAMPLES } from '../../src/openapi/examples.ts';
import { DOCUMENTED_ERROR_STATUS } from '../../src/openapi/schemas.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { checkResponse } from '../helpers/openapi-check.ts';

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
    /<(?!\/?(?:a|br|code|div|ol|h[1-5]|html|head|body|header|li|link|main|meta|nav|p|pre|section|small|span|table|tbody|td|th|thead|title|tr|ul)\b)[a-z]/i,
  );
});

test('one error table per operation, and an example of each that matches the document', async () => {
  const html = await (await fetch(`${base}/docs`)).text();
  const doc = openApiDocument();
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item as Record<string, { operationId: string }>).map(([method, op]) => ({
      path,
      method,
      op,
    })),
  );
  // The error body's fields appear in the schemas (ErrorBody, JobError, the failed event) and
  // the redeem's 422 (a result or an error), not under every status of every operation.
  expect(html.split('<td><code>error_code</code></td>').length - 1).toBeLessThanOrEqual(4);
  expect(html.split('<table class="fields errors">').length - 1).toBe(operations.length);
  for (const { path, method, op } of operations) {
    const ex = EXAMPLES[op.operationId];
    if (['openapi', 'docs', 'docsStylesheet'].includes(op.operationId)) continue;
    expect(ex, op.operationId).toBeDefined();
    expect(html).toContain(`HTTP/1.1 ${ex!.status}`);
    const url = ex!.request.split('\n')[0]!.split(' ')[1]!;
    expect(url.split('?')[0]!.replace(/(job|evt)_[A-Za-z0-9]+/, '{id}')).toBe(path);
    expect(ex!.request.startsWith(method.toUpperCase())).toBe(true);
    const headers: Record<string, string> = {
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': 'req_4mV9dQ2sKp7LwX1bN8cZ3tYe',
      'svc-version': '1.0.0',
      'svc-cost': '0',
      'svc-idempotent-replay': 'false',
      'cache-control': 'no-store',
      'svc-quota-used': '12',
      'svc-quota-remaining': '88',
      'svc-balance-usd': '25',
      'ratelimit-limit': '30',
      'ratelimit-remaining': '29',
      'ratelimit-reset': '10',
    };
    const problems = checkResponse({
      method,
      url,
      status: ex!.status,
      headers,
      body: JSON.stringify(ex!.response),
    });
    expect(problems, op.operationId).toEqual([]);
  }
  // The page is a reference, not a wall: well under the 40,000-pixel page it was.
  expect(html.length).toBeLessThan(200_000);
});
