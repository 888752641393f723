// The webhook worker loop (docs/reference/webhooks-and-events.md#deliveries, docs/reference/webhooks-and-events.md#fair-delivery; docs/architecture.md#house-rules, "Outbox for webhooks"). Each pass
// claims as many attempts as this process has free slots, fairly across customers
// (fair-claim.ts), and starts each one on its own: no attempt waits for another, so a receiver
// that never answers holds only its own slots (at most 4 of its customer's, one while it keeps
// failing) and never a batch. A finished attempt wakes the loop to fill its slot at once.
import type { Queryable } from '../../db/database.ts';
import { startBackgroundLoop } from '../background-loop.ts';
import { onReachableWorker } from '../work-queue.ts';
import { deliverEvent, envelopeBody, sendAttempt } from './delivery.ts';
import { claimDueEventsFairly, claimDueRedeliveries } from './fair-claim.ts';
import { expireStaleRedeliveries, sendRedelivery } from './redelivery.ts';
import type { Deps, WebhookWorkerOptions } from './worker-types.ts';

export interface WebhookWorker {
  /** Look for due events now instead of at the next poll. */
  wake(): void;
  /** Attempts (scheduled and redeliveries) this process is sending now. */
  inFlight(): number;
  /** Stops the loop, aborts attempts in flight (they count as failed and are retried) and waits. */
  stop(): Promise<void>;
}

/** Starts the loop. On the embedded database, where only this process runs, leases left by a killed process are released first. */
export function startWebhookWorker(deps: Deps, opts: WebhookWorkerOptions = {}): WebhookWorker {
  const stopping = new AbortController();
  const concurrency = opts.concurrency ?? 10;
  const leaseMs = opts.leaseMs ?? 60_000;
  const running = new Set<Promise<void>>();
  let leasesReleased = deps.db.kind !== 'pglite';

  // Runs one attempt on its own; its end frees the slot and wakes the loop.
  const spawn = (attempt: Promise<void>) => {
    const tracked = attempt.finally(() => {
      running.delete(tracked);
      if (!stopping.signal.aborted) loop.wake();
    });
    running.add(tracked);
  };

  const loop = startBackgroundLoop({
    name: 'webhook worker',
    intervalMs: opts.pollMs ?? 300,
    maxBackoffMs: opts.maxBackoffMs ?? 30_000,
    logger: deps.logger,
    async pass() {
      if (!leasesReleased) {
        await releaseLeases(deps.db);
        leasesReleased = true;
      }
      // Read on every worker: while one does not answer, the others' (readAcrossCustomers); the
      // claims go on whatever this finds.
      await onReachableWorker(() => expireStaleRedeliveries(deps));
      const free = concurrency - running.size;
      if (free <= 0) return false;
      const claim = { limit: free, leaseMs, perCustomer: opts.perCustomer };
      // Redeliveries (docs/reference/webhooks-and-events.md#redelivery) run beside the schedule, never as part of it.
      const redeliveries = await claimDueRedeliveries(deps, claim);
      const sender = { send: sendAttempt, envelope: envelopeBody };
      for (const r of redeliveries) spawn(sendRedelivery(deps, opts, sender, r, stopping.signal));
      const events = await claimDueEventsFairly(deps, { ...claim, limit: free - redeliveries.length });
      for (const evt of events) spawn(deliverEvent(deps, opts, evt, stopping.signal));
      // Every free slot filled: more may be due once one frees (its end wakes the loop).
      return false;
    },
  });

  return {
    wake: () => loop.wake(),
    inFlight: () => running.size,
    async stop() {
      stopping.abort();
      await loop.stop();
      await Promise.allSettled([...running]);
    },
  };
}

/** Leases held by a process that no longer exists (embedded database: only this process runs). */
async function releaseLeases(db: Queryable): Promise<void> {
  await db.query(
    `update webhook_events set locked_until = null where state = 'pending' and locked_until is not null`,
  );
}
