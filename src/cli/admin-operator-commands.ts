// The operator commands of docs/reference/operators-and-audit.md: operators (docs/reference/operators-and-audit.md#operators-and-roles), the audit log (docs/reference/operators-and-audit.md#audit-log), the wallet's
// correcting adjustment (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments) and key reroll (docs/reference/operators-and-audit.md#key-reroll). Same shape as admin-commands.ts.
import {
  type Command,
  customerPath,
  IDEMPOTENCY,
  id,
  idempotencyHeader,
  type Json,
  MODE,
  required,
  str,
  withQuery,
} from './admin-command.ts';
import { table } from './admin-format.ts';

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function formatAudit(a: Json): string[] {
  const events = Array.isArray(a.events) ? a.events.filter(isObject) : [];
  if (!events.length) return ['no audit events'];
  const rows = events.map((e) => [
    String(e.at),
    String(e.actor),
    String(e.action),
    e.customer_id === null ? '-' : String(e.customer_id),
    e.target === null ? '-' : String(e.target),
    String(e.request_id),
    JSON.stringify(e.details),
  ]);
  return [
    'audit events, newest first:',
    ...table(['at', 'actor', 'action', 'customer', 'target', 'request_id', 'details'], rows),
    ...(a.next_cursor ? [`more: add --cursor ${a.next_cursor}`] : []),
  ];
}

export const OPERATOR_COMMANDS: Command[] = [
  {
    name: 'operators add',
    args: [],
    synopsis: '--name NAME --role admin|viewer',
    summary: 'create an operator; prints its token, shown only this once',
    options: { name: { type: 'string' }, role: { type: 'string' } },
    request: async (p) => ({
      method: 'POST',
      path: '/admin/v1/operators',
      body: { name: required(p, 'name'), role: required(p, 'role') },
    }),
    print: (a) => [
      `operator ${a.name} (${a.role}) created as ${a.operator_id}; its token is shown only this once:`,
      String(a.token),
    ],
  },
  {
    name: 'operators list',
    args: [],
    synopsis: '',
    summary: 'every operator (root included), with role and revocation; no tokens',
    options: {},
    request: async () => ({ method: 'GET', path: '/admin/v1/operators' }),
    print: (a) => {
      const ops = Array.isArray(a.operators) ? a.operators.filter(isObject) : [];
      const rows = ops.map((o) => [
        String(o.operator_id),
        String(o.name),
        String(o.role),
        String(o.created_at),
        o.revoked_at ? String(o.revoked_at) : '-',
      ]);
      return ['operators:', ...table(['id', 'name', 'role', 'created_at', 'revoked_at'], rows)];
    },
  },
  {
    name: 'operators revoke',
    args: ['OPERATOR_ID'],
    synopsis: '',
    summary: 'revoke an operator: its token answers 401 from then on (root cannot be revoked)',
    options: {},
    request: async (p) => ({ method: 'POST', path: `/admin/v1/operators/${id(p)}/revoke` }),
    print: (a) => [`operator ${a.name} (${a.operator_id}) revoked`],
  },
  {
    name: 'audit list',
    args: [],
    synopsis: '[--customer ID] [--actor NAME] [--action A] [--limit N] [--cursor C]',
    summary: 'the audit log, newest first: who changed what, when, by which request',
    options: {
      customer: { type: 'string' },
      actor: { type: 'string' },
      action: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
    },
    request: async (p) => ({
      method: 'GET',
      path: withQuery('/admin/v1/audit', p, {
        customer: 'customer_id',
        actor: 'actor',
        action: 'action',
        limit: 'limit',
        cursor: 'cursor',
      }),
    }),
    print: formatAudit,
  },
  {
    name: 'wallet adjust',
    args: ['ID'],
    synopsis: '--mode test|live --usd X --reason R [--idempotency-key K]',
    summary: 'a correcting ledger entry, either sign (--usd -5); never below a zero balance',
    options: { ...MODE, usd: { type: 'string' }, reason: { type: 'string' }, ...IDEMPOTENCY },
    request: async (p) => ({
      method: 'POST',
      path: `${customerPath(p)}/wallet/adjust`,
      body: { mode: required(p, 'mode'), usd: required(p, 'usd'), reason: required(p, 'reason') },
      headers: idempotencyHeader(p),
    }),
    print: (a, p) => [
      a.replayed
        ? `(replayed) this key's adjustment by ${str(p, 'usd')} USD (${a.mode}) for customer ${a.customer_id} was made before (entry ${a.entry_id}); nothing new written; balance ${a.balance_usd} USD`
        : `adjusted by ${str(p, 'usd')} USD (${a.mode}) for customer ${a.customer_id}: entry ${a.entry_id}; balance ${a.balance_usd} USD`,
    ],
  },
  {
    name: 'keys reroll',
    args: ['KEY_ID'],
    synopsis: '[--grace-seconds N]',
    summary: 'a new key like the old one; the old one keeps working N seconds more [0]',
    options: { 'grace-seconds': { type: 'string' } },
    request: async (p) => {
      const raw = str(p, 'grace-seconds') ?? '0';
      // Sent as a number when it is one; anything else goes as text, for the API to refuse.
      const grace = /^\d{1,9}$/.test(raw) ? Number(raw) : raw;
      return { method: 'POST', path: `/admin/v1/keys/${id(p)}/reroll`, body: { grace_seconds: grace } };
    },
    print: (a) => [
      `key ${a.key_id} created (prefix ${a.key_prefix}); it is shown only this once:`,
      String(a.key),
      `the old key works until ${a.old_key_expires_at}`,
    ],
  },
];
