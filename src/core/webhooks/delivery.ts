// The webhook worker (docs/reference/webhooks-and-events.md#deliveries; docs/architecture.md#house-rules, "Outbox for webhooks"): drains webhook_events
// rows written by the transaction that ended a job. A row is claimed with FOR UPDATE SKIP
// LOCKED and a lease (locked_until), and its attempt number is taken in that same statement, so
// two processes never send one attempt twice. Each attempt builds the envelope from the job's
// rows, signs it afresh with the registration current at that moment, re-resolves and re-checks
// the host and connects only to the addresses it checked. Pending rows survive a restart.
import type { LookupAddress } from 'node:dns';
import { Agent, request } from 'undici';
import { redactQueryValues } from '../../logger.ts';
import { jobEventData } from '../redeem/job-view.ts';
import { attemptErrorClass } from './attempt-errors.ts';
import { claimDueEventsFairly } from './fair-claim.ts';
import { runDueRedeliveries } from './redelivery.ts';
import { loadRegistration } from './registration.ts';
import { signatureHeader } from './signing.ts';
import { BlockedTargetError, type ResolvedAddress, resolveWebhookTarget } from './url-guard.ts';
import type { AttemptOutcome, ClaimedEvent, Deps, WebhookWorkerOptions } from './worker-types.ts';

export type { AttemptOutcome, ClaimedEvent, Deps, WebhookWorkerOptions } from './worker-types.ts';
// The worker loop lives in worker.ts (fair claims, each attempt on its own).

/** A delivery is retried up to 3 times (docs/reference/webhooks-and-events.md#deliveries): 4 attempts in all. */
export const MAX_ATTEMPTS = 4;

/** The pause before retry `attempt + 1` after attempt `attempt` failed, from WEBHOOK_RETRY_DELAYS. */
export function retryDelaySeconds(delays: readonly number[], attempt: number): number {
  return delays[Math.min(attempt - 1, delays.length - 1)] ?? 60;
}

/**
 * One pass that waits for everything it claimed (tests and tools drive deliveries with it; the
 * worker loop in worker.ts runs each attempt on its own instead). Claims fairly, up to
 * `batchSize`. Returns how many attempts were claimed.
 */
export async function deliverDueEvents(
  deps: Deps,
  opts: WebhookWorkerOptions,
  stop?: AbortSignal,
): Promise<number> {
  const claimed = await claimDueEventsFairly(deps, {
    limit: opts.batchSize ?? 10,
    leaseMs: opts.leaseMs ?? 60_000,
    perCustomer: opts.perCustomer,
  });
  // Redeliveries (docs/reference/webhooks-and-events.md#redelivery) run beside the schedule, never as part of it.
  // The sender is handed over so redelivery.ts needs nothing of this file at run time.
  const redelivered = runDueRedeliveries(deps, opts, { send: sendAttempt, envelope: envelopeBody }, stop);
  await Promise.all(claimed.map((evt) => deliverEvent(deps, opts, evt, stop)));
  return claimed.length + (await redelivered);
}

/** Sends one claimed attempt and records it; a failure to record is logged, never thrown. */
export async function deliverEvent(
  deps: Deps,
  opts: WebhookWorkerOptions,
  evt: ClaimedEvent,
  stop?: AbortSignal,
): Promise<void> {
  try {
    await sendAndRecord(deps, opts, evt, stop);
  } catch (err) {
    // The lease runs out and the event is taken again as its next attempt.
    deps.logger.error(
      { err, eventId: evt.id, attempt: evt.attempts },
      'webhook attempt could not be recorded',
    );
  }
}

async function sendAndRecord(deps: Deps, opts: WebhookWorkerOptions, evt: ClaimedEvent, stop?: AbortSignal) {
  const log = deps.logger.child({
    eventId: evt.id,
    jobId: evt.jobId,
    event: evt.event,
    attempt: evt.attempts,
  });
  // A process that died while sending leaves the attempt taken; past the last one, stop.
  if (evt.attempts > MAX_ATTEMPTS)
    return drop(deps, evt, 'attempts exhausted (a process stopped while sending)', log);

  const registration = await loadRegistration(deps.db, deps.codeKey, evt);
  if (!registration) return drop(deps, evt, 'no webhook registered any more', log);
  const data = await jobEventData(
    deps.db,
    deps.codeKey,
    { customerId: evt.customerId, id: evt.jobId },
    evt.event,
  );
  if (!data) return drop(deps, evt, 'the job no longer exists', log);

  const body = envelopeBody(evt, data);
  const startedAt = deps.clock.now();
  const started = performance.now();
  const outcome = await sendAttempt(deps, opts, registration, evt, body, stop);
  const durationMs = Math.round(performance.now() - started);
  await recordAttempt(deps, evt, outcome, startedAt, durationMs, log);
}

/** The envelope's exact bytes (docs/reference/webhooks-and-events.md#deliveries): the same id on every attempt and redelivery. */
export function envelopeBody(evt: Pick<ClaimedEvent, 'id' | 'event' | 'createdAt'>, data: unknown): Buffer {
  return Buffer.from(
    JSON.stringify({
      id: evt.id,
      event: evt.event,
      created_at: Math.floor(evt.createdAt.getTime() / 1000),
      data,
    }),
    'utf8',
  );
}

export async function sendAttempt(
  deps: Deps,
  opts: WebhookWorkerOptions,
  registration: { url: string; secret: string },
  evt: Pick<ClaimedEvent, 'id' | 'event' | 'customerId'>,
  body: Buffer,
  stop?: AbortSignal,
): Promise<AttemptOutcome> {
  const fail = (error: string): AttemptOutcome => ({ status: null, error, url: registration.url });
  let url: URL;
  try {
    url = new URL(registration.url);
  } catch {
    return fail('the registered url does not parse');
  }
  const timeoutMs = opts.timeoutMs ?? 10_000;
  let vetted: ResolvedAddress[];
  try {
    vetted = await resolveWebhookTarget(url, {
      allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      lookup: opts.lookup,
      lookupTimeoutMs: Math.min(timeoutMs, 5_000),
      // The resolver's turns go round-robin by customer (docs/reference/webhooks-and-events.md#fair-delivery).
      lookupKey: `customer:${evt.customerId}`,
    });
  } catch (err) {
    return fail(
      `blocked: ${err instanceof BlockedTargetError ? err.reason : err instanceof Error ? err.message : String(err)}`,
    );
  }

  // The connection may only go to the addresses just checked: the agent's lookup answers with
  // them instead of resolving again (a second answer could be a rebinding to a private address).
  // The URL keeps its host name, so TLS sends it as SNI and checks the certificate against it.
  const agent = new Agent({
    connect: {
      lookup: pinnedLookup(vetted),
      timeout: timeoutMs,
      ...(opts.ca ? { ca: opts.ca } : {}),
    },
    keepAliveTimeout: 1,
    pipelining: 0,
  });
  const signals = [AbortSignal.timeout(timeoutMs)];
  if (stop) signals.push(stop);
  try {
    const res = await request(url, {
      method: 'POST',
      dispatcher: agent,
      headers: {
        'content-type': 'application/json',
        'svc-event': evt.event,
        'svc-delivery-id': evt.id,
        'svc-signature': signatureHeader(
          registration.secret,
          body,
          Math.floor(deps.clock.now().getTime() / 1000),
        ),
        'user-agent': 'redeem-gateway-webhooks/1',
      },
      body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.any(signals),
    });
    // The receiver's answer is not read: drop it (up to a small limit) so the socket can close.
    await res.body.dump({ limit: 65_536 }).catch(() => undefined);
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    // Redirects are not followed: a 3xx is a failed attempt like any other non-2xx.
    return { status: res.statusCode, error: ok ? null : `answered ${res.statusCode}`, url: registration.url };
  } catch (err) {
    if (stop?.aborted) return fail('interrupted: the process is stopping');
    return fail(describeError(err));
  } finally {
    agent.destroy().catch(() => undefined);
  }
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** A `lookup` for net/tls connect that only ever answers with the vetted addresses. */
function pinnedLookup(vetted: ResolvedAddress[]) {
  return (
    _hostname: string,
    options: { all?: boolean; family?: number | string },
    callback: LookupCallback,
  ) => {
    const family =
      options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
    const usable = family === 4 || family === 6 ? vetted.filter((a) => a.family === family) : vetted;
    if (usable.length === 0) {
      const err: NodeJS.ErrnoException = new Error('no vetted address of the requested family');
      err.code = 'ENOTFOUND';
      return callback(err, []);
    }
    if (options.all)
      return callback(
        null,
        usable.map((a) => ({ address: a.address, family: a.family })),
      );
    return callback(null, usable[0]!.address, usable[0]!.family);
  };
}

function describeError(err: unknown): string {
  if (!(err instanceof Error)) return 'request failed';
  const code = (err as { code?: string }).code;
  if (err.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT') return 'timed out';
  const cause = (err as { cause?: unknown }).cause;
  const detail = cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  return `${code ?? err.name}: ${detail}`.slice(0, 300);
}

async function recordAttempt(
  deps: Deps,
  evt: ClaimedEvent,
  outcome: AttemptOutcome,
  startedAt: Date,
  durationMs: number,
  log: Deps['logger'],
) {
  const now = deps.clock.now();
  const delivered = outcome.error === null;
  const last = evt.attempts >= MAX_ATTEMPTS;
  const state = delivered ? 'delivered' : last ? 'dropped' : 'pending';
  const next = new Date(
    now.getTime() + retryDelaySeconds(deps.config.WEBHOOK_RETRY_DELAYS, evt.attempts) * 1000,
  );
  // One statement, so one round trip and one commit: the attempt row and the event's new state.
  // The update is guarded by the attempt number: a process whose lease ran out cannot overwrite
  // a later attempt (its own attempt is still recorded: it was made).
  // The receiver's run of failures (fair-claim.ts backs a failing one off) is kept with them; an
  // attempt cut short by a stop is none, so that statement leaves it out. Every part is an
  // insert of values or an update naming the customer: on Citus an insert fed by a select runs
  // through the coordinator as a copy, a two-phase commit (docs/running/citus.md#two-phase-commits).
  const health = !outcome.error?.startsWith('interrupted');
  await deps.db.query(
    `with attempt as (
       insert into webhook_attempts (customer_id, event_id, attempt, url, started_at, status, error, duration_ms, error_class)
       values ($12, $1, $2, $8, $9, $4, $5, $10, $11)
     )${
       health
         ? `, health as (
       -- failing_since: when the run of failures began (the first failure after a delivery).
       insert into webhook_receiver_health (customer_id, mode, consecutive_failures, last_failure_at, failing_since)
       values ($12, $13, case when $14 then 0 else 1 end, case when $14 then null else $7::timestamptz end,
               case when $14 then null else $7::timestamptz end)
       on conflict (customer_id, mode) do update
         set consecutive_failures = case when $14 then 0 else webhook_receiver_health.consecutive_failures + 1 end,
             last_failure_at = coalesce(excluded.last_failure_at, webhook_receiver_health.last_failure_at),
             failing_since = case when $14 then null
                                  when webhook_receiver_health.consecutive_failures = 0 then excluded.failing_since
                                  else coalesce(webhook_receiver_health.failing_since, excluded.failing_since) end
     )`
         : ''
     }
     update webhook_events
        set state = $3, locked_until = null, last_status = $4, last_error = $5,
            next_attempt_at = case when $3 = 'pending' then $6::timestamptz else next_attempt_at end,
            finished_at = case when $3 = 'pending' then null else $7::timestamptz end
      where customer_id = $12 and id = $1 and attempts = $2 and state = 'pending'`,
    [
      evt.id,
      evt.attempts,
      state,
      outcome.status,
      outcome.error,
      next,
      now,
      outcome.url,
      startedAt,
      durationMs,
      attemptErrorClass(outcome.status, outcome.error),
      evt.customerId,
      ...(health ? [evt.mode, delivered] : []),
    ],
    health ? 'webhook_record_attempt' : 'webhook_record_stopped_attempt',
  );
  const lagMs = delivered ? now.getTime() - evt.createdAt.getTime() : null;
  deps.metrics?.webhookAttempt(evt.mode, state === 'pending' ? 'failed' : state, lagMs);
  const fields = { status: outcome.status, error: outcome.error, host: hostOf(outcome.url), durationMs };
  if (delivered) log.info(fields, 'webhook delivered');
  else if (last) log.warn(fields, 'webhook attempt failed; no retries left, dropped');
  else log.info({ ...fields, retryAt: next.toISOString() }, 'webhook attempt failed; will retry');
}

async function drop(deps: Deps, evt: ClaimedEvent, reason: string, log: Deps['logger']) {
  // Nothing was sent: the attempt taken by the claim is given back.
  await deps.db.query(
    `update webhook_events
        set state = 'dropped', attempts = attempts - 1, locked_until = null, last_error = $3, finished_at = $4
      where customer_id = $5 and id = $1 and attempts = $2 and state = 'pending'`,
    [evt.id, evt.attempts, reason, deps.clock.now(), evt.customerId],
  );
  log.warn({ reason }, 'webhook event dropped');
}

/** Host and port only: a query string may carry the receiver's own token. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return redactQueryValues(url)?.slice(0, 100) ?? '';
  }
}
