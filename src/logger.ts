// One logger for the process. Redaction is configured here, once: API keys, tokens, webhook
// secrets and codes never reach the logs (docs/architecture.md#house-rules), while an error's own `code`
// (`23505`, `ECONNREFUSED`) does, so an operator can see why something failed.
import { type DestinationStream, type Logger, pino } from 'pino';
import { loggedPath } from './logged-path.ts';

const CENSOR = '[redacted]';

// Paths removed from every log line whatever their value. `code`/`codes` are not here: a field
// of that name is masked to its last 4 characters instead (see `maskCodeFields`), and an error's
// `code` goes through the `err` serializer, which keeps it when it names an error.
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'key',
  '*.key',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'body',
  '*.body',
  // SQL parameters (a webhook URL may carry a token; a code hash or a key digest is a lookup).
  'params',
  '*.params',
  'parameters',
  '*.parameters',
  'values',
  '*.values',
];

/** Logs carry at most this many characters of a URL (docs/reference/limits.md#hostile-requests). */
export const MAX_LOGGED_URL_LENGTH = 512;

/**
 * A URL with its query values masked (a client may put a key or token in the query string), cut
 * to MAX_LOGGED_URL_LENGTH characters. One pass over the characters, stopping once the output is
 * full: the cost is linear in the URL whatever its shape (a regular expression here was
 * quadratic in runs of `?`). A `?` or `&` starts a parameter name, `=` starts its value, which
 * runs to the next `&` or `#`.
 */
export function redactQueryValues(
  url: string | undefined,
  limit = MAX_LOGGED_URL_LENGTH,
): string | undefined {
  if (url === undefined) return undefined;
  let out = '';
  let state: 'text' | 'name' | 'value' = 'text';
  let i = 0;
  for (; i < url.length && out.length < limit; i++) {
    const c = url[i]!;
    if (state === 'value') {
      if (c === '&') state = 'name';
      else if (c === '#') state = 'text';
      else continue;
      out += c;
    } else if (c === '&' || (c === '?' && state === 'text')) {
      state = 'name';
      out += c;
    } else if (state === 'name' && c === '=') {
      state = 'value';
      out += `=${CENSOR}`;
    } else {
      if (state === 'name' && c === '#') state = 'text';
      out += c;
    }
  }
  // A value still being skipped when the loop stopped is not part of the cut.
  while (state === 'value' && i < url.length && url[i] !== '&' && url[i] !== '#') i++;
  if (i < url.length || out.length > limit) return `${out.slice(0, limit - 1)}…`;
  return out;
}

/**
 * A request's URL as a log line shows it: its path as the request log keeps it (decoded, keys and
 * anything our routes do not name shown by their last characters), its query values redacted, a
 * key-shaped query name masked too; at most MAX_LOGGED_URL_LENGTH characters.
 */
export function loggedUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  const query = url.search(/[?#]/);
  const path = loggedPath(url, MAX_LOGGED_URL_LENGTH);
  if (query === -1) return path;
  return redactQueryValues(path + url.slice(query))?.replace(/rk_(live|test)_[A-Za-z0-9%]*/g, 'rk_$1_…');
}

/** A code as it may appear in a log: its last 4 characters at most. */
export const maskCode = (code: string) => `…${code.slice(-4)}`;

// An error's `code` is kept when it has the shape of an error code and masked otherwise, so a
// code put in an error by mistake still shows only its last 4 characters. Kept: PostgreSQL
// SQLSTATEs (`23505`, `57P01`), Node system errors (`ECONNREFUSED`), Node and library error
// identifiers (`ERR_HTTP_REQUEST_TIMEOUT`, `UND_ERR_CONNECT_TIMEOUT`, `FST_ERR_CTP_BODY_TOO_LARGE`)
// and this service's error codes (`bad_request`).
const ERROR_CODE_SHAPE =
  /^(?:[0-9A-Z]{5}|E[A-Z]{2,19}|[A-Z]{2,8}(?:_[A-Z0-9]{1,24}){1,8}|[a-z]{2,24}(?:_[a-z]{2,24}){0,4})$/;

/** Error fields that can carry data of the failed statement, not just its shape. */
const ERROR_DATA_FIELDS = [
  'params',
  'parameters',
  'values',
  'queryOptions',
  'detail',
  'where',
  'internalQuery',
];

/** An error's `code` as logged: itself when it names an error, else its last 4 characters. */
export function loggedErrorCode(code: unknown): unknown {
  if (typeof code === 'number') return code;
  if (typeof code !== 'string') return code === undefined ? undefined : CENSOR;
  return code.length <= 48 && ERROR_CODE_SHAPE.test(code) ? code : maskCode(code);
}

/**
 * Serializes an error for the log: pino's shape with its `cause` as an object (a wrapped error's
 * code is usually on the cause), SQL data redacted, at any cause depth.
 */
function serializeError(err: unknown): unknown {
  const serialized = pino.stdSerializers.errWithCause(err as Error) as unknown;
  return sanitizeError(serialized, 0);
}

function sanitizeError(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null || depth > 5) return value;
  const e = value as Record<string, unknown>;
  if ('code' in e) e.code = loggedErrorCode(e.code);
  for (const field of ERROR_DATA_FIELDS) if (e[field] !== undefined) e[field] = CENSOR;
  if (e.cause !== undefined) e.cause = sanitizeError(e.cause, depth + 1);
  if (Array.isArray(e.aggregateErrors))
    e.aggregateErrors = e.aggregateErrors.map((x) => sanitizeError(x, depth + 1));
  return e;
}

/**
 * Fields named `code` or `codes` anywhere in a log line's own fields (not in `err`, whose `code`
 * is the error's) show only their last 4 characters: a stock or caller code is bearer value.
 */
function maskCodeFields(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null || depth > 4) return value;
  if (Array.isArray(value)) return value.map((v) => maskCodeFields(v, depth + 1));
  // Only plain objects: a request, a reply or an error keeps its class (serializers read it).
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'err' && depth === 0) out[k] = v;
    else if (k === 'code') out[k] = typeof v === 'string' ? maskCode(v) : v === undefined ? v : CENSOR;
    else if (k === 'codes')
      out[k] = Array.isArray(v) ? v.map((c) => (typeof c === 'string' ? maskCode(c) : CENSOR)) : CENSOR;
    else out[k] = maskCodeFields(v, depth + 1);
  }
  return out;
}

export function createLogger(level: string, stream?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      formatters: { log: (object) => maskCodeFields(object, 0) as Record<string, unknown> },
      serializers: {
        err: serializeError,
        // Only what support needs; never headers (Authorization) or bodies (codes). The URL as
        // the client sent it (a job id the router could not take is rewritten before routing).
        req: (req: { method?: string; url?: string; originalUrl?: string; ip?: string }) => ({
          method: req.method,
          url: loggedUrl(req.originalUrl ?? req.url),
          ip: req.ip,
        }),
      },
    },
    stream,
  );
}
