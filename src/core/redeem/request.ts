// POST /v1/redeem request validation, in the documented order (docs/reference/redeem.md#validation-order, steps 2 to 9), and
// the idempotency fingerprint (docs/reference/idempotency.md#the-fingerprint).
import { createHash } from 'node:crypto';
import { ApiError } from '../errors.ts';
import { isCategory } from '../stock/catalog.ts';
import { ucPossible } from '../stock/chooser.ts';
import { isStorableText, unstorableMessage } from '../text.ts';

export const MAX_CODES = 50;
export const CODE_FORMAT = /^[A-Za-z0-9-]{4,64}$/;
const PLAYER_FORMAT = /^\d{5,20}$/;
const KNOWN_FIELDS = new Set(['player_id', 'source', 'codes', 'packs', 'uc', 'async', 'reference']);

export type RedeemSelection =
  | { source: 'codes'; codes: string[] }
  | { source: 'stock'; packs: { category: string; count: number }[] }
  | { source: 'stock'; uc: number };

export type RedeemRequest = RedeemSelection & {
  playerId: string;
  async: boolean;
  reference: string | null;
};

/** Step 2: the Idempotency-Key header. Returns the key. */
export function checkIdempotencyKey(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') {
    throw new ApiError('idempotency_required', 'the Idempotency-Key header is required');
  }
  if (value.length > 255 || !/^[\x20-\x7e]+$/.test(value)) {
    throw new ApiError('bad_request', 'Idempotency-Key must be 1 to 255 printable ASCII characters');
  }
  return value;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Integers as the API reads JSON (docs/reference/redeem.md#the-request): a number with no fractional part (2.0 is 2). */
const isPositiveInteger = (v: unknown): v is number =>
  typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/**
 * `uc` at step 3: any positive integer, however large (1e20 is one). A huge one is then a
 * `no_combo` of step 9, not a `bad_request`.
 */
const isPositiveUc = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;

/** Steps 3 to 9. `body` is the parsed JSON (undefined when the body was empty or not JSON). */
export function parseRedeemRequest(body: unknown): RedeemRequest {
  // Step 3: shape, unknown fields, and the simple optional fields.
  if (!isPlainObject(body)) throw new ApiError('bad_request', 'body must be a JSON object');
  for (const field of Object.keys(body)) {
    if (!KNOWN_FIELDS.has(field)) throw new ApiError('bad_request', `unknown field "${field}"`);
  }
  // An optional field sent as null counts as absent.
  const present = (name: string) => body[name] !== undefined && body[name] !== null;
  if (present('source') && body.source !== 'codes' && body.source !== 'stock') {
    throw new ApiError('bad_request', 'source must be "codes" or "stock"');
  }
  if (present('async') && typeof body.async !== 'boolean')
    throw new ApiError('bad_request', 'async must be a boolean');
  if (present('reference') && (typeof body.reference !== 'string' || [...body.reference].length > 128)) {
    throw new ApiError('bad_request', 'reference must be a string of at most 128 characters');
  }
  if (present('reference') && !isStorableText(body.reference as string)) {
    throw new ApiError('bad_request', unstorableMessage('reference'));
  }
  if (present('uc') && !isPositiveUc(body.uc))
    throw new ApiError('bad_request', 'uc must be a positive integer');

  // Step 4: the player.
  const playerId = parsePlayerId(body.player_id);

  // Step 5: exactly one source.
  const given = (['codes', 'packs', 'uc'] as const).filter(present);
  if (given.length > 1)
    throw new ApiError('ambiguous_source', `give only one of codes, packs or uc (got ${given.join(', ')})`);
  const field = given[0];
  if (present('source') && field) {
    const implied = field === 'codes' ? 'codes' : 'stock';
    if (body.source !== implied)
      throw new ApiError('ambiguous_source', `source "${body.source}" contradicts ${field}`);
  }

  // Step 6: something to redeem.
  if (!field) throw new ApiError('empty', 'nothing to redeem: give codes, packs or uc');
  if (field === 'codes' && Array.isArray(body.codes) && body.codes.length === 0) {
    throw new ApiError('empty', 'codes is empty');
  }
  if (field === 'packs' && isPlainObject(body.packs) && Object.keys(body.packs).length === 0) {
    throw new ApiError('empty', 'packs is empty');
  }

  const common = {
    playerId,
    async: body.async === true,
    reference: present('reference') ? (body.reference as string) : null,
  };
  if (field === 'codes') return { ...common, source: 'codes', codes: parseCodes(body.codes) };
  if (field === 'packs') return { ...common, source: 'stock', packs: parsePacks(body.packs) };
  const uc = body.uc as number;
  // Step 9.
  if (!ucPossible(uc))
    throw new ApiError('no_combo', `no combination of at most ${MAX_CODES} packs makes ${uc} UC`);
  return { ...common, source: 'stock', uc };
}

function parsePlayerId(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) text = String(value);
  else throw new ApiError('bad_player', 'player_id must be a string of 5 to 20 digits');
  if (!PLAYER_FORMAT.test(text))
    throw new ApiError('bad_player', 'player_id must be a string of 5 to 20 digits');
  return text;
}

/** Step 7. */
function parseCodes(value: unknown): string[] {
  if (!Array.isArray(value)) throw new ApiError('bad_codes', 'codes must be an array of strings');
  if (value.length > MAX_CODES) throw new ApiError('bad_codes', `at most ${MAX_CODES} codes per request`);
  const seen = new Set<string>();
  return value.map((raw, i) => {
    if (typeof raw !== 'string') throw new ApiError('bad_codes', `codes[${i}] must be a string`);
    const code = trimSpaces(raw);
    if (!CODE_FORMAT.test(code)) {
      throw new ApiError('bad_codes', `codes[${i}] must be 4 to 64 characters of A-Z, a-z, 0-9 and -`);
    }
    if (seen.has(code)) throw new ApiError('bad_codes', `codes[${i}] repeats an earlier code`);
    seen.add(code);
    return code;
  });
}

/**
 * Leading and trailing spaces removed by a scan from each end: `/^ +| +$/` was quadratic in a
 * run of spaces inside a code (`"x" + 40,000 spaces + "x"` took 1.4 s; docs/reference/limits.md#hostile-requests).
 */
function trimSpaces(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text.charCodeAt(start) === 32) start++;
  while (end > start && text.charCodeAt(end - 1) === 32) end--;
  return text.slice(start, end);
}

/** Step 8. */
function parsePacks(value: unknown): { category: string; count: number }[] {
  if (!isPlainObject(value)) throw new ApiError('bad_packs', 'packs must be an object of category → count');
  let total = 0;
  const packs = Object.entries(value).map(([category, count]) => {
    if (!isCategory(category)) throw new ApiError('bad_packs', `unknown category "${category}"`);
    if (!isPositiveInteger(count))
      throw new ApiError('bad_packs', `packs["${category}"] must be a positive integer`);
    total += count;
    return { category, count };
  });
  if (total > MAX_CODES) throw new ApiError('bad_packs', `at most ${MAX_CODES} codes per request`);
  return packs;
}

/** JSON with object keys sorted at every level, so key order and spacing never differ. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${path}\n${canonicalJson(body)}`)
    .digest('hex');
}
