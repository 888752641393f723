// What a string must be to reach the database: PostgreSQL's text (and jsonb) cannot hold
// U+0000, and a lone UTF-16 surrogate has no UTF-8 form (it would be stored, and echoed, as
// U+FFFD, or refused by the driver). One rule, used by both listeners and by the redeem parser.

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when PostgreSQL can store the text and JSON can echo it unchanged. */
export const isStorableText = (text: string): boolean =>
  !text.includes('\u0000') && !LONE_SURROGATE.test(text);

/** The message of a refused field, the same wherever the field came from. */
export const unstorableMessage = (field: string): string =>
  `${field} must not contain U+0000 or unpaired surrogates`;

/**
 * The first field of a parsed value (a JSON body, a query or path parameters) whose name or
 * string value cannot be stored, named as a client would write it (`items[2].label`), or null.
 * `prefix` names the value itself ('' for a body's top level).
 */
export function findUnstorableField(value: unknown, prefix = ''): string | null {
  if (typeof value === 'string') return isStorableText(value) ? null : prefix || 'body';
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableField(value[i], `${prefix}[${i}]`);
      if (found) return found;
    }
    return null;
  }
  for (const [key, inner] of Object.entries(value)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (!isStorableText(key)) return prefix ? `a field name in ${prefix}` : 'a field name';
    const found = findUnstorableField(inner, name);
    if (found) return found;
  }
  return null;
}
