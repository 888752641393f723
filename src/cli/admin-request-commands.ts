// The request log and lookup by id: `admin requests` lists refused and failed public API answers
// with why each failed (the error's message, a redeem's outcomes, its player and job), counted by
// error code above the list; `admin lookup ID` says what an id names. Same shape as
// admin-commands.ts.
import { type Command, id, type Json, withQuery } from './admin-command.ts';
import { table } from './admin-format.ts';

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const orDash = (v: unknown) => (v === null || v === undefined ? '-' : String(v));

/** A redeem's outcomes as `bad_player ×1, failed ×2`. */
export const outcomesText = (outcomes: unknown) =>
  isObject(outcomes)
    ? Object.entries(outcomes)
        .map(([status, n]) => `${status} ×${n}`)
        .join(', ')
    : '';

/** The counts by error code above the list: `6 refused or failed: not_found ×3, no_stock ×2`. */
function formatCounts(a: Json): string[] {
  const counts = isObject(a.counts) ? a.counts : null;
  if (!counts || !Array.isArray(counts.by_error_code) || counts.total === 0) return [];
  const parts = counts.by_error_code
    .filter(isObject)
    .map((c) => `${c.error_code ?? 'no error code'} ×${c.count}`);
  const day = typeof a.day === 'string' ? ` on ${a.day}` : '';
  const more = counts.complete === false ? ' (at least)' : '';
  return [`${counts.total}${more} refused or failed${day} by error code: ${parts.join(', ')}`];
}

function formatRequests(a: Json): string[] {
  const rows = (Array.isArray(a.requests) ? a.requests.filter(isObject) : []).map((r) => [
    String(r.at),
    r.customer_id === null ? '-' : `${r.customer_id}${r.customer_name ? ` ${r.customer_name}` : ''}`,
    r.key_prefix ? `${r.key_prefix}${r.key_label ? ` (${r.key_label})` : ''}` : '-',
    orDash(r.mode),
    `${r.method} ${r.path}`,
    String(r.status),
    orDash(r.error_code),
    outcomesText(r.outcomes) || orDash(r.message),
    orDash(r.player_id),
    orDash(r.job_id),
    String(r.request_id),
    String(r.ip),
    `${r.duration_ms} ms`,
  ]);
  if (!rows.length) return ['no refused or failed requests'];
  return [
    ...formatCounts(a),
    'refused and failed requests, newest first:',
    ...table(
      [
        'at',
        'customer',
        'key',
        'mode',
        'request',
        'status',
        'error_code',
        'why',
        'player',
        'job',
        'request_id',
        'ip',
        'took',
      ],
      rows,
    ),
    ...(a.next_cursor ? [`more: add --cursor ${a.next_cursor}`] : []),
  ];
}

function formatLookup(a: Json): string[] {
  if (!a.found) return [a.kind ? `no ${a.kind} ${a.q}` : `${a.q} is not a request, job, event or player id`];
  if (a.kind === 'request')
    return [
      `request ${a.q}: customer ${orDash(a.customer_id)}; job ${orDash(a.job_id)}; ${a.logged} row(s) in the request log`,
    ];
  if (a.kind === 'job') return [`job ${a.job_id} of customer ${a.customer_id}`];
  if (a.kind === 'event')
    return [`event ${a.event_id} of customer ${a.customer_id} (${a.mode}), job ${a.job_id}`];
  return [
    `player ${a.player_id}: ${a.jobs === 1000 ? 'at least 1000' : a.jobs} job(s) (admin jobs list --player ${a.player_id})`,
  ];
}

export const REQUEST_COMMANDS: Command[] = [
  {
    name: 'requests',
    args: [],
    synopsis:
      '[--customer ID|NAME] [--player P] [--day YYYY-MM-DD|today] [--mode test|live] [--status 404|4xx|5xx] [--error-code C] [--request-id R] [--since ISO] [--limit N] [--cursor C]',
    summary:
      'the request log: refused and failed public API answers and why, counted by error code, newest first (no bodies, no keys)',
    options: {
      customer: { type: 'string' },
      player: { type: 'string' },
      day: { type: 'string' },
      mode: { type: 'string' },
      status: { type: 'string' },
      'error-code': { type: 'string' },
      'request-id': { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
    },
    request: async (p) => ({
      method: 'GET',
      path: withQuery('/admin/v1/requests', p, {
        customer: 'customer',
        player: 'player_id',
        day: 'day',
        mode: 'mode',
        status: 'status',
        'error-code': 'error_code',
        'request-id': 'request_id',
        since: 'since',
        limit: 'limit',
        cursor: 'cursor',
      }),
    }),
    print: formatRequests,
  },
  {
    name: 'lookup',
    args: ['ID'],
    synopsis: '',
    summary: 'what an id names: a request (req_…), job (job_…), event (evt_…) or player id',
    options: {},
    request: async (p) => ({
      method: 'GET',
      path: `/admin/v1/lookup?q=${id(p)}`,
    }),
    print: formatLookup,
  },
];
