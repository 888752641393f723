// Shared pieces of admin body validation: zod schemas, and one way to turn a failure into 400.
import { z } from 'zod';
import { customerExists } from '../../core/accounts/accounts.ts';
import { ApiError } from '../../core/errors.ts';
import { MODES } from '../../core/vocabulary.ts';
import type { Queryable } from '../../db/database.ts';

export const modeSchema = z.enum(MODES);
export const isoTimestamp = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

/** Parses `body` with `schema`, or throws 400 bad_request naming the first bad field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const r = schema.safeParse(body ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = issue.path.join('.') || 'body';
  throw new ApiError('bad_request', `${field}: ${issue.message}`);
}

/** A customer or key id from the path; anything malformed is simply unknown (404). */
export function customerIdParam(raw: string): number {
  if (!/^[1-9]\d{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new ApiError('not_found', 'unknown customer');
  }
  return Number(raw);
}

/**
 * A customer id from the path that must exist: 404 comes before the body is validated (an unknown
 * customer is 404 even with a bad body). The core call checks again inside its transaction.
 */
export async function existingCustomerParam(q: Queryable, raw: string): Promise<number> {
  const id = customerIdParam(raw);
  if (!(await customerExists(q, id))) throw new ApiError('not_found', 'unknown customer');
  return id;
}
