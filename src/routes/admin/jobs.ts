// GET /admin/v1/jobs/{id}: any job (sync or async) with its billing hold, its per-code attempts
// (a code's last 4 characters only: codes are bearer value, contract 12.1) and its webhook
// deliveries (kept RETENTION_DAYS, 12.2).
import type { FastifyInstance } from 'fastify';
import { isoUtc } from '../../core/clock.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { loadJob, loadJobCodes } from '../../core/jobs/jobs.ts';
import { redactQueryValues } from '../../logger.ts';

const iso = (d: Date | null) => (d ? isoUtc(d) : null);

export function registerAdminJobRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get<{ Params: { id: string } }>('/admin/v1/jobs/:id', async (request) => {
    const job = await loadJob(ctx.db, request.params.id);
    if (!job) throw new ApiError('not_found', 'unknown job');
    const [hold, events, deliveries] = await Promise.all([
      ctx.db.query<Record<string, number | string> & { codes_dropped_at: Date | null }>(
        `select to_char(hold_day, 'YYYY-MM-DD') as day, rate_micros as rate_micros, hold_included, hold_wallet,
                captured_included, captured_wallet, released_included, released_wallet, codes_dropped_at
           from jobs where id = $1`,
        [job.id],
      ),
      ctx.db.query<{
        id: string;
        event: string;
        state: string;
        attempts: number;
        createdAt: Date;
        nextAttemptAt: Date;
        lastStatus: number | null;
        lastError: string | null;
        finishedAt: Date | null;
      }>(
        `select id, event, state, attempts, created_at as "createdAt", next_attempt_at as "nextAttemptAt",
                last_status as "lastStatus", last_error as "lastError", finished_at as "finishedAt"
           from webhook_events where job_id = $1 order by created_at, id`,
        [job.id],
      ),
      ctx.db.query<{
        eventId: string;
        attempt: number;
        url: string;
        startedAt: Date;
        status: number | null;
        error: string | null;
        durationMs: number;
      }>(
        `select a.event_id as "eventId", a.attempt, a.url, a.started_at as "startedAt", a.status, a.error,
                a.duration_ms as "durationMs"
           from webhook_attempts a join webhook_events e on e.id = a.event_id
          where e.job_id = $1 order by a.event_id, a.attempt`,
        [job.id],
      ),
    ]);
    const codes = await loadJobCodes(ctx.db, job.id);
    const { codes_dropped_at: codesDroppedAt, ...billing } = hold.rows[0]!;
    return {
      ok: true,
      request_id: request.id,
      job: {
        job_id: job.id,
        customer_id: job.customerId,
        mode: job.mode,
        async: job.isAsync,
        status: job.status,
        idempotency_key: job.idempotencyKey,
        request_id: job.requestId,
        player_id: job.playerId,
        source: job.source,
        reference: job.reference,
        created_at: iso(job.createdAt),
        started_at: iso(job.startedAt),
        finished_at: iso(job.finishedAt),
        lease_owner: job.leaseOwner,
        lease_expires_at: iso(job.leaseExpiresAt),
        error: job.error,
        // When retention (contract 12.2) dropped the job's code ciphertexts; null while kept.
        codes_dropped_at: iso(codesDroppedAt),
      },
      billing,
      attempts: codes.map((c) => ({
        position: c.position,
        code_last4: c.last4,
        stock_id: c.stockId,
        category: c.category,
        uc: c.uc,
        state: c.state,
        status: c.status,
        error_code: c.errorCode,
        disposition: c.disposition,
        billed: c.billed,
        reused: c.reused,
        settlement: c.settlement,
        started_at: iso(c.startedAt),
        finished_at: iso(c.finishedAt),
      })),
      webhooks: events.rows.map((e) => ({
        event_id: e.id,
        event: e.event,
        state: e.state,
        attempts: e.attempts,
        created_at: iso(e.createdAt),
        next_attempt_at: e.state === 'pending' ? iso(e.nextAttemptAt) : null,
        last_status: e.lastStatus,
        last_error: e.lastError,
        finished_at: iso(e.finishedAt),
        deliveries: deliveries.rows
          .filter((d) => d.eventId === e.id)
          .map((d) => ({
            attempt: d.attempt,
            // Query values are often a receiver's token: operators see them masked.
            url: redactQueryValues(d.url, 2048),
            started_at: iso(d.startedAt),
            status: d.status,
            error: d.error,
            duration_ms: d.durationMs,
          })),
      })),
    };
  });
}
