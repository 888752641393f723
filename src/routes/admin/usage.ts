// GET /admin/v1/usage (code outcomes per hour or day) and GET /admin/v1/overview (what needs the
// operator now): the numbers behind the console's overview and a customer's usage plot.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { serviceOverview } from '../../core/accounts/overview.ts';
import { bucketStart, type Granularity, rollUpUsage, usageBuckets } from '../../core/accounts/usage.ts';
import { moneyByDay, moneyCsv } from '../../core/billing/money-by-day.ts';
import { isoUtc } from '../../core/clock.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { refusalsToday } from '../../core/requests/request-log.ts';
import { statementQueryFields } from '../statements.ts';
import { formatParam, sendCsv, wantsCsv } from './csv.ts';
import { customerIdQuery, isoQuery, parseQuery } from './query.ts';
import { modeSchema } from './validation.ts';

/** Buckets in one answer, at most (two months of hours, five years of days). */
export const MAX_BUCKETS = 1_500;
const DEFAULT_SPAN: Record<Granularity, number> = { hour: 24, day: 30 };
const UNIT_MS: Record<Granularity, number> = { hour: 3_600_000, day: 86_400_000 };

const usageQuery = z.strictObject({
  customer_id: customerIdQuery.optional(),
  mode: modeSchema.optional(),
  granularity: z.enum(['hour', 'day']).default('hour'),
  from: isoQuery.optional(),
  to: isoQuery.optional(),
});

export function registerAdminUsageRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/admin/v1/usage', async (request) => {
    const q = parseQuery(usageQuery, request.query);
    const g = q.granularity;
    const unit = UNIT_MS[g];
    // Buckets are whole hours or UTC days: `to` rounds up, `from` down. By default the last 24
    // hours or 30 days, the current one included.
    const to = q.to
      ? new Date(Math.ceil(q.to.getTime() / unit) * unit)
      : new Date(bucketStart(ctx.clock.now(), g).getTime() + unit);
    const from = q.from ? bucketStart(q.from, g) : new Date(to.getTime() - DEFAULT_SPAN[g] * unit);
    if (from.getTime() >= to.getTime()) throw new ApiError('bad_request', 'from: must be before to');
    if ((to.getTime() - from.getTime()) / unit > MAX_BUCKETS)
      throw new ApiError('bad_request', `from: at most ${MAX_BUCKETS} ${g}s in one answer`);
    const rolledUntil = await rollUpUsage(ctx.db, ctx.clock.now());
    const usage = await usageBuckets(
      ctx.db,
      { customerId: q.customer_id, mode: q.mode, granularity: g, from, to },
      rolledUntil,
    );
    return {
      ok: true,
      request_id: request.id,
      customer_id: q.customer_id ?? null,
      mode: q.mode ?? null,
      granularity: g,
      from: isoUtc(from),
      to: isoUtc(to),
      ...usage,
    };
  });

  // Money across customers per UTC day, JSON or CSV (format=csv, Accept: text/csv).
  app.get('/admin/v1/money', async (request, reply) => {
    const q = parseQuery(
      z.strictObject({ mode: modeSchema.optional(), ...statementQueryFields, ...formatParam }),
      request.query,
    );
    const money = await moneyByDay(ctx.db, ctx.clock.now(), { mode: q.mode ?? null, from: q.from, to: q.to });
    if (wantsCsv(request, q.format))
      return sendCsv(
        reply,
        `money-${money.mode ?? 'all'}-${money.from}-${money.to}.csv`,
        moneyCsv(money.days),
        false,
      );
    return { ok: true, request_id: request.id, ...money };
  });

  app.get('/admin/v1/overview', async (request) => {
    const q = parseQuery(z.strictObject({ mode: modeSchema.optional() }), request.query);
    const now = ctx.clock.now();
    const overview = await serviceOverview(ctx.db, now, q.mode ?? null);
    // Public API answers of 400 or above today, by error code: what merchants are refused.
    const refusals = await refusalsToday(ctx.db, now, q.mode ?? null);
    // Without a mode the answer is as it always was (both modes, no `mode` field).
    const { mode, ...rest } = overview;
    return { ok: true, request_id: request.id, ...(mode ? { mode } : {}), ...rest, refusals_today: refusals };
  });
}
