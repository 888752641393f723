// Shared pieces of admin body validation: zod schemas, and one way to turn a failure into 400.
import { z } from 'zod';
import { ApiError } from '../../core/errors.ts';

export const modeSchema = z.enum(['live', 'test']);
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
