// The operator's view of one job (GET /admin/v1/jobs/{id}): the job with its billing hold, its
// per-code attempts (a code's last 4 characters only: codes are bearer value, docs/reference/redeem.md#stock-codes-are-masked) and
// its webhook deliveries (kept RETENTION_DAYS, docs/reference/running.md#retention). Null when there is no such job.
import type { Queryable } from '../../db/database.ts';
import { redactQueryValues } from '../../logger.ts';
import { isoUtc } from '../clock.ts';
import { loadJob, loadJobCodes } from './jobs.ts';

const iso = (d: Date | null) => (d ? isoUtc(d) : null);

export async function adminJobView(db: Queryable, jobId: string, requestId: string) {
  const job = await loadJob(db, jobId);
  if (!job) return null;
  const [hold, webhooks, codes] = await Promise.all([
    db.query<Record<string, number | string> & { codes_dropped_at: Date | null }>(
      `select to_char(hold_day, 'YYYY-MM-DD') as day, rate_micros as rate_micros, hold_included, hold_wallet,
                captured_included, captured_wallet, released_included, released_wallet, codes_dropped_at
           from jobs where id = $1`,
      [job.id],
    ),
    jobWebhooks(db, job.id),
    loadJobCodes(db, job.id),
  ]);
  const { codes_dropped_at: codesDroppedAt, ...billing } = hold.rows[0]!;
  return {
    ok: true,
    request_id: requestId,
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
      channel: job.channel,
      created_at: iso(job.createdAt),
      started_at: iso(job.startedAt),
      finished_at: iso(job.finishedAt),
      lease_owner: job.leaseOwner,
      lease_expires_at: iso(job.leaseExpiresAt),
      error: job.error,
      // When retention (docs/reference/running.md#retention) dropped the job's code ciphertexts; null while kept.
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
    webhooks,
  };
}

/** The job's webhook events, each with its delivery attempts. */
async function jobWebhooks(db: Queryable, jobId: string) {
  const [events, deliveries] = await Promise.all([
    db.query<{
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
      [jobId],
    ),
    db.query<{
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
           from webhook_attempts a join webhook_events e on e.customer_id = a.customer_id and e.id = a.event_id
          where e.job_id = $1 order by a.event_id, a.attempt`,
      [jobId],
    ),
  ]);
  return events.rows.map((e) => ({
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
        // Operators see the URL with its query values masked (often a receiver's token).
        url: redactQueryValues(d.url, 2048),
        started_at: iso(d.startedAt),
        status: d.status,
        error: d.error,
        duration_ms: d.durationMs,
      })),
  }));
}
