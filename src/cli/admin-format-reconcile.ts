// Readable tables for the operator's jobs list, event log and statements in the admin CLI.
// `--json` prints the API's answer instead, so scripts never depend on these lines.
import { CODE_STATUSES } from '../core/vocabulary.ts';
import { table } from './admin-format.ts';

type Json = Record<string, unknown>;
const rowsOf = (v: unknown): Json[] =>
  Array.isArray(v) ? v.filter((x): x is Json => typeof x === 'object' && x !== null) : [];
const text = (v: unknown) => (v === null || v === undefined ? '-' : String(v));
const more = (a: Json) => (a.next_cursor ? [`more: add --cursor ${a.next_cursor}`] : []);

/** A job's badge: what an operator must look at, even when its status says completed. */
export function jobBadge(j: Json): string {
  if (j.attention === 'quarantined') return 'QUARANTINED';
  if (j.attention === 'nothing_activated') return 'NONE ACTIVATED';
  return 'ok';
}

/** GET /admin/v1/jobs as a table: per-outcome counts and the customer by name. */
export function formatJobs(a: Json): string[] {
  const jobs = rowsOf(a.jobs);
  if (!jobs.length) return ['no jobs'];
  const rows = jobs.map((j) => {
    const o = (j.outcomes ?? {}) as Json;
    return [
      text(j.job_id),
      text(j.created_at),
      `${text(j.customer_id)} ${text(j.customer_name)}`,
      text(j.mode),
      j.async ? 'async' : 'sync',
      text(j.status),
      jobBadge(j),
      `${text(j.done)}/${text(j.codes)}`,
      text(o.activated),
      text(o.billed_failures),
      text(o.refunded),
      text(o.quarantined),
    ];
  });
  return [
    ...table(
      [
        'job',
        'created',
        'customer',
        'mode',
        'kind',
        'status',
        'check',
        'done',
        'activated',
        'billed_fail',
        'refunded',
        'quarantined',
      ],
      rows,
    ),
    ...more(a),
  ];
}

function lastAttempt(e: Json): string {
  const attempts = rowsOf(e.attempts);
  const last = attempts.at(-1);
  if (!last) return '-';
  return `${last.error ?? last.status}${last.redelivery ? ' (redelivery)' : ''}`;
}

/** A customer's webhook events as a table, newest first. */
export function formatEvents(a: Json): string[] {
  const events = rowsOf(a.events);
  if (!events.length) return ['no events'];
  const rows = events.map((e) => [
    text(e.id),
    text(e.created_at),
    text(e.mode),
    text(e.event),
    text(e.job_id),
    text(e.state),
    String(rowsOf(e.attempts).length),
    lastAttempt(e),
    text(e.next_attempt_at),
  ]);
  return [
    ...table(['event', 'created', 'mode', 'type', 'job', 'state', 'attempts', 'last', 'next'], rows),
    ...more(a),
  ];
}

/** One event with each attempt on its line. */
export function formatEvent(e: Json): string[] {
  const lines = [
    `event ${e.id} (${e.event}) of job ${e.job_id}, ${e.mode}: ${e.state}`,
    `  created: ${e.created_at}   next attempt: ${text(e.next_attempt_at)}`,
  ];
  const attempts = rowsOf(e.attempts);
  if (!attempts.length) return [...lines, '  no attempts yet'];
  const rows = attempts.map((x) => [
    text(x.at),
    text(x.status),
    text(x.error),
    `${text(x.duration_ms)} ms`,
    x.redelivery ? 'redelivery' : 'scheduled',
  ]);
  return [...lines, ...table(['at', 'status', 'error', 'duration', 'kind'], rows)];
}

/** A statement as a table of days and a totals line. */
export function formatStatement(a: Json): string[] {
  const head = `statement ${a.mode} ${a.from} .. ${a.to} (${a.currency})`;
  const line = (label: string, d: Json) => {
    const c = (d.codes ?? {}) as Json;
    return [
      label,
      text(d.requests_included),
      text(d.requests_overage),
      text(d.requests_refunded),
      CODE_STATUSES.map((status) => text(c[status])).join('/'),
      text(d.charged_usd),
      text(d.topups_usd),
      text(d.adjustments_usd),
      text(d.opening_balance_usd),
      text(d.closing_balance_usd),
    ];
  };
  const rows = [...rowsOf(a.days).map((d) => line(text(d.date), d)), line('total', (a.totals ?? {}) as Json)];
  return [
    head,
    ...table(
      [
        'date',
        'included',
        'overage',
        'refunded',
        CODE_STATUSES.join('/'),
        'charged',
        'topups',
        'adjust',
        'opening',
        'closing',
      ],
      rows,
    ),
  ];
}
