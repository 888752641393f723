// The webhook worker's shared shapes, in a file of their own so that the sender (delivery.ts),
// redeliveries (redelivery.ts), the fair claim and the worker loop (worker.ts) all import them
// without importing each other in a circle.

import type { AppContext } from '../context.ts';
import type { JobEvent, Mode } from '../vocabulary.ts';
import type { LookupFn } from './url-guard.ts';

export interface WebhookWorkerOptions {
  /** Pause between looks for due events when there is nothing to do. Default 300 ms. */
  pollMs?: number;
  /** Events claimed at most by one claim (a one-shot pass, deliverDueEvents). Default 10. */
  batchSize?: number;
  /** Attempts this process runs at once, each on its own (the worker loop). Default 10. */
  concurrency?: number;
  /** Attempts of one customer running at once, across processes (docs/reference/webhooks-and-events.md#fair-delivery). Default 4. */
  perCustomer?: number;
  /** How long a claimed event stays reserved for this process. Default 60 s (over the timeout). */
  leaseMs?: number;
  /** A 2xx must arrive within this. Default 10 s. */
  timeoutMs?: number;
  /** Host name resolution (tests inject one). Default: the shared webhook resolver (resolver.ts). */
  lookup?: LookupFn;
  /** Certificate authorities to trust instead of Node's (tests only; operators use NODE_EXTRA_CA_CERTS). */
  ca?: string | Buffer;
  /** Longest pause after the loop itself failed (database down). Default 30 s. */
  maxBackoffMs?: number;
}

export type Deps = Pick<AppContext, 'db' | 'config' | 'clock' | 'logger' | 'codeKey'> &
  Partial<Pick<AppContext, 'metrics'>>;

export interface ClaimedEvent {
  id: string;
  customerId: number;
  mode: Mode;
  jobId: string;
  event: JobEvent;
  createdAt: Date;
  attempts: number;
}

export interface AttemptOutcome {
  status: number | null;
  error: string | null;
  url: string;
}

/** Attempts of one customer at once (docs/reference/webhooks-and-events.md#fair-delivery). */
export const PER_CUSTOMER_ATTEMPTS = 4;
/** Consecutive failed attempts after which a receiver gets one attempt at a time. */
export const FAILING_RECEIVER_THRESHOLD = 3;
