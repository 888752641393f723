// The demo of a new embedded database (npm start): a customer with a plan, a funded test wallet, a
// test key and test-mode stock, so the first curl line works.
import { anyCustomer, createCustomer, setPlan } from '../core/accounts/accounts.ts';
import { appendLedger } from '../core/billing/wallet.ts';
import type { Clock } from '../core/clock.ts';
import { randomBase62 } from '../core/ids.ts';
import { issueKey } from '../core/keys/keys.ts';
import { CATEGORIES } from '../core/stock/catalog.ts';
import { importStock } from '../core/stock/stock.ts';
import type { Database } from '../db/database.ts';

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
