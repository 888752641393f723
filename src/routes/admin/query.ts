// Query-string validation of the admin list endpoints: one strict schema per endpoint (an
// unknown or repeated parameter is 400 bad_request naming it), and the pieces they share.
import { z } from 'zod';
import { decodeCursor } from '../../core/cursor.ts';
import { ApiError } from '../../core/errors.ts';

export const limitParam = (max: number, fallback: number) =>
  z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined) return fallback;
      const n = /^[1-9]\d{0,5}$/.test(raw) ? Number(raw) : 0;
      if (n >= 1 && n <= max) return n;
      ctx.addIssue({ code: 'custom', message: `must be an integer from 1 to ${max}` });
      return z.NEVER;
    });

export const customerIdQuery = z
  .string()
  .regex(/^[1-9]\d{0,15}$/, 'must be a customer id')
  .transform(Number)
  .refine(Number.isSafeInteger, 'must be a customer id');

export const isoQuery = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

/** A cursor from an earlier page, checked against the shape its endpoint writes. */
export const cursorParam = <T>(check: (parts: unknown[]) => T | null) =>
  z.string().transform((raw, ctx) => {
    const parts = decodeCursor(raw);
    const value = parts === null ? null : check(parts);
    if (value === null) {
      ctx.addIssue({ code: 'custom', message: 'must be a next_cursor from an earlier page' });
      return z.NEVER;
    }
    return value;
  });

/** An id cursor: [positive integer]. */
export const idCursor = cursorParam((p) =>
  p.length === 1 && Number.isSafeInteger(p[0]) && (p[0] as number) > 0 ? (p[0] as number) : null,
);

export function parseQuery<S extends z.ZodType>(schema: S, query: unknown): z.infer<S> {
  const r = schema.safeParse(query ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : issue.path.join('.') || 'query';
  const message = issue.code === 'unrecognized_keys' ? 'unknown query parameter' : issue.message;
  throw new ApiError('bad_request', `${field}: ${message}`);
}
