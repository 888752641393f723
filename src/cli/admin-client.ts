// The admin CLI's connection to the admin API: where it is, the operator token, one request.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { request } from 'undici';

/** Where the admin API is and how to authenticate; `token` is never printed. */
export interface AdminTarget {
  baseUrl: string;
  token: string;
}

/** A failure before or around the API call (no token, unreachable, not our API): exit code 1. */
export class AdminClientError extends Error {
  override name = 'AdminClientError';
}

/** An error answer of the admin API: its status and the error body. */
export interface AdminAnswer {
  status: number;
  body: Record<string, unknown>;
  /** The API answered a replay of an earlier request with the same Idempotency-Key (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments). */
  replayed: boolean;
}

// Stock imports can carry many codes; anything else answers in milliseconds.
const TIMEOUT_MS = 120_000;

/**
 * ADMIN_URL, or http://ADMIN_HOST:ADMIN_PORT as the server itself would listen
 * (defaults 127.0.0.1 and 8081). A wildcard listen address is reached over loopback.
 */
export function adminBaseUrl(env: NodeJS.ProcessEnv): string {
  const explicit = env.ADMIN_URL?.trim();
  const raw = explicit || defaultUrl(env);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AdminClientError(
      `${explicit ? 'ADMIN_URL' : 'ADMIN_HOST/ADMIN_PORT'} is not a valid URL: ${raw}`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new AdminClientError('ADMIN_URL must be an http:// or https:// URL');
  // A path prefix (a reverse proxy in front) is kept; the API paths are appended to it.
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function defaultUrl(env: NodeJS.ProcessEnv): string {
  let host = env.ADMIN_HOST?.trim() || '127.0.0.1';
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::') host = '::1';
  if (host.includes(':')) host = `[${host}]`;
  return `http://${host}:${env.ADMIN_PORT?.trim() || '8081'}`;
}

/** ADMIN_TOKEN, else the token file the server writes into DATA_DIR (default ./data). */
export function adminToken(env: NodeJS.ProcessEnv): string {
  const fromEnv = env.ADMIN_TOKEN?.trim();
  if (fromEnv) return fromEnv;
  const file = join(resolve(env.DATA_DIR?.trim() || './data'), 'admin-token');
  if (!existsSync(file)) {
    throw new AdminClientError(
      `no admin token: set ADMIN_TOKEN, or DATA_DIR to the server's data directory (${file} does not exist)`,
    );
  }
  const token = readFileSync(file, 'utf8').trim();
  if (!token) throw new AdminClientError(`no admin token: ${file} is empty`);
  return token;
}

export function resolveTarget(env: NodeJS.ProcessEnv): AdminTarget {
  return { baseUrl: adminBaseUrl(env), token: adminToken(env) };
}

/**
 * Sends one request and returns the status and JSON body, whatever the status. Throws
 * AdminClientError when the API cannot be reached or does not answer with a JSON object.
 */
export async function callAdmin(
  target: AdminTarget,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  body?: unknown,
  /** Extra request headers (the wallet writes' Idempotency-Key). */
  extraHeaders: Record<string, string> = {},
): Promise<AdminAnswer> {
  const url = `${target.baseUrl}${path}`;
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(url, {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json; charset=utf-8' }),
        ...extraHeaders,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
  } catch (err) {
    // The token is only in the request headers; undici's messages name the address at most.
    const e = err as NodeJS.ErrnoException;
    throw new AdminClientError(`cannot reach the admin API at ${target.baseUrl}: ${e.code ?? e.message}`, {
      cause: err,
    });
  }
  const text = await res.body.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new AdminClientError(
      `${method} ${url} answered ${res.statusCode} without a JSON object: is ADMIN_URL the admin API?`,
    );
  }
  return {
    status: res.statusCode,
    body: parsed as Record<string, unknown>,
    replayed: res.headers['svc-idempotent-replay'] === 'true',
  };
}
