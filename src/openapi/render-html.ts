// The HTML reference of GET /docs, rendered on the server from the OpenAPI document. No script,
// no font, no outside address: the page and its one stylesheet are served by the service and the
// Content-Security-Policy allows nothing else. (The ready-made renderers weigh megabytes of
// script, need inline styles or eval under a strict policy, and some fetch fonts or a validator
// from outside; this API is small enough that a plain page reads better.)
import type { OpenApiDocument } from './document.ts';
import { EXAMPLES } from './examples.ts';
import { DOCS_CSS_PATH } from './operations.ts';
import type { JsonSchema } from './schemas.ts';

const esc = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Inline markdown of the document's descriptions: `code` only; everything else is text. */
const md = (s: unknown) =>
  s === undefined ? '' : esc(s).replace(/`([^`]+)`/g, (_m, code: string) => `<code>${code}</code>`);

const refName = (ref: string) => ref.split('/').pop() ?? ref;
const anchor = (kind: string, name: string) => `${kind}-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;

type Schema = JsonSchema & {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  oneOf?: Schema[];
  additionalProperties?: Schema | boolean;
  enum?: unknown[];
  const?: unknown;
  description?: string;
};

function typeLabel(s: Schema): string {
  if (s.$ref) return `<a href="#${anchor('schema', refName(s.$ref))}">${esc(refName(s.$ref))}</a>`;
  if (s.oneOf) return s.oneOf.map(typeLabel).join(' | ');
  if (s.const !== undefined) return `<code>${esc(JSON.stringify(s.const))}</code>`;
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : ['any'];
  return types.map((t) => (t === 'array' && s.items ? `array of ${typeLabel(s.items)}` : esc(t))).join(' | ');
}

function constraints(s: Schema): string {
  const parts: string[] = [];
  if (s.enum) parts.push(`one of ${s.enum.map((v) => `<code>${esc(JSON.stringify(v))}</code>`).join(', ')}`);
  for (const k of [
    'minimum',
    'maxLength',
    'minLength',
    'minItems',
    'maxItems',
    'minProperties',
    'pattern',
    'format',
  ]) {
    if (s[k] !== undefined) parts.push(`${k} <code>${esc(s[k])}</code>`);
  }
  if (s.uniqueItems) parts.push('distinct items');
  return parts.join('; ');
}

/** A schema as a table of its fields (nested objects indented), or one line for a plain type. */
function schemaBlock(s: Schema, depth = 0): string {
  if (s.oneOf && !s.properties) {
    const variants = s.oneOf.map((v) => `<li>${v.properties ? schemaBlock(v, depth) : typeLabel(v)}</li>`);
    return `<p>One of:</p><ol class="variants">${variants.join('')}</ol>`;
  }
  if (!s.properties) {
    const extra = constraints(s);
    return `<p class="type">${typeLabel(s)}${extra ? ` — ${extra}` : ''}</p>${s.description ? `<p>${md(s.description)}</p>` : ''}`;
  }
  const rows = fieldRows(s, '', depth);
  return `${s.description && depth === 0 ? `<p>${md(s.description)}</p>` : ''}<table class="fields"><thead><tr><th>Field</th><th>Type</th><th>Notes</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function fieldRows(s: Schema, prefix: string, depth: number): string {
  let out = '';
  for (const [name, prop] of Object.entries(s.properties ?? {})) {
    const req = s.required?.includes(name) ? '<span class="req">required</span> ' : '';
    const notes = [md(prop.description), constraints(prop)].filter(Boolean).join('<br>');
    out += `<tr><td><code>${esc(prefix + name)}</code></td><td>${req}${typeLabel(prop)}</td><td>${notes}</td></tr>`;
    if (prop.properties && depth < 3) out += fieldRows(prop, `${prefix + name}.`, depth + 1);
    if (prop.items?.properties && depth < 3) out += fieldRows(prop.items, `${prefix + name}[].`, depth + 1);
    if (typeof prop.additionalProperties === 'object' && !prop.additionalProperties.$ref) {
      out += `<tr><td><code>${esc(prefix + name)}.&lt;key&gt;</code></td><td>${typeLabel(prop.additionalProperties)}</td><td>${constraints(prop.additionalProperties)}</td></tr>`;
    }
  }
  return out;
}

type Header = { description?: string; required?: boolean; schema?: Schema; $ref?: string };
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean; description?: string; schema?: Schema }[];
  requestBody?: { description?: string; content: Record<string, { schema: Schema }> };
  responses: Record<
    string,
    { description?: string; headers?: Record<string, Header>; content?: Record<string, { schema: Schema }> }
  >;
};

function headerList(headers: Record<string, Header> | undefined, all: Record<string, Header>): string {
  if (!headers) return '';
  const items = Object.entries(headers).map(([name, h]) => {
    const resolved = h.$ref ? all[refName(h.$ref)] : h;
    const required = h.$ref ? resolved?.required !== false : h.required !== false;
    return `<a href="#${anchor('header', name)}"><code>${esc(name)}</code></a>${required ? '' : ' (sometimes)'}`;
  });
  return `<p class="headers">Headers: ${items.join(', ')}</p>`;
}

function operationBlock(method: string, path: string, op: Operation, doc: OpenApiDocument): string {
  const id = anchor('op', op.operationId ?? `${method}-${path}`);
  const keyed = op.security === undefined || op.security.length > 0;
  let html = `<section class="op" id="${id}"><h3><span class="method ${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code></h3>`;
  html += `<p class="summary">${md(op.summary)}${keyed ? ' <span class="badge">API key</span>' : ' <span class="badge open">no key</span>'}</p>`;
  if (op.description) html += `<p>${md(op.description)}</p>`;
  if (op.parameters?.length) {
    html +=
      '<h4>Parameters</h4><table class="fields"><thead><tr><th>Name</th><th>In</th><th>Notes</th></tr></thead><tbody>';
    for (const p of op.parameters) {
      const notes = [md(p.description), p.schema ? constraints(p.schema) : ''].filter(Boolean).join('<br>');
      html += `<tr><td><code>${esc(p.name)}</code>${p.required ? ' <span class="req">required</span>' : ''}</td><td>${esc(p.in)}</td><td>${notes}</td></tr>`;
    }
    html += '</tbody></table>';
  }
  if (op.requestBody) {
    html += '<h4>Request body</h4>';
    if (op.requestBody.description) html += `<p>${md(op.requestBody.description)}</p>`;
    for (const [type, media] of Object.entries(op.requestBody.content)) {
      html += `<p class="type">${esc(type)}: ${typeLabel(media.schema)}</p>`;
    }
  }
  html += '<h4>Responses</h4>';
  const errors: [string, string[], string | undefined][] = [];
  for (const [status, r] of Object.entries(op.responses)) {
    // Every error status has the same body: one table per operation lists them all (below),
    // instead of the error body's fields again under each status.
    const codes = errorCodesOf(r.content);
    if (codes) {
      errors.push([status, codes, r.description]);
      continue;
    }
    html += `<div class="response"><h5><span class="status s${esc(status[0])}">${esc(status)}</span> ${md(r.description)}</h5>`;
    html += headerList(r.headers, doc.components.headers as Record<string, Header>);
    for (const [type, media] of Object.entries(r.content ?? {})) {
      html += `<p class="type">${esc(type)}</p>${schemaBlock(media.schema)}`;
    }
    html += '</div>';
  }
  if (errors.length) html += errorTable(errors);
  html += exampleBlock(op.operationId);
  return `${html}</section>`;
}

/** The error_codes of an error response (its body is the error body), or null. */
function errorCodesOf(content: Record<string, { schema: Schema }> | undefined): string[] | null {
  const schema = content?.['application/json']?.schema;
  const code = schema?.properties?.error_code;
  if (!schema || schema.properties?.codes || !code) return null;
  return (code.enum as string[] | undefined) ?? [];
}

function errorTable(errors: [string, string[], string | undefined][]): string {
  const rows = errors
    .map(
      ([status, codes, description]) =>
        `<tr><td><span class="status s${esc(status[0])}">${esc(status)}</span></td><td>${codes
          .map((c) => `<code>${esc(JSON.stringify(c))}</code>`)
          .join(' ')}</td><td>${md(description)}</td></tr>`,
    )
    .join('');
  return `<div class="response"><h5>Errors: the <a href="#${anchor('schema', 'ErrorBody')}">error body</a> with one of</h5><table class="fields errors"><thead><tr><th>Status</th><th>error_code</th><th>Meaning</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function exampleBlock(operationId: string | undefined): string {
  const ex = operationId ? EXAMPLES[operationId] : undefined;
  if (!ex) return '';
  const body = typeof ex.response === 'string' ? ex.response : JSON.stringify(ex.response, null, 2);
  return `<h4>Example</h4><div class="example"><pre><code>${esc(ex.request)}</code></pre><pre><code>HTTP/1.1 ${ex.status}\n\n${esc(body)}</code></pre></div>`;
}

/** The whole reference page. */
export function renderReference(doc: OpenApiDocument): string {
  const ops: { method: string; path: string; op: Operation }[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item as Record<string, Operation>))
      ops.push({ method, path, op });
  }
  const webhooks = Object.entries(doc.webhooks).map(([name, item]) => ({ name, op: item.post as Operation }));
  const toc = doc.tags
    .map((tag) => {
      const items = ops
        .filter((o) => o.op.tags?.includes(tag.name))
        .map(
          (o) =>
            `<li><a href="#${anchor('op', o.op.operationId ?? '')}"><span class="method ${o.method}">${o.method.toUpperCase()}</span> ${esc(o.path)}</a></li>`,
        );
      if (tag.name === 'Webhooks')
        for (const w of webhooks)
          items.push(`<li><a href="#${anchor('webhook', w.name)}">event ${esc(w.name)}</a></li>`);
      return `<li>${esc(tag.name)}<ul>${items.join('')}</ul></li>`;
    })
    .join('');

  let body = `<header><h1>${esc(doc.info.title)} <small>${esc(doc.info.version)}</small></h1><p>${md(doc.info.summary)}</p><p>Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI ${esc(doc.openapi)}).</p></header>`;
  body += `<section id="overview"><h2>Overview</h2><p>${md(doc.info.description)}</p>`;
  const scheme = doc.components.securitySchemes.bearerAuth;
  body += `<h3 id="auth">Authentication</h3><p>${md(scheme.description)}</p><p>Format: ${md(scheme.bearerFormat)}</p></section>`;
  for (const tag of doc.tags) {
    body += `<section class="tag"><h2>${esc(tag.name)}</h2><p>${md(tag.description)}</p>`;
    for (const o of ops.filter((x) => x.op.tags?.includes(tag.name)))
      body += operationBlock(o.method, o.path, o.op, doc);
    if (tag.name === 'Webhooks') {
      for (const w of webhooks) {
        body += operationBlock('post', `event ${w.name}`, w.op, doc).replace(
          /^<section class="op" id="[^"]*">/,
          `<section class="op" id="${anchor('webhook', w.name)}">`,
        );
      }
    }
    body += '</section>';
  }
  body +=
    '<section><h2>Headers</h2><table class="fields"><thead><tr><th>Header</th><th>Type</th><th>Meaning</th></tr></thead><tbody>';
  for (const [name, h] of Object.entries(doc.components.headers as Record<string, Header>)) {
    body += `<tr id="${anchor('header', name)}"><td><code>${esc(name)}</code></td><td>${h.schema ? typeLabel(h.schema) : ''}</td><td>${md(h.description)}</td></tr>`;
  }
  body += '</tbody></table></section><section><h2>Schemas</h2>';
  for (const [name, s] of Object.entries(doc.components.schemas as Record<string, Schema>)) {
    body += `<section class="schema" id="${anchor('schema', name)}"><h3>${esc(name)}</h3>${schemaBlock(s)}</section>`;
  }
  body += '</section>';

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(doc.info.title)} reference</title>
<link rel="stylesheet" href="${DOCS_CSS_PATH}">
</head>
<body>
<nav><p><a href="#overview">Overview</a></p><ul>${toc}</ul><p><a href="/v1/openapi.json">openapi.json</a></p></nav>
<main>${body}</main>
</body>
</html>
`;
}

export const DOCS_CSS = `:root{color-scheme:light dark;--fg:#1d2330;--bg:#fff;--muted:#5b6475;--line:#dde2ea;--code:#f3f5f8;--accent:#2456c9}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--bg:#14171d;--muted:#9aa3b2;--line:#2b313b;--code:#1d222b;--accent:#7aa2ff}}
*{box-sizing:border-box}
body{margin:0;display:flex;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
nav{position:sticky;top:0;height:100vh;overflow:auto;width:270px;flex:none;padding:16px;border-right:1px solid var(--line);font-size:14px}
nav ul{list-style:none;padding-left:8px;margin:4px 0}
main{flex:1;min-width:0;max-width:1100px;padding:16px 32px 64px}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--code);padding:1px 4px;border-radius:3px}
h1 small{color:var(--muted);font-weight:400;font-size:60%}
h2{border-bottom:1px solid var(--line);padding-bottom:4px;margin-top:40px}
.op{border:1px solid var(--line);border-radius:6px;padding:8px 16px;margin:16px 0}
.method{display:inline-block;min-width:48px;text-align:center;font:600 12px ui-monospace,monospace;border-radius:3px;padding:2px 6px;color:#fff;background:#2e7d32}
.method.post{background:#1565c0}
.badge{font-size:12px;border:1px solid var(--line);border-radius:10px;padding:0 8px;color:var(--muted)}
.badge.open{color:#2e7d32}
.req{font-size:11px;color:#c62828;text-transform:uppercase}
.status{display:inline-block;min-width:40px;font:600 13px ui-monospace,monospace}
.status.s2{color:#2e7d32}.status.s4{color:#b26a00}.status.s5{color:#c62828}
.response{border-top:1px dashed var(--line);padding-top:4px}
.response h5{font-size:14px;font-weight:500;margin:8px 0}
.headers,.type{color:var(--muted);font-size:13px}
table.fields{border-collapse:collapse;width:100%;font-size:13px;margin:8px 0}
table.fields th,table.fields td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
.example{display:grid;grid-template-columns:1fr 1fr;gap:8px}
.example pre{margin:0;overflow:auto;background:var(--code);border-radius:4px;padding:8px;max-height:420px}
.example pre code{background:none;padding:0;white-space:pre}
@media (max-width:1000px){.example{grid-template-columns:1fr}}
@media (max-width:800px){body{display:block}nav{position:static;height:auto;width:auto;border-right:0}}
`;
