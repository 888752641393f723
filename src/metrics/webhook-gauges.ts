// Webhook backlog gauges (docs/reference/running.md#metrics, docs/reference/webhooks-and-events.md#fair-delivery), read from the database at scrape time
// (webhookBacklog, core/webhooks/backlog.ts). No customer is a label: the series stay a closed set.
import { Gauge, type Registry } from 'prom-client';
import { type WebhookBacklog, webhookBacklog } from '../core/webhooks/backlog.ts';
import type { Database } from '../db/database.ts';

const PREFIX = 'redeem_gateway_';
const PENDING_STATES = ['due', 'sending', 'retry_wait'] as const;
/** A scrape answers without these gauges rather than hang on a database that does not answer. */
const QUERY_TIMEOUT_MS = 2000;

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
  let current: Promise<WebhookBacklog> | null = null;
  const query = () => {
    current = withTimeout(webhookBacklog(db), QUERY_TIMEOUT_MS);
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
