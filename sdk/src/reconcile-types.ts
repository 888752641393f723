// The bodies of the event log (GET /v1/events …) and statements (GET /v1/statements), as the
// OpenAPI document describes them. String unions stay open: new values may appear.
import type { KnownCodeStatus, Mode, Open } from './types.js';

export type EventState = Open<'pending' | 'delivered' | 'failed'>;
export type AttemptError = Open<'timeout' | 'connection' | 'tls' | 'blocked' | 'http_status'>;

export interface EventAttempt {
  at: string;
  /** The receiver's HTTP status; null when none came. */
  status: number | null;
  /** Null when the attempt got a 2xx. */
  error: AttemptError | null;
  duration_ms: number;
  /** Sent on request (events.redeliver), outside the automatic schedule. */
  redelivery: boolean;
}

export interface EventRecord {
  id: string;
  event: Open<'redeem.completed' | 'redeem.failed'>;
  job_id: string;
  mode?: Mode;
  created_at: string;
  state: EventState;
  next_attempt_at: string | null;
  attempts: EventAttempt[];
}

export interface EventPage {
  ok: true;
  request_id: string;
  events: EventRecord[];
  next_cursor: string | null;
}

export interface EventDetail extends EventRecord {
  ok: true;
  request_id: string;
  /** The payload's `data`, as a delivery now would carry it. */
  data: Record<string, unknown>;
}

export interface RedeliveryAccepted {
  ok: true;
  request_id: string;
  event_id: string;
}

export interface EventListOptions {
  state?: EventState;
  type?: string;
  job_id?: string;
  /** Events per page, 1 to 100 (default 20). */
  limit?: number;
  /** Start after this cursor (a page's `next_cursor`). */
  cursor?: string;
}

export interface StatementCounts {
  requests_included: number;
  requests_overage: number;
  requests_refunded: number;
  codes: Record<KnownCodeStatus, number>;
  charged_usd: number;
  topups_usd: number;
  adjustments_usd: number;
  opening_balance_usd: number;
  closing_balance_usd: number;
}

export interface StatementDay extends StatementCounts {
  /** A UTC day, YYYY-MM-DD. */
  date: string;
}

export interface Statement {
  ok: true;
  request_id: string;
  mode: Mode;
  currency: 'USD';
  from: string;
  to: string;
  days: StatementDay[];
  totals: StatementCounts;
}

export interface StatementRange {
  /** First UTC day, YYYY-MM-DD (default: 29 days before `to`). */
  from?: string;
  /** Last UTC day, included (default: today). */
  to?: string;
}
