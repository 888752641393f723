// The admin CLI's event log and statement commands (docs/reference/webhooks-and-events.md#the-event-log, docs/reference/statements.md#the-answer):
//   events list CUSTOMER_ID, events show EVENT_ID, events redeliver EVENT_ID,
//   statements CUSTOMER_ID [--mode] [--from] [--to] [--csv].
import { statementCsv } from '../core/billing/statement-csv.ts';
import type { Command, Json, Parsed } from './admin-command.ts';
import { formatEvent, formatEvents, formatStatement } from './admin-format-reconcile.ts';

const str = (p: Parsed, name: string) => p.values[name] as string | undefined;
const arg = (p: Parsed) => encodeURIComponent(p.args[0]!);

function withQuery(path: string, p: Parsed, names: string[]): string {
  const query = new URLSearchParams();
  for (const name of names) {
    const v = str(p, name);
    if (v !== undefined) query.set(name === 'job' ? 'job_id' : name, v);
  }
  const q = query.toString();
  return q ? `${path}?${q}` : path;
}

const strings = (...names: string[]) =>
  Object.fromEntries(names.map((n) => [n, { type: 'string' as const }]));

export const RECONCILE_COMMANDS: Command[] = [
  {
    name: 'events list',
    args: ['customer_id'],
    synopsis: '[--mode M] [--state pending|delivered|failed] [--type T] [--job ID] [--limit N] [--cursor C]',
    summary: "a customer's webhook events, newest first, with their attempts",
    options: strings('mode', 'state', 'type', 'job', 'limit', 'cursor'),
    request: async (p) => ({
      method: 'GET',
      path: withQuery(`/admin/v1/customers/${arg(p)}/events`, p, [
        'mode',
        'state',
        'type',
        'job',
        'limit',
        'cursor',
      ]),
    }),
    print: formatEvents,
  },
  {
    name: 'events show',
    args: ['event_id'],
    synopsis: '',
    summary: 'one webhook event with every attempt',
    options: {},
    request: async (p) => ({ method: 'GET', path: `/admin/v1/events/${arg(p)}` }),
    print: formatEvent,
  },
  {
    name: 'events redeliver',
    args: ['event_id'],
    synopsis: '',
    summary: "send an event once more, now, to the customer's current URL (the schedule is untouched)",
    options: {},
    request: async (p) => ({ method: 'POST', path: `/admin/v1/events/${arg(p)}/redeliver` }),
    print: (a) => [`redelivery of ${a.event_id} queued; see: events show ${a.event_id}`],
  },
  {
    name: 'statements',
    args: ['customer_id'],
    synopsis: '[--mode live|test] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--csv]',
    summary: "a customer's statement per UTC day (default: live, the 30 days ending today); --csv for a file",
    options: { ...strings('mode', 'from', 'to'), csv: { type: 'boolean' } },
    request: async (p) => ({
      method: 'GET',
      path: withQuery(`/admin/v1/customers/${arg(p)}/statements`, p, ['mode', 'from', 'to']),
    }),
    print: (a) => formatStatement(a as Json),
    // The CSV is written from the JSON answer by the service's own writer: the same bytes as
    // GET …/statements with Accept: text/csv (dates and numbers only).
    document: (a, p) =>
      p.values.csv
        ? `${statementCsv(a as unknown as Parameters<typeof statementCsv>[0]).trimEnd()}\n`
        : undefined,
  },
];
