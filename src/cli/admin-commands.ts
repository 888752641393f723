import { CODE_STATUSES } from '../core/vocabulary.ts';
import {
  bool,
  type Command,
  customerPath,
  IDEMPOTENCY,
  id,
  idempotencyHeader,
  type Json,
  list,
  MODE,
  required,
  str,
  timestampOrNull,
  UsageError,
  withQuery,
} from './admin-command.ts';
import { describePlan, formatCustomer, formatCustomers, formatLedger } from './admin-format.ts';
import { formatJobs } from './admin-format-reconcile.ts';

export const COMMANDS: Command[] = [
  {
    name: 'customers create',
    args: [],
    synopsis: '--name NAME',
    summary: 'create a customer; prints its id',
    options: { name: { type: 'string' } },
    request: async (p) => ({
      method: 'POST',
      path: '/admin/v1/customers',
      body: { name: required(p, 'name') },
    }),
    print: (a) => [`customer ${a.customer_id} created`],
  },
  {
    name: 'customers show',
    args: ['ID'],
    synopsis: '',
    summary: 'the customer, plan, subscription, keys (no secrets), wallets and usage',
    options: {},
    request: async (p) => ({ method: 'GET', path: customerPath(p) }),
    print: formatCustomer,
  },
  {
    name: 'customers disable',
    args: ['ID'],
    synopsis: '',
    summary: 'disable a customer: every key of it is refused from now on',
    options: {},
    request: async (p) => ({ method: 'POST', path: `${customerPath(p)}/disable` }),
    print: (a) => [`customer ${a.customer_id} disabled`],
  },
  {
    name: 'customers enable',
    args: ['ID'],
    synopsis: '',
    summary: 'enable a disabled customer again: its keys that are not revoked or expired work again',
    options: {},
    request: async (p) => ({ method: 'POST', path: `${customerPath(p)}/enable` }),
    print: (a) => [`customer ${a.customer_id} enabled`],
  },
  {
    name: 'plan set',
    args: ['ID'],
    synopsis:
      '--label L --daily-limit N|none --per-request-usd X [--overage true|false] [--active true|false]',
    summary: 'assign or replace the plan (overage defaults to false, active to true)',
    options: {
      label: { type: 'string' },
      'daily-limit': { type: 'string' },
      'per-request-usd': { type: 'string' },
      overage: { type: 'string' },
      active: { type: 'string' },
    },
    request: async (p) => {
      const limit = required(p, 'daily-limit');
      if (limit !== 'none' && !/^\d+$/.test(limit))
        throw new UsageError('--daily-limit must be a whole number or none');
      return {
        method: 'PUT',
        path: `${customerPath(p)}/plan`,
        body: {
          label: required(p, 'label'),
          daily_limit: limit === 'none' ? null : Number(limit),
          // Sent as decimal text: the API reads it exactly, never through a float.
          per_request_usd: required(p, 'per-request-usd'),
          overage: bool(p, 'overage', false),
          active: bool(p, 'active', true),
        },
      };
    },
    print: (a, _p, sent) => [`plan of customer ${a.customer_id} set: ${describePlan(sent)}`],
  },
  {
    name: 'plan delete',
    args: ['ID'],
    synopsis: '',
    summary: 'remove the plan (the customer then has none)',
    options: {},
    request: async (p) => ({ method: 'DELETE', path: `${customerPath(p)}/plan` }),
    print: (a) => [`plan of customer ${a.customer_id} deleted; the customer has no plan`],
  },
  {
    name: 'subscription set',
    args: ['ID'],
    synopsis: '--required true|false [--expires-at ISO|none]',
    summary: 'set the bot subscription (expires-at defaults to none)',
    options: { required: { type: 'string' }, 'expires-at': { type: 'string' } },
    request: async (p) => ({
      method: 'PUT',
      path: `${customerPath(p)}/subscription`,
      body: {
        required: bool(p, 'required'),
        expires_at: timestampOrNull(str(p, 'expires-at') ?? 'none'),
      },
    }),
    print: (a, _p, sent) => [
      `subscription of customer ${a.customer_id} set: ${
        sent.required
          ? `required, ${sent.expires_at ? `expires ${sent.expires_at}` : 'no expiry'}`
          : 'not required'
      }`,
    ],
  },
  {
    name: 'keys create',
    args: ['ID'],
    synopsis: '--mode test|live [--scopes redeem,read] [--allowed-ips a,b] [--expires-at ISO] [--label L]',
    summary: 'issue an API key; the key is printed once and never again',
    options: {
      ...MODE,
      scopes: { type: 'string' },
      'allowed-ips': { type: 'string' },
      'expires-at': { type: 'string' },
      label: { type: 'string' },
    },
    request: async (p) => {
      const body: Json = { mode: required(p, 'mode') };
      // Omitted options are left to the API's defaults (both scopes, any address, no expiry).
      const scopes = str(p, 'scopes');
      if (scopes !== undefined) body.scopes = list(scopes);
      const ips = str(p, 'allowed-ips');
      if (ips !== undefined) body.allowed_ips = list(ips);
      const expires = str(p, 'expires-at');
      if (expires !== undefined) body.expires_at = timestampOrNull(expires);
      const label = str(p, 'label');
      if (label !== undefined) body.label = label;
      return { method: 'POST', path: `${customerPath(p)}/keys`, body };
    },
    print: (a) => [
      `key ${a.key_id} created (prefix ${a.key_prefix}); it is shown only this once:`,
      String(a.key),
    ],
  },
  {
    name: 'keys revoke',
    args: ['KEY_ID'],
    synopsis: '',
    summary: 'revoke an API key (answers 401 revoked from then on)',
    options: {},
    request: async (p) => ({ method: 'POST', path: `/admin/v1/keys/${id(p)}/revoke` }),
    print: (a) => [`key ${a.key_id} revoked`],
  },
  {
    name: 'wallet topup',
    args: ['ID'],
    synopsis: '--mode test|live --usd X [--note N] [--idempotency-key K]',
    summary: "add USD to the customer's wallet of one mode (a retry with the same key adds it once)",
    options: { ...MODE, usd: { type: 'string' }, note: { type: 'string' }, ...IDEMPOTENCY },
    request: async (p) => {
      const body: Json = { mode: required(p, 'mode'), usd: required(p, 'usd') };
      const note = str(p, 'note');
      if (note !== undefined) body.note = note;
      return { method: 'POST', path: `${customerPath(p)}/wallet/topup`, body, headers: idempotencyHeader(p) };
    },
    print: (a, p) => [
      a.replayed
        ? `(replayed) this key's top-up of ${str(p, 'usd')} USD (${a.mode}) for customer ${a.customer_id} was made before; nothing new written; balance ${a.balance_usd} USD`
        : `topped up ${str(p, 'usd')} USD (${a.mode}) for customer ${a.customer_id}; balance ${a.balance_usd} USD`,
    ],
  },
  {
    name: 'wallet ledger',
    args: ['ID'],
    synopsis: '--mode test|live [--limit N] [--cursor C]',
    summary: 'wallet ledger entries of one mode, newest first (500 at most, or --limit; --cursor pages on)',
    options: { ...MODE, limit: { type: 'string' }, cursor: { type: 'string' } },
    request: async (p) => {
      required(p, 'mode');
      return {
        method: 'GET',
        path: withQuery(`${customerPath(p)}/ledger`, p, { mode: 'mode', limit: 'limit', cursor: 'cursor' }),
      };
    },
    print: (a) => [...formatLedger(a), ...(a.next_cursor ? [`more: add --cursor ${a.next_cursor}`] : [])],
  },
  {
    name: 'customers list',
    args: [],
    synopsis: '[--search TEXT] [--limit N] [--cursor C]',
    summary: 'customers whose name contains TEXT (or whose id is TEXT), newest first',
    options: { search: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' } },
    request: async (p) => ({
      method: 'GET',
      path: withQuery('/admin/v1/customers', p, { search: 'q', limit: 'limit', cursor: 'cursor' }),
    }),
    print: formatCustomers,
  },
  {
    name: 'jobs list',
    args: [],
    synopsis:
      '[--customer ID] [--mode M] [--status S] [--player P] [--from ISO] [--to ISO] [--limit N] [--cursor C]',
    summary: 'jobs (sync and async), newest first, with their outcome counts and billing',
    options: {
      ...MODE,
      customer: { type: 'string' },
      player: { type: 'string' },
      status: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
    },
    request: async (p) => ({
      method: 'GET',
      path: withQuery('/admin/v1/jobs', p, {
        customer: 'customer_id',
        mode: 'mode',
        status: 'status',
        player: 'player_id',
        from: 'from',
        to: 'to',
        limit: 'limit',
        cursor: 'cursor',
      }),
    }),
    print: formatJobs,
  },
  {
    name: 'usage show',
    args: [],
    synopsis: '[--customer ID] [--mode M] [--granularity hour|day] [--from ISO] [--to ISO]',
    summary: 'code outcomes, billed and refunded per hour (last 24 h) or day (last 30 days)',
    options: {
      ...MODE,
      customer: { type: 'string' },
      granularity: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
    },
    request: async (p) => ({
      method: 'GET',
      path: withQuery('/admin/v1/usage', p, {
        customer: 'customer_id',
        mode: 'mode',
        granularity: 'granularity',
        from: 'from',
        to: 'to',
      }),
    }),
    print: (a) => {
      const buckets = (a.buckets ?? []) as Json[];
      const keys = [...CODE_STATUSES, 'billed', 'refunded'];
      return [
        `usage per ${a.granularity} from ${a.from} to ${a.to}${a.customer_id ? ` for customer ${a.customer_id}` : ''}:`,
        `  ${['start', ...keys].join('  ')}`,
        ...buckets.map((b) => `  ${[b.start, ...keys.map((k) => b[k])].join('  ')}`),
        `  total  ${keys.map((k) => `${k} ${(a.totals as Json)[k]}`).join('  ')}`,
      ];
    },
  },
];

// Stock, jobs and quarantine commands: admin-stock-commands.ts; the event log and statements
// (docs/reference/webhooks-and-events.md#the-event-log, docs/reference/statements.md#reconciliation): admin-reconcile-commands.ts; operators and audit: admin-operator-commands.ts.
