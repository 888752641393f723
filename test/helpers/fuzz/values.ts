// The fuzzer's values: the hostile pools (strings, numbers and wrong types that broke something
// once, or could), a path or query value as it travels, and a sampler of the public OpenAPI
// document's JSON schemas giving valid, boundary or hostile values.
//
// Values come from a seeded generator over fixed pools rather than fast-check or an OpenAPI
// sampler: the pools are the point (the NUL, lone surrogates, boundary lengths and numbers that
// broke things before), fast-check's shrinking needs a property run in-process and cannot shrink
// against a server shared by thousands of requests in flight, and the document's schemas are
// small enough that a 40-line sampler covers them.
import { openApiDocument } from '../../../src/openapi/document.ts';
import { chance, pick, type Random } from './random.ts';

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
export const HOSTILE_NUMBERS: readonly number[] = [
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
export const WEIRD_VALUES: readonly unknown[] = [null, true, false, [], {}, [null], { a: 1 }, [1, 'a']];

export function hostileValue(r: Random): unknown {
  const roll = r();
  if (roll < 0.6) return pick(r, HOSTILE_STRINGS);
  if (roll < 0.85) return pick(r, HOSTILE_NUMBERS);
  return pick(r, WEIRD_VALUES);
}

/** A path or query value as it travels: encoded, or raw hostile bytes already percent-encoded. */
export function urlValue(r: Random, valid: readonly string[]): string {
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

export type Schema = Record<string, unknown>;
export const doc = openApiDocument() as unknown as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};
export interface Operation {
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  security?: Record<string, unknown>[];
}

export function resolve(schema: Schema): Schema {
  const ref = schema.$ref;
  if (typeof ref === 'string') return resolve(doc.components.schemas[ref.split('/').pop()!] ?? {});
  return schema;
}

/** A value that fits `schema` most of the time, and a boundary or hostile one otherwise. */
export function sample(r: Random, raw: Schema, depth = 0): unknown {
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
