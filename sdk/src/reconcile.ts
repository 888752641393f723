// client.events and client.statements: the webhook event log with redelivery, and statements
// (JSON, or the CSV text as the service writes it). Each call goes through the client's one
// request path (retries, errors), handed in by the client.
import type { Call, CallOptions } from './call.js';
import type {
  EventDetail,
  EventListOptions,
  EventPage,
  RedeliveryAccepted,
  Statement,
  StatementRange,
} from './reconcile-types.js';

const query = (params: object) => {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== null);
  return entries.length ? `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)]))}` : '';
};

export class EventsApi {
  readonly #call: Call;
  constructor(call: Call) {
    this.#call = call;
  }

  /** GET /v1/events: one page, newest first. */
  page(filter: EventListOptions = {}, options: CallOptions = {}): Promise<EventPage> {
    return this.#call<EventPage>('GET', `/v1/events${query(filter)}`, undefined, options);
  }

  /**
   * Every page from `filter.cursor` on, as an async iterator of pages (newest first): stop early
   * with `break`. `for await (const page of client.events.list({ state: 'failed' })) …`
   */
  async *list(filter: EventListOptions = {}, options: CallOptions = {}): AsyncGenerator<EventPage, void> {
    let cursor = filter.cursor;
    do {
      const page = await this.page({ ...filter, ...(cursor ? { cursor } : {}) }, options);
      yield page;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** GET /v1/events/{id}: the event with its attempts and its payload's data. */
  get(eventId: string, options: CallOptions = {}): Promise<EventDetail> {
    return this.#call<EventDetail>('GET', `/v1/events/${encodeURIComponent(eventId)}`, undefined, options);
  }

  /**
   * POST /v1/events/{id}/redeliver: one extra attempt now, to the URL and with the secret
   * registered now (same event id and SVC-Delivery-Id). A 409 `conflict` says no webhook is
   * registered or a redelivery of it is still in flight; neither is retried.
   */
  redeliver(eventId: string, options: CallOptions = {}): Promise<RedeliveryAccepted> {
    return this.#call<RedeliveryAccepted>(
      'POST',
      `/v1/events/${encodeURIComponent(eventId)}/redeliver`,
      undefined,
      options,
    );
  }
}

export class StatementsApi {
  readonly #call: Call;
  constructor(call: Call) {
    this.#call = call;
  }

  /** GET /v1/statements: per UTC day, the requests, outcomes and money (exact to the micro-dollar). */
  get(range: StatementRange = {}, options: CallOptions = {}): Promise<Statement> {
    return this.#call<Statement>('GET', `/v1/statements${query(range)}`, undefined, options);
  }

  /** The same statement as CSV text (RFC 4180, a header row, one row per day). */
  csv(range: StatementRange = {}, options: CallOptions = {}): Promise<string> {
    return this.#call<string>('GET', `/v1/statements${query(range)}`, undefined, options, {
      Accept: 'text/csv',
    });
  }
}
