// GET /admin/v1/customers/{id} (docs/reference/operators-and-audit.md#the-admin-api): the customer, plan, subscription, keys (no
// secrets), wallets, today's usage and stock counts per mode, in one answer.
import type { Queryable } from '../../db/database.ts';
import { loadAccountState, subscriptionView, today } from '../accounts/accounts.ts';
import { planView } from '../accounts/customer-changes.ts';
import { walletSummary } from '../billing/wallet.ts';
import { type Clock, isoUtc } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { listKeys } from '../keys/keys.ts';
import { stockSummary } from '../stock/stock.ts';
import { MODES } from '../vocabulary.ts';

const iso = (d: Date | null) => (d ? isoUtc(d) : null);

export async function customerDetail(q: Queryable, id: number, clock: Clock) {
  const day = today(clock);
  const [live, test] = await Promise.all(MODES.map((m) => loadAccountState(q, id, m, day)));
  if (!live || !test) throw new ApiError('not_found', 'unknown customer');
  const info = await q.query<{ name: string; createdAt: Date; disabledAt: Date | null }>(
    'select name, created_at as "createdAt", disabled_at as "disabledAt" from customers where id = $1',
    [id],
  );
  const c = info.rows[0]!;
  const keys = await listKeys(q, id);
  return {
    customer: {
      customer_id: id,
      name: c.name,
      created_at: isoUtc(c.createdAt),
      disabled: c.disabledAt !== null,
      disabled_at: iso(c.disabledAt),
    },
    plan: planView(live.plan),
    subscription: subscriptionView(live.subscription, clock.now()),
    keys: keys.map((k) => ({
      key_id: k.id,
      key_prefix: k.keyPrefix,
      mode: k.mode,
      scopes: k.scopes,
      allowed_ips: k.allowedIps,
      label: k.label,
      created_at: isoUtc(k.createdAt),
      expires_at: iso(k.expiresAt),
      revoked_at: iso(k.revokedAt),
    })),
    wallets: await walletSummary(q, id),
    usage_today: Object.fromEntries(
      [live, test].map((s, i) => [MODES[i], { used: s.usedToday, overage: s.overageToday }]),
    ),
    stock: Object.fromEntries(
      await Promise.all(MODES.map(async (m) => [m, await stockSummary(q, id, m)] as const)),
    ),
  };
}
