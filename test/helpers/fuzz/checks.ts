// The fuzzer's per-answer checks: no 5xx, an X-Request-Id, the error body (with the same
// id) on every error, Retry-After and the same retry_after_sec on every 429, on the public API the OpenAPI document (documented status, headers, body
// schema), and on the admin API a 2xx JSON body that parses.
//
// One 5xx is an answer, not a finding: `503 unavailable` where the public document lists 503 for
// the operation (docs/reference/running.md#health and #database-loss: `GET /v1/health` answers it when the database does not
// answer within its 2-second check, every request that needs the database when it does not answer
// within DATABASE_TIMEOUT_MS), with the error body, the same request id, Retry-After and every
// header the document requires. The runner counts these apart (`documented503`) so that a run
// shows how often the database was too slow. Not on the admin API (no document lists its 503s),
// not `job_interrupted` (no process restarts during a run), never a 500.
import { checkResponse, documentsStatus } from '../openapi-match.ts';
import type { FuzzCase } from './types.ts';

type Headers = Record<string, string | string[] | undefined>;

/** A `503 unavailable` the public document lists for this operation, answered as documented. */
export function isDocumented503(c: FuzzCase, status: number, headers: Headers, body: string): boolean {
  if (status !== 503 || c.listener !== 'public' || c.method === 'HEAD') return false;
  if (!documentsStatus(c.method, c.url, 503)) return false;
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    if (parsed.error_code !== 'unavailable' || parsed.request_id !== headers['x-request-id']) return false;
  } catch {
    return false;
  }
  return checkResponse({ method: c.method, url: c.url, status, headers, body }).length === 0;
}

const ERROR_KEYS = ['error_code', 'message', 'ok', 'request_id'];

/** What is wrong with an answer; empty when nothing is. */
export function checkAnswer(c: FuzzCase, status: number, headers: Headers, body: string): string[] {
  const problems: string[] = [];
  if (status >= 500 && !isDocumented503(c, status, headers, body)) problems.push(`5xx: ${status}`);
  const id = headers['x-request-id'];
  if (typeof id !== 'string' || !/^req_[A-Za-z0-9]+$/.test(id)) problems.push('no request id');
  if (status >= 400 && c.method !== 'HEAD') {
    try {
      const parsed = JSON.parse(body) as Record<string, unknown>;
      const keys = Object.keys(parsed)
        .filter((k) => k !== 'retry_after_sec' && k !== 'details')
        .sort();
      if (
        parsed.ok !== false ||
        typeof parsed.error_code !== 'string' ||
        typeof parsed.message !== 'string' ||
        parsed.request_id !== id ||
        !ERROR_KEYS.every((k) => keys.includes(k))
      )
        problems.push('not the error body');
      // A 429 says when to come back, in the header and in the body alike.
      if (status === 429) {
        const after = headers['retry-after'];
        if (typeof after !== 'string' || !/^[1-9]\d*$/.test(after)) problems.push('429 without Retry-After');
        else if (parsed.retry_after_sec !== Number(after))
          problems.push('429 whose retry_after_sec is not its Retry-After');
      }
    } catch {
      problems.push('error body is not JSON');
    }
  }
  if (
    c.listener === 'public' &&
    c.method !== 'HEAD' &&
    (c.url.startsWith('/v1/') || c.url.startsWith('/bot/'))
  ) {
    const found = checkResponse({ method: c.method, url: c.url, status, headers, body });
    for (const p of found) problems.push(`document: ${p}`);
  }
  if (c.listener === 'admin' && status >= 200 && status < 300 && c.method !== 'HEAD') {
    const type = String(headers['content-type'] ?? '');
    if (type.startsWith('application/json')) {
      try {
        JSON.parse(body);
      } catch {
        problems.push('a 2xx JSON body that is not JSON');
      }
    }
  }
  return problems;
}
