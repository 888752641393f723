// The admin commands: each turns its arguments into admin API requests and its answer into text.
// The API does the validation; the CLI only checks what it must to build the JSON.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ParseArgsConfig } from 'node:util';
import { describePlan, formatCustomer, formatGeneric, formatLedger } from './admin-format.ts';
import { formatJobs } from './admin-format-reconcile.ts';
import { RECONCILE_COMMANDS } from './admin-reconcile-commands.ts';

export type Json = Record<string, unknown>;
type Options = NonNullable<ParseArgsConfig['options']>;
export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What the CLI talks to; the process by default, in-memory streams in tests. */
export interface AdminIo {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Read only by `stock import` without --file. */
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** A command line the CLI cannot turn into a request (exit code 2). */
export class UsageError extends Error {
  override name = 'UsageError';
}

export interface Parsed {
  args: string[];
  values: Record<string, string | boolean | undefined>;
}

export interface AdminRequest {
  method: Method;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Command {
  /** Two words: the thing and the verb (`customers create`). */
  name: string;
  /** Positional arguments after the name, all required. */
  args: string[];
  /** Options after the arguments, as shown in help. */
  synopsis: string;
  summary: string;
  options: Options;
  /** One request, or several sent in order (a large stock import goes in batches). */
  request(p: Parsed, io: AdminIo): Promise<AdminRequest | AdminRequest[]>;
  /** The one answer of several successful requests (by default the last one). */
  combine?(answers: Json[]): Json;
  /** Lines printed for a successful answer (without --json); `sent` is the (first) request body. */
  print(answer: Json, p: Parsed, sent: Json): string[];
}

export const str = (p: Parsed, name: string) => p.values[name] as string | undefined;
export const id = (p: Parsed, i = 0) => encodeURIComponent(p.args[i]!);
export const customerPath = (p: Parsed) => `/admin/v1/customers/${id(p)}`;

export function required(p: Parsed, name: string): string {
  const v = str(p, name);
  if (v === undefined) throw new UsageError(`--${name} is required`);
  return v;
}

function bool(p: Parsed, name: string, fallback?: boolean): boolean {
  const v = str(p, name);
  if (v === undefined && fallback !== undefined) return fallback;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new UsageError(`--${name} must be true or false`);
}

/** ISO timestamp or `none`; the text goes to the API as given, which validates it. */
function timestampOrNull(v: string): string | null {
  return v === 'none' ? null : v;
}

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export const MODE = { mode: { type: 'string' } } as const;
export const IDEMPOTENCY = { 'idempotency-key': { type: 'string' } } as const;

/** The wallet writes' Idempotency-Key (contract 13.3): --idempotency-key, else a new random one. */
export const idempotencyHeader = (p: Parsed) => ({
  'idempotency-key': str(p, 'idempotency-key') ?? `cli-${randomUUID()}`,
});

/** `path?name=value…` from the given options that were set (the API validates them). */
export function withQuery(path: string, p: Parsed, names: Record<string, string>): string {
  const query = new URLSearchParams();
  for (const [option, param] of Object.entries(names)) {
    const v = str(p, option);
    if (v !== undefined) query.set(param, v);
  }
  const q = query.toString();
  return q ? `${path}?${q}` : path;
}

/** The lines of a page of a list, and how to ask for the next one. */
export const printPage = (a: Json) => [
  ...formatGeneric(Object.fromEntries(Object.entries(a).filter(([k]) => k !== 'next_cursor'))),
  ...(a.next_cursor ? [`more: add --cursor ${a.next_cursor}`] : []),
];

/**
 * Codes per stock import request: the API takes at most 10,000 in one call, so a larger file goes
 * in several. Sending the same file again is safe: codes already in stock count as duplicates.
 */
export const IMPORT_BATCH = 10_000;

/** The file line numbers of the codes of the `stock import` being run (one command per process). */
let importLines: number[] = [];

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
      `topped up ${str(p, 'usd')} USD (${a.mode}) for customer ${a.customer_id}; balance ${a.balance_usd} USD`,
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
    print: printPage,
  },
  {
    name: 'jobs list',
    args: [],
    synopsis: '[--customer ID] [--mode M] [--status S] [--from ISO] [--to ISO] [--limit N] [--cursor C]',
    summary: 'jobs (sync and async), newest first, with their outcome counts and billing',
    options: {
      ...MODE,
      customer: { type: 'string' },
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
      const keys = ['activated', 'code_used', 'invalid_code', 'bad_player', 'failed', 'billed', 'refunded'];
      return [
        `usage per ${a.granularity} from ${a.from} to ${a.to}${a.customer_id ? ` for customer ${a.customer_id}` : ''}:`,
        `  ${['start', ...keys].join('  ')}`,
        ...buckets.map((b) => `  ${[b.start, ...keys.map((k) => b[k])].join('  ')}`),
        `  total  ${keys.map((k) => `${k} ${(a.totals as Json)[k]}`).join('  ')}`,
      ];
    },
  },
  {
    name: 'stock import',
    args: ['ID'],
    synopsis: '--mode test|live --category C [--file PATH]',
    summary: 'add codes to stock, one per line, from PATH or standard input (10,000 per request)',
    options: { ...MODE, category: { type: 'string' }, file: { type: 'string' } },
    request: async (p, io) => {
      const mode = required(p, 'mode');
      const category = required(p, 'category');
      const file = str(p, 'file');
      if (file === undefined && io.stdin.isTTY)
        throw new UsageError('give --file PATH, or pipe the codes into standard input');
      const text = file === undefined ? await readAll(io.stdin) : readCodeFile(file);
      // Blank lines are layout, not codes; everything else goes to the API, which trims, checks
      // the format and counts duplicates. Codes are never echoed: they are bearer value.
      const lines = text.split(/\r?\n/);
      const codes = lines.filter((line) => line.trim() !== '');
      // The file's line number of each code sent, to name the lines the API reports.
      importLines = lines.flatMap((line, i) => (line.trim() === '' ? [] : [i + 1]));
      const batches: AdminRequest[] = [];
      for (let i = 0; i === 0 || i < codes.length; i += IMPORT_BATCH) {
        const batch = codes.slice(i, i + IMPORT_BATCH);
        batches.push({
          method: 'POST',
          path: `${customerPath(p)}/stock`,
          body: { mode, category, codes: batch },
        });
      }
      return batches;
    },
    combine: (answers) => {
      // Each issue's position in its batch becomes the file line of that code.
      const issues = answers.flatMap((a, b) =>
        ((a.issues as Json[] | undefined) ?? []).map((x) => ({
          ...x,
          line: importLines[b * IMPORT_BATCH + Number(x.index)],
        })),
      );
      // An API without the issues list (an older server) gets none added.
      const withIssues = answers.some((a) => 'issues' in a) ? { issues } : {};
      if (answers.length === 1) return { ...answers[0]!, ...withIssues };
      const sum = (field: string) => answers.reduce((n, a) => n + Number(a[field] ?? 0), 0);
      return {
        ok: true,
        request_id: answers.at(-1)!.request_id,
        request_ids: answers.map((a) => a.request_id),
        added: sum('added'),
        duplicates: sum('duplicates'),
        rejected: sum('rejected'),
        ...withIssues,
      };
    },
    print: (a) => [
      `stock import: ${a.added} added, ${a.duplicates} duplicates, ${a.rejected} rejected`,
      ...((a.issues as Json[] | undefined) ?? []).map((x) => `  line ${x.line}: ${x.kind}, ${x.reason}`),
      ...formatGeneric(
        Object.fromEntries(
          Object.entries(a).filter(
            ([k]) =>
              !['ok', 'request_id', 'request_ids', 'added', 'duplicates', 'rejected', 'issues'].includes(k),
          ),
        ),
        '  ',
      ),
    ],
  },
  {
    name: 'jobs show',
    args: ['JOB_ID'],
    synopsis: '',
    summary: 'a job with its per-code attempts and webhook deliveries',
    options: {},
    request: async (p) => ({ method: 'GET', path: `/admin/v1/jobs/${id(p)}` }),
    print: (a) => formatGeneric(a),
  },
  {
    name: 'quarantine list',
    args: [],
    synopsis: '[--customer ID] [--mode test|live]',
    summary: 'codes held in quarantine (outcome unknown), oldest first, by their last 4 characters',
    options: { ...MODE, customer: { type: 'string' } },
    request: async (p) => {
      const query = new URLSearchParams();
      const customer = str(p, 'customer');
      const mode = str(p, 'mode');
      if (customer !== undefined) query.set('customer_id', customer);
      if (mode !== undefined) query.set('mode', mode);
      const q = query.toString();
      return { method: 'GET', path: `/admin/v1/quarantine${q ? `?${q}` : ''}` };
    },
    print: (a) => {
      const codes = (a.codes ?? []) as Json[];
      if (codes.length === 0) return ['no quarantined codes'];
      return codes.map(
        (c) =>
          `${c.job_id} #${c.position}  …${c.code_last4}  customer ${c.customer_id} ${c.mode} ${c.source}` +
          `  since ${c.quarantined_at}  checks ${c.check_attempts}`,
      );
    },
  },
  {
    name: 'quarantine check',
    args: [],
    synopsis: '',
    summary: 'ask the upstream now about every quarantined code and settle what it can tell',
    options: {},
    request: async () => ({ method: 'POST', path: '/admin/v1/quarantine/check' }),
    print: (a) => [`checked ${a.checked}: ${a.used} used, ${a.unused} unused, ${a.unknown} unknown`],
  },
  {
    name: 'quarantine settle',
    args: ['JOB_ID', 'POSITION'],
    synopsis: '--outcome used|unused',
    summary: 'settle one quarantined code by hand (used: deleted and billed as code_used)',
    options: { outcome: { type: 'string' } },
    request: async (p) => ({
      method: 'POST',
      path: `/admin/v1/jobs/${id(p)}/codes/${id(p, 1)}/settle`,
      body: { outcome: required(p, 'outcome') },
    }),
    print: (a) => [`${a.job_id} #${a.position} settled: ${a.settlement}`],
  },
];

function readCodeFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

// The event log and statements (contract 13.6, 13.7) live in their own file.
COMMANDS.push(...RECONCILE_COMMANDS);
