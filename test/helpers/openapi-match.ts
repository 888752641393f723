// The OpenAPI document as a checker of answers (used by the drift guard, openapi-check.ts, and by
// the fuzzer, which runs outside vitest too). Every public API response is checked against the
// document (status, required headers and their values, body against the response schema of that
// path, method and status). Object schemas are checked closed: a field the document does not
// name fails, although the published document leaves objects open for clients.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '../../src/openapi/document.ts';
import { errorBody, type JsonSchema } from '../../src/openapi/schemas.ts';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

type Schema = Record<string, unknown>;
type ResponseSpec = {
  headers?: Record<string, { $ref?: string; required?: boolean; schema?: Schema }>;
  content?: Record<string, { schema: Schema }>;
};

const doc = openApiDocument() as unknown as {
  paths: Record<string, Record<string, { responses: Record<string, ResponseSpec> }>>;
  components: {
    headers: Record<string, { required?: boolean; schema: Schema }>;
    schemas: Record<string, Schema>;
  };
};

/** A deep copy with every object schema closed and component refs pointed at `components`. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const s = schema as Schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === '$ref' && typeof v === 'string')
      out[k] = v.replace('#/components/schemas/', 'components#/$defs/');
    else if (k === 'properties' && typeof v === 'object' && v)
      out[k] = Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, closed(ps)]));
    else if (['items', 'additionalProperties', 'propertyNames', 'not'].includes(k)) out[k] = closed(v);
    else if (['oneOf', 'anyOf', 'allOf'].includes(k)) out[k] = closed(v);
    else out[k] = v;
  }
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addSchema({
  $id: 'components',
  $defs: Object.fromEntries(Object.entries(doc.components.schemas).map(([k, v]) => [k, closed(v)])),
});
const compiled = new Map<string, ValidateFunction>();
function validator(key: string, schema: unknown): ValidateFunction {
  let v = compiled.get(key);
  if (!v) {
    v = ajv.compile(closed(schema) as Schema);
    compiled.set(key, v);
  }
  return v;
}

// A path parameter may be empty, as the router takes it: `/v1/jobs/` is `GET /v1/jobs/{id}` with
// the id '' (any unknown id: 404), not a path off the document (a fuzz run's 503s on
// `/v1/jobs/` and `/v1/events//redeliver` were counted as undocumented for that).
const templates = Object.keys(doc.paths).map((path) => ({
  path,
  re: new RegExp(`^${path.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]*')}$`),
}));

export interface ObservedResponse {
  method: string;
  url: string;
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

const header = (headers: ObservedResponse['headers'], name: string) => {
  const found = Object.entries(headers).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
  return found === undefined ? undefined : Array.isArray(found) ? found.join(', ') : String(found);
};

/** A header's string value as its schema types it (headers travel as text). */
function typed(value: string, schema: Schema): unknown {
  const type = schema.type;
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  return value;
}

function checkBody(key: string, schema: unknown, r: ObservedResponse, problems: string[]) {
  let body: unknown;
  try {
    body = JSON.parse(r.body);
  } catch {
    problems.push('body is not JSON');
    return;
  }
  const validate = validator(key, schema);
  if (!validate(body)) problems.push(`body: ${ajv.errorsText(validate.errors, { dataVar: 'body' })}`);
}

/** The document's path template a URL falls under (`/v1/jobs/{id}`), or undefined. */
export const documentPath = (url: string): string | undefined =>
  templates.find((t) => t.re.test(url.split('?')[0]!))?.path;

/** Whether the document lists `status` for the operation `method url` answers (false off the document). */
export function documentsStatus(method: string, url: string, status: number): boolean {
  const path = url.split('?')[0]!;
  const template = templates.find((t) => t.re.test(path));
  if (!template) return false;
  const item = doc.paths[template.path]!;
  const op = item[method.toLowerCase()] ?? (method.toLowerCase() === 'head' ? item.get : undefined);
  return op?.responses[String(status)] !== undefined;
}

/** The ways `r` differs from the document; empty when it matches. */
export function checkResponse(r: ObservedResponse): string[] {
  const problems: string[] = [];
  const path = r.url.split('?')[0]!;
  const method = r.method.toLowerCase();
  const template = templates.find((t) => t.re.test(path));
  if (!template) {
    // A route only a test adds (/v1/__echo …) answers as the test wishes; its errors are still errors.
    if (r.status >= 400) checkBody('any-error', errorBody(), r, problems);
    return problems;
  }
  const item = doc.paths[template.path]!;
  const op = item[method] ?? (method === 'head' ? item.get : undefined);
  if (!op) {
    if (r.status !== 405)
      problems.push(`${r.method} ${template.path} is not in the document but answered ${r.status}`);
    checkBody('405', errorBody(['method_not_allowed']), r, problems);
    return problems;
  }
  const status = String(r.status);
  const spec = op.responses[status] ?? op.responses[`${status[0]}XX`] ?? op.responses.default;
  if (!spec) return [`status ${status} is not documented for ${method.toUpperCase()} ${template.path}`];
  const key = `${method} ${template.path} ${status}`;

  for (const [name, h] of Object.entries(spec.headers ?? {})) {
    const def = h.$ref ? doc.components.headers[h.$ref.split('/').pop()!]! : h;
    const required = h.$ref ? def.required !== false : h.required === true;
    const value = header(r.headers, name);
    if (value === undefined) {
      if (required) problems.push(`header ${name} is missing`);
      continue;
    }
    const v = validator(`header ${name}`, def.schema ?? {});
    if (!v(typed(value, def.schema ?? {})))
      problems.push(`header ${name}: ${JSON.stringify(value)} ${ajv.errorsText(v.errors)}`);
  }

  if (method === 'head') return problems;
  const contentType = header(r.headers, 'content-type') ?? '';
  const media = Object.entries(spec.content ?? {}).find(([type]) => contentType.startsWith(type));
  if (!media) {
    problems.push(
      `content-type ${contentType} is not documented (${Object.keys(spec.content ?? {}).join(', ')})`,
    );
    return problems;
  }
  if (media[0] === 'application/json') checkBody(key, media[1].schema, r, problems);
  return problems;
}

export type { JsonSchema };

/** The ways a webhook delivery body differs from the document's `webhooks` entry for `event`. */
export function checkWebhookPayload(event: string, body: string): string[] {
  const webhooks = (
    openApiDocument() as unknown as {
      webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: Schema }> } } }>;
    }
  ).webhooks;
  const media = webhooks[event]?.post.requestBody.content['application/json'];
  if (!media) return [`event ${event} is not in the document`];
  const problems: string[] = [];
  checkBody(
    `webhook ${event}`,
    media.schema,
    { method: 'POST', url: event, status: 0, headers: {}, body },
    problems,
  );
  return problems;
}
