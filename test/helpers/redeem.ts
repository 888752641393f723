// Small helpers for redeem tests: sending a redeem, reading the account, adding stock.
import type { LightMyRequestResponse } from 'fastify';
import { adminCall, bearer, type TestApp } from './app.ts';

let seq = 0;

/** A code unique to this run, with the given sandbox marker (USED, FAIL, SLOW, …) inside. */
export const uniqueCode = (marker = 'OK', suffix = '') =>
  `${marker}-${process.pid.toString(36)}${Date.now().toString(36)}${(seq++).toString(36)}${suffix}`.toUpperCase();

export function redeem(
  t: TestApp,
  key: string,
  body: unknown,
  idempotencyKey: string = `idem-${seq++}-${Math.random().toString(36).slice(2)}`,
): Promise<LightMyRequestResponse> {
  return t.api.inject({
    method: 'POST',
    url: '/v1/redeem',
    headers: { ...bearer(key), 'idempotency-key': idempotencyKey, 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export interface MeBody {
  request_id?: string | null;
  quota: { daily_limit: number | null; used_today: number; remaining_today: number; overage_today: number };
  balance_usd: number;
}

export async function me(t: TestApp, key: string): Promise<MeBody> {
  const res = await t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });
  if (res.statusCode !== 200) throw new Error(`GET /v1/me answered ${res.statusCode}: ${res.body}`);
  return res.json() as MeBody;
}

export async function addStock(
  t: TestApp,
  customerId: number,
  mode: 'live' | 'test',
  category: string,
  codes: string[],
) {
  return adminCall<{ added: number; duplicates: number; rejected: number }>(
    t,
    'POST',
    `/admin/v1/customers/${customerId}/stock`,
    { mode, category, codes },
    200,
  );
}

/** The wallet's invariants: the cached balance is the ledger's sum, and no hold is left open. */
export async function walletInvariants(t: TestApp, customerId: number, mode: 'live' | 'test') {
  const r = await t.ctx.db.query<{ balance: number; held: number; ledger: number; open: number }>(
    `select a.balance_micros as balance, a.held_micros as held,
            (select coalesce(sum(amount_micros), 0)::int8 from wallet_ledger l where l.customer_id = a.customer_id and l.mode = a.mode) as ledger,
            (select count(*) from jobs j where j.customer_id = a.customer_id and j.mode = a.mode
               and j.captured_included + j.released_included + j.captured_wallet + j.released_wallet
                   <> j.hold_included + j.hold_wallet) as open
       from accounts a where a.customer_id = $1 and a.mode = $2`,
    [customerId, mode],
  );
  return r.rows[0] ?? { balance: 0, held: 0, ledger: 0, open: 0 };
}
