// The admin CLI's views across customers:
//   events all [--state pending|delivered|failed] [--mode] [--customer ID] [--limit] [--cursor]
//   customers webhooks ID, webhooks remove ID --mode, customers health ID (customers enable ID is in admin-commands.ts)
//   money [--mode] [--from] [--to] [--csv]
// Lists print as one table (admin-format.ts `table`), a single record as `key: value` lines.
import { moneyCsv } from '../core/billing/money-by-day.ts';
import { type Command, customerPath, type Json, MODE, required, withQuery } from './admin-command.ts';
import { table } from './admin-format.ts';

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (...names: string[]) =>
  Object.fromEntries(names.map((n) => [n, { type: 'string' as const }]));
const text = (v: unknown) => (v === null || v === undefined ? '-' : String(v));

function formatEventsAcross(a: Json): string[] {
  const events = Array.isArray(a.events) ? a.events.filter(isObject) : [];
  if (!events.length) return ['no events'];
  const rows = events.map((e) => {
    const err = isObject(e.last_error) ? text(e.last_error.message) : '-';
    return [
      text(e.id),
      text(e.created_at),
      `${text(e.customer_id)} ${text(e.customer_name)}`,
      text(e.mode),
      text(e.state),
      String(Array.isArray(e.attempts) ? e.attempts.length : 0),
      err,
    ];
  });
  return [
    ...table(['id', 'created_at', 'customer', 'mode', 'state', 'attempts', 'last_error'], rows),
    ...(a.next_cursor ? [`more: add --cursor ${a.next_cursor}`] : []),
  ];
}

function formatReceivers(a: Json): string[] {
  const hooks = isObject(a.webhooks) ? a.webhooks : {};
  const lines = [`customer: ${a.customer_id}`];
  for (const [mode, w] of Object.entries(hooks)) {
    if (!isObject(w)) {
      lines.push(`${mode}: none registered`);
      continue;
    }
    const rate =
      w.success_rate === null ? 'nothing attempted' : `${Math.round(Number(w.success_rate) * 1000) / 10}%`;
    lines.push(
      `${mode}.url: ${w.url}`,
      `${mode}.registered_at: ${w.registered_at}`,
      `${mode}.last_${a.window_hours}h: ${w.delivered}/${w.attempted} delivered (${rate})`,
      `${mode}.failures_in_a_row: ${w.consecutive_failures}`,
      `${mode}.failing_since: ${text(w.failing_since)}`,
    );
  }
  return lines;
}

/** One line a mode, the mode in trouble first: its receiver and its refusals today by code. */
function formatHealth(a: Json): string[] {
  const modes = isObject(a.modes) ? a.modes : {};
  const first = a.trouble_first === 'test' ? ['test', 'live'] : ['live', 'test'];
  const lines = [
    `customer ${a.customer_id} on ${a.day}: ${a.trouble_first ? `look at ${a.trouble_first} first` : 'both modes quiet'}`,
  ];
  for (const mode of first) {
    const m = isObject(modes[mode]) ? modes[mode] : {};
    const w = isObject(m.webhook) ? m.webhook : null;
    const receiver = w
      ? `receiver ${w.url}, delivered ${w.delivered}/${w.attempted} in ${a.window_hours} h, ${w.consecutive_failures} failures in a row${w.failing_since ? ` since ${w.failing_since}` : ''}`
      : 'no receiver';
    const r = isObject(m.refusals_today) ? m.refusals_today : {};
    const codes = Array.isArray(r.by_error_code) ? r.by_error_code.filter(isObject) : [];
    const refused = codes.length
      ? codes.map((c) => `${c.error_code ?? 'no error code'} ×${c.count}`).join(', ')
      : 'none';
    lines.push(`${mode}: ${receiver}; refused today: ${refused}`);
  }
  return lines;
}

function formatMoney(a: Json): string[] {
  const days = Array.isArray(a.days) ? a.days.filter(isObject) : [];
  const cells = (d: Json) => [
    text(d.topups_usd),
    text(d.charges_usd),
    text(d.refunds_usd),
    text(d.adjustments_usd),
  ];
  const totals = isObject(a.totals) ? a.totals : {};
  return [
    `money across customers, ${a.mode ?? 'live and test'}, ${a.from} to ${a.to} (USD):`,
    ...table(
      ['date', 'topups', 'charges', 'refunds', 'adjustments'],
      [...days.map((d) => [text(d.date), ...cells(d)]), ['total', ...cells(totals)]],
    ),
  ];
}

export const WEBHOOK_COMMANDS: Command[] = [
  {
    name: 'events all',
    args: [],
    synopsis: '[--state pending|delivered|failed] [--mode M] [--customer ID] [--limit N] [--cursor C]',
    summary:
      "every customer's webhook events, newest first (default: failed), with the receiver's last error",
    options: strings('state', 'mode', 'customer', 'limit', 'cursor'),
    request: async (p) => {
      // Failed events unless another state is named; `--state any`: every state.
      const state = (p.values.state as string | undefined) ?? 'failed';
      const parsed = { ...p, values: { ...p.values, state: state === 'any' ? undefined : state } };
      const path = withQuery('/admin/v1/events', parsed, {
        state: 'state',
        mode: 'mode',
        customer: 'customer_id',
        limit: 'limit',
        cursor: 'cursor',
      });
      return { method: 'GET', path };
    },
    print: formatEventsAcross,
  },
  {
    name: 'customers webhooks',
    args: ['ID'],
    synopsis: '',
    summary: "the customer's webhook receivers (query values masked) with their last 24 hours",
    options: {},
    request: async (p) => ({ method: 'GET', path: `${customerPath(p)}/webhooks` }),
    print: formatReceivers,
  },
  {
    name: 'webhooks remove',
    args: ['CUSTOMER_ID'],
    synopsis: '--mode test|live',
    summary:
      "remove the customer's webhook of that mode: its jobs send no more events (pending ones are dropped)",
    options: { ...MODE },
    request: async (p) => ({
      method: 'DELETE',
      path: `${customerPath(p)}/webhooks/${encodeURIComponent(required(p, 'mode'))}`,
    }),
    print: (a) => [`customer ${a.customer_id}: ${a.mode} webhook ${a.removed} removed`],
  },
  {
    name: 'customers health',
    args: ['ID'],
    synopsis: '',
    summary:
      "the customer's live and test side by side: webhook receiver (delivered, failures in a row, since when) and refusals today by error code",
    options: {},
    request: async (p) => ({ method: 'GET', path: `${customerPath(p)}/health` }),
    print: formatHealth,
  },
  {
    name: 'money',
    args: [],
    synopsis: '[--mode live|test] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--csv]',
    summary: 'money across customers per UTC day: top-ups, charges, refunds, adjustments; --csv for a file',
    options: { ...strings('mode', 'from', 'to'), csv: { type: 'boolean' } },
    request: async (p) => ({
      method: 'GET',
      path: withQuery('/admin/v1/money', p, { mode: 'mode', from: 'from', to: 'to' }),
    }),
    print: formatMoney,
    // Dates and numbers only: the service's own writer, the bytes of GET /admin/v1/money as CSV.
    document: (a, p) =>
      p.values.csv ? `${moneyCsv((a.days ?? []) as Parameters<typeof moneyCsv>[0]).trimEnd()}\n` : undefined,
  },
];
