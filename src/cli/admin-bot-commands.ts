// The chat bot's operator commands (docs/reference/bot.md#links-and-roles, docs/reference/bot.md#top-ups): the bot's state, a link that lets one
// person in (its token shown once), the people bound to a customer and unbinding one, and the
// wallet top-up requests the bot's owners make, which an operator approves or rejects.
// Same shape as admin-commands.ts: the API validates, these only shape requests and lines.
import { type Command, customerPath, id, type Json, required, withQuery } from './admin-command.ts';
import { table } from './admin-format.ts';

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const cell = (v: unknown) => (v === null || v === undefined || v === '' ? '-' : String(v));

/** One top-up request as a line (approve, reject). */
const describeRequest = (r: Json) =>
  `top-up request ${r.id}: ${r.usd} USD (${r.mode}) for customer ${r.customer_id}, ${r.state}`;

function formatBotUsers(a: Json, customerId: string): string[] {
  const users = Array.isArray(a.users) ? a.users.filter(isObject) : [];
  if (!users.length) return [`no one is bound to the bot for customer ${customerId}`];
  const rows = users.map((u) => [
    cell(u.user_id),
    cell(u.telegram_user_id),
    u.username ? `@${u.username}` : '-',
    cell(u.role),
    cell(u.bound_at),
    cell(u.last_seen_at),
  ]);
  return [
    `bot users of customer ${customerId}:`,
    ...table(['user_id', 'telegram_id', 'username', 'role', 'bound_at', 'last_seen_at'], rows),
  ];
}

/**
 * What else a row says: for an unmatched payment, what the operator refunds (the Telegram charge
 * id, what was paid, why it credited nothing); for a request, the reason it was rejected or voided.
 */
function noteOf(r: Json): string {
  if (r.state === 'unmatched')
    return `charge ${cell(r.telegram_payment_charge_id)}, paid ${cell(r.total_amount)} ${cell(r.currency)} (smallest unit), ${cell(r.reason)}; refund it`;
  return cell(r.reason);
}

function formatTopups(a: Json): string[] {
  const requests = Array.isArray(a.requests) ? a.requests.filter(isObject) : [];
  if (!requests.length) return ['no top-up requests'];
  const rows = requests.map((r) => [
    cell(r.id),
    cell(r.customer_id),
    cell(r.mode),
    cell(r.usd),
    cell(r.state),
    cell(r.telegram_user_id),
    cell(r.created_at),
    cell(r.decided_at),
    cell(r.decided_by),
    noteOf(r),
  ]);
  return [
    'top-up requests, newest first:',
    ...table(
      [
        'id',
        'customer',
        'mode',
        'usd',
        'state',
        'telegram_id',
        'created_at',
        'decided_at',
        'decided_by',
        'note',
      ],
      rows,
    ),
  ];
}

export const BOT_COMMANDS: Command[] = [
  {
    name: 'bot status',
    args: [],
    synopsis: '',
    summary: 'whether the chat bot is on, its username, how updates arrive, linked people',
    options: {},
    request: async () => ({ method: 'GET', path: '/admin/v1/bot' }),
    print: (a) => [
      a.enabled
        ? `bot: on as @${a.username}, updates by ${a.updates}, last update ${a.last_update_at ?? 'never'}`
        : 'bot: off (set BOT_TOKEN to turn it on)',
      `linked people: ${a.linked_users}`,
      ...(a.updates === 'polling' && a.enabled
        ? [
            `polling now: ${a.polling_instance ?? 'no process (the lease is free)'} (this process: ${a.this_instance})`,
          ]
        : []),
    ],
  },
  {
    name: 'bot link',
    args: ['CUSTOMER_ID'],
    synopsis: '--role owner|staff',
    summary: 'a link that binds one Telegram user to the customer; shown once, single use, 24 h',
    options: { role: { type: 'string' } },
    request: async (p) => ({
      method: 'POST',
      path: `${customerPath(p)}/bot-links`,
      body: { role: required(p, 'role') },
    }),
    print: (a, p, sent) => [
      `link ${a.link_id} for customer ${p.args[0]} as ${sent.role}: single use, valid 24 h (until ${a.expires_at}); shown only this once:`,
      String(a.url),
      `token: ${a.token} (or the person sends the bot: /start ${a.token})`,
    ],
  },
  {
    name: 'bot users',
    args: ['CUSTOMER_ID'],
    synopsis: '',
    summary: 'the Telegram users bound to the customer, with role, when bound and last seen',
    options: {},
    request: async (p) => ({ method: 'GET', path: `${customerPath(p)}/bot-users` }),
    print: (a, p) => formatBotUsers(a, p.args[0]!),
  },
  {
    name: 'bot unbind',
    args: ['BOT_USER_ID'],
    synopsis: '',
    summary: 'unbind a bot user (bu_…): from now on that person is treated as unlinked',
    options: {},
    request: async (p) => ({ method: 'POST', path: `/admin/v1/bot-users/${id(p)}/unbind` }),
    print: (a) => [`bot user ${a.user_id} unbound from customer ${a.customer_id}`],
  },
  {
    name: 'topups list',
    args: [],
    synopsis: '[--state pending|paid|approved|rejected|expired|unmatched] [--customer ID]',
    summary:
      'wallet top-up requests made in the chat bot, and payments that credited nothing (unmatched), newest first',
    options: { state: { type: 'string' }, customer: { type: 'string' } },
    request: async (p) => ({
      method: 'GET',
      path: withQuery('/admin/v1/topup-requests', p, { state: 'state', customer: 'customer_id' }),
    }),
    print: formatTopups,
  },
  {
    name: 'topups approve',
    args: ['REQUEST_ID'],
    synopsis: '',
    summary: 'approve a top-up request (tpr_…): the wallet is credited once, however often it is sent',
    options: {},
    request: async (p) => ({ method: 'POST', path: `/admin/v1/topup-requests/${id(p)}/approve` }),
    print: (a) => {
      const r = isObject(a.request) ? a.request : {};
      return [`${describeRequest(r)}; balance ${a.balance_usd} USD`];
    },
  },
  {
    name: 'topups reject',
    args: ['REQUEST_ID'],
    synopsis: '--reason TEXT',
    summary: 'reject a pending top-up request; the person who asked is told in the chat',
    options: { reason: { type: 'string' } },
    request: async (p) => ({
      method: 'POST',
      path: `/admin/v1/topup-requests/${id(p)}/reject`,
      body: { reason: required(p, 'reason') },
    }),
    print: (a) => {
      const r = isObject(a.request) ? a.request : {};
      return [describeRequest(r)];
    },
  },
];
