// What an admin command is (its arguments, the requests it sends, how it prints the answer) and
// the small helpers the command lists share (admin-commands.ts, admin-reconcile-commands.ts,
// admin-operator-commands.ts).
import { randomUUID } from 'node:crypto';
import type { ParseArgsConfig } from 'node:util';

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
  /**
   * A document printed as it is instead of `print`'s lines (the statement's CSV with its CRLF
   * record ends), when the command line asks for one. Only for text that holds no stored text a
   * merchant or operator wrote: it is not made printable.
   */
  document?(answer: Json, p: Parsed): string | undefined;
}

export const str = (p: Parsed, name: string) => p.values[name] as string | undefined;
export const id = (p: Parsed, i = 0) => encodeURIComponent(p.args[i]!);
export const customerPath = (p: Parsed) => `/admin/v1/customers/${id(p)}`;

export function required(p: Parsed, name: string): string {
  const v = str(p, name);
  if (v === undefined) throw new UsageError(`--${name} is required`);
  return v;
}

export function bool(p: Parsed, name: string, fallback?: boolean): boolean {
  const v = str(p, name);
  if (v === undefined && fallback !== undefined) return fallback;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new UsageError(`--${name} must be true or false`);
}

/** ISO timestamp or `none`; the text goes to the API as given, which validates it. */
export function timestampOrNull(v: string): string | null {
  return v === 'none' ? null : v;
}

export const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export const MODE = { mode: { type: 'string' } } as const;
export const IDEMPOTENCY = { 'idempotency-key': { type: 'string' } } as const;

/** The wallet writes' Idempotency-Key (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments): --idempotency-key, else a new random one. */
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
