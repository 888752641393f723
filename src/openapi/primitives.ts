// The small schemas every body schema is made of: ids, timestamps, money, counts, modes.
import { CODE_FORMAT } from '../core/redeem/request.ts';
import { CATEGORIES } from '../core/stock/catalog.ts';
import { MODES } from '../core/vocabulary.ts';

export type JsonSchema = Record<string, unknown>;

export const REQUEST_ID = {
  type: 'string',
  pattern: '^req_[0-9A-Za-z]{20,}$',
  description: 'Also sent as X-Request-Id.',
};
export const JOB_ID = { type: 'string', pattern: '^job_[0-9A-Za-z]{20,}$' };
export const TIMESTAMP = { type: 'string', format: 'date-time', description: 'ISO 8601 UTC with a Z.' };
export const USD = {
  type: 'number',
  description: 'US dollars, at most 6 decimals (money is kept as integer micro-dollars).',
};
export const COUNT = { type: 'integer', minimum: 0 };
export const MODE = {
  type: 'string',
  enum: [...MODES],
  description: 'From the key prefix: rk_live_ or rk_test_.',
};
export const PLAYER_ID = { type: 'string', pattern: '^[0-9]{5,20}$' };
export const CATEGORY = {
  type: 'string',
  enum: [...CATEGORIES],
  description: 'A catalog category: its UC pack size as a string.',
};

/** The code format after trimming spaces (the request accepts surrounding spaces). */
export const CODE_CHARS = CODE_FORMAT.source.replace(/^\^|\$$/g, '');
