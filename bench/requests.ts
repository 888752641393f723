// The requests the load benches send (autocannon), shared by bench/run.ts and bench/citus.ts, one
// request of the public API as a bench's own client sends it (api), and the gateway's own count of
// its database statements (its admin /metrics).
import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';

/** GET /v1/me, each request with the next key. */
export function meRequests(nextKey: () => string): autocannon.Request[] {
  return [
    {
      method: 'GET',
      path: '/v1/me',
      setupRequest: (req) => ({ ...req, headers: { authorization: `Bearer ${nextKey()}` } }),
    },
  ];
}

/**
 * A sync one-code POST /v1/redeem, each request with the next key, its own Idempotency-Key and
 * its own code. Unique per run and per request: the sandbox answers code_used for a code
 * activated before, and an Idempotency-Key seen before would replay. Digits only after "BENCH",
 * so no code can spell one of the sandbox's trigger words (USED, INVALID, FAIL, TIMEOUT, SLOW),
 * unless `used`: then each code ends in USED, which the sandbox answers code_used without its
 * memory of activated codes (a 422; on Citus the outcome then commits on the customer's worker
 * alone, as every outcome of the http activator does: docs/running/citus.md#distributed-functions).
 */
export function redeemRequests(nextKey: () => string, opts: { used?: boolean } = {}): autocannon.Request[] {
  const suffix = opts.used ? 'USED' : '';
  const runTag = `${Date.now()}${randomBytes(2).readUInt16BE()}`;
  let sequence = 0;
  return [
    {
      method: 'POST',
      path: '/v1/redeem',
      setupRequest: (req) => {
        const n = sequence++;
        return {
          ...req,
          headers: {
            authorization: `Bearer ${nextKey()}`,
            'idempotency-key': `bench-${runTag}-${n}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ player_id: '5123456789', codes: [`BENCH${runTag}${n}${suffix}`] }),
        };
      },
    },
  ];
}

/** The gateway's database seam counts, from its admin /metrics. */
export async function seamCounts(admin: { url: string; token: string }) {
  const text = await (
    await fetch(`${admin.url}/metrics`, { headers: { authorization: `Bearer ${admin.token}` } })
  ).text();
  const read = (name: string) =>
    Number(new RegExp(`^redeem_gateway_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { statements: read('db_statements_total'), roundTrips: read('db_round_trips_total') };
}

/** Why an answer was not 2xx: "status error_code", or each code's status for a 422 redeem result. */
export function notOkReason(status: number, body: string): string {
  let why = '';
  try {
    const parsed = JSON.parse(body) as {
      error_code?: string;
      codes?: { error_code?: string; status?: string }[];
    };
    why = parsed.error_code ?? parsed.codes?.map((c) => `${c.status}/${c.error_code}`).join(',') ?? '';
  } catch {
    why = 'unparsed body';
  }
  return `${status} ${why}`;
}

/** One request of the public API with a key: its status, its body as JSON (or its first 200 characters) and headers. */
export async function api(
  url: string,
  key: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { unparsed: text.slice(0, 200) };
  }
  return { status: res.status, body: parsed, headers: res.headers };
}
