// The demo of a new embedded database (npm start): a customer with a plan, a funded test wallet, a
// test key and test-mode stock, so the first curl line works. A wing of its own, above the four it
// seeds (accounts, billing, keys, stock), in one transaction it opens itself: the process
// (server.ts) only calls it.

import type { Database } from '../../db/database.ts';
import { anyCustomer, createCustomer, setPlan } from '../accounts/accounts.ts';
import { appendLedger } from '../billing/wallet.ts';
import type { Clock } from '../clock.ts';
import { randomBase62 } from '../ids.ts';
import { issueKey } from '../keys/keys.ts';
import { CATEGORIES } from '../stock/catalog.ts';
import { importStock } from '../stock/stock.ts';

/** Test-mode stock codes the demo customer gets in each catalog category (packs and uc work at once). */
export const DEMO_STOCK_PER_CATEGORY = 5;

/** A random code part without a sandbox marker (USED, FAIL, …), so every demo code activates. */
function demoSuffix(): string {
  for (;;) {
    const suffix = randomBase62(12);
    if (!/USED|INVALID|FAIL|TIMEOUT|SLOW/i.test(suffix)) return suffix;
  }
}

/**
 * On a new embedded database: a demo customer with a plan, a funded test wallet, a test key and a
 * few test-mode stock codes in each category (random, so the sandbox has never seen them).
 */
export async function seedDemo(
  db: Database,
  clock: Clock,
  codeKey: Buffer,
): Promise<{ customerId: number; key: string } | null> {
  return db.transaction(async (tx) => {
    if (await anyCustomer(tx)) return null;
    const customerId = await createCustomer(tx, 'Demo merchant', clock);
    await setPlan(
      tx,
      customerId,
      { label: 'demo', dailyLimit: 100, perRequestMicros: 10_000, overage: true, active: true },
      clock,
    );
    await appendLedger(
      tx,
      { customerId, mode: 'test', amountMicros: 10_000_000, kind: 'topup', note: 'demo credit' },
      clock,
    );
    for (const category of CATEGORIES) {
      const codes = Array.from({ length: DEMO_STOCK_PER_CATEGORY }, () => `DEMO-${category}-${demoSuffix()}`);
      await importStock(tx, codeKey, { customerId, mode: 'test', category, codes }, clock);
    }
    const { key } = await issueKey(
      tx,
      customerId,
      { mode: 'test', scopes: ['redeem', 'read'], allowedIps: [], expiresAt: null, label: 'demo' },
      clock,
    );
    return { customerId, key };
  });
}
