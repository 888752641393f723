// Webhook backlog gauges (contract 12.8 and 13.8), read from the database at scrape time: pending
// events by state (due, sending, waiting for a retry), redeliveries queued and being sent, the
// age of the oldest pending event, and the receivers backed off for failing. Only pending rows
// are read (the partial index webhook_events_due), so a scrape costs the same however many
// events were delivered. No customer is a label: the series stay a closed set.
import { Gauge, type Registry } from 'prom-client';
import type { Database } from '../db/database.ts';

const PREFIX = 'redeem_gateway_';
const PENDING_STATES = ['due', 'sending', 'retry_wait'] as const;
/** A scrape answers without these gauges rather than hang on a database that does not answer. */
const QUERY_TIMEOUT_MS = 2000;
/** Receivers with this many consecutive failures or more are backed off (core/webhooks/worker-types.ts). */
const FAILING_RECEIVER_THRESHOLD = 3;

interface Backlog {
  due: number;
  sending: number;
  retry_wait: number;
  redeliveries_queued: number;
  redeliveries_sending: number;
  oldest_age_seconds: number | null;
  receivers_backed_off: number;
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export function registerWebhookGauges(registers: Registry[], db: Pick<Database, 'query'>): void {
  // One query serves every gauge of a scrape: the first gauge's collect starts it (a scrape calls
  // the collects in registration order, at once), the other gauges' collects await the same one.
  let current: Promise<Backlog> | null = null;
  const query = () => {
    current = withTimeout(
      db
        .query<Backlog>(
          `select count(*) filter (where next_attempt_at <= now() and (locked_until is null or locked_until <= now()))::int as due,
                  count(*) filter (where locked_until > now())::int as sending,
                  count(*) filter (where next_attempt_at > now() and (locked_until is null or locked_until <= now()))::int as retry_wait,
                  (select count(*)::int from webhook_redeliveries where state = 'queued') as redeliveries_queued,
                  (select count(*)::int from webhook_redeliveries where state = 'sending') as redeliveries_sending,
                  extract(epoch from now() - min(created_at))::float8 as oldest_age_seconds,
                  (select count(*)::int from webhook_receiver_health where consecutive_failures >= $1) as receivers_backed_off
             from webhook_events where state = 'pending'`,
          [FAILING_RECEIVER_THRESHOLD],
        )
        .then((r) => r.rows[0]!),
      QUERY_TIMEOUT_MS,
    );
    return current;
  };
  const read = () => current ?? query();

  new Gauge({
    name: `${PREFIX}webhook_events_pending`,
    help: 'Webhook events pending now, by state: due (waiting for a slot), sending, retry_wait (read at scrape time)',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      try {
        const b = await query();
        for (const state of PENDING_STATES) this.set({ state }, b[state]);
      } catch {
        this.reset();
      }
    },
  });
  new Gauge({
    name: `${PREFIX}webhook_redeliveries`,
    help: 'Webhook redeliveries not done yet, by state (queued, sending)',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      try {
        const b = await read();
        this.set({ state: 'queued' }, b.redeliveries_queued);
        this.set({ state: 'sending' }, b.redeliveries_sending);
      } catch {
        this.reset();
      }
    },
  });
  new Gauge({
    name: `${PREFIX}webhook_oldest_pending_age_seconds`,
    help: 'Age of the oldest pending webhook event (0 when none is pending)',
    registers,
    async collect() {
      try {
        this.set((await read()).oldest_age_seconds ?? 0);
      } catch {
        this.reset();
      }
    },
  });
  new Gauge({
    name: `${PREFIX}webhook_receivers_backed_off`,
    help: 'Webhook receivers given one attempt at a time because their recent attempts all failed',
    registers,
    async collect() {
      try {
        this.set((await read()).receivers_backed_off);
      } catch {
        this.reset();
      }
    },
  });
}
