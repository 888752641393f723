// The billing hold (step 12 of docs/reference/redeem.md#validation-order) lives in SQL (billing_hold, src/db/functions/billing.sql): a
// property test against a model of docs/reference/billing-and-quota.md#billing-a-redeem, on the real database. Random accounts
// (plan or none, active or not, capped or not, overage or not, subscription, balance, holds,
// today's usage) and request counts; each case runs in a transaction that is rolled back.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCustomer, setPlan, setSubscription } from '../../src/core/accounts/accounts.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
});
afterAll(() => t.close());

const NOW = new Date('2026-11-22T15:00:00Z');
const DAY = '2026-11-22';

interface Account {
  plan: { dailyLimit: number | null; rate: number; overage: boolean; active: boolean } | null;
  subscription: { required: boolean; expiresInS: number | null };
  balance: number;
  held: number;
  used: number;
  overage: number;
}

type Verdict =
  | { refusal: string }
  | { included: number; wallet: number; after: { used: number; overage: number; held: number } };

/** docs/reference/billing-and-quota.md#billing-a-redeem, as prose turned into code: the model the SQL is checked against. */
function model(a: Account, requests: number): Verdict {
  if (!a.plan?.active) return { refusal: 'no_plan' };
  const exp = a.subscription.expiresInS;
  if (a.subscription.required && exp !== null && exp <= 0) return { refusal: 'subscription_expired' };
  const remaining = a.plan.dailyLimit === null ? 0 : Math.max(0, a.plan.dailyLimit - (a.used - a.overage));
  const included = Math.min(requests, remaining);
  const wallet = requests - included;
  if (wallet > 0 && a.plan.dailyLimit !== null && !a.plan.overage) return { refusal: 'quota_exceeded' };
  if (wallet > 0 && a.balance - a.held < wallet * a.plan.rate) return { refusal: 'insufficient_funds' };
  return {
    included,
    wallet,
    after: { used: a.used + requests, overage: a.overage + wallet, held: a.held + wallet * a.plan.rate },
  };
}

const account: fc.Arbitrary<Account> = fc
  .record({
    plan: fc.option(
      fc.record({
        dailyLimit: fc.option(fc.nat(20), { nil: null }),
        rate: fc.constantFrom(0, 10_000, 500_000, 1_000_000),
        overage: fc.boolean(),
        active: fc.boolean(),
      }),
      { nil: null },
    ),
    subscription: fc.record({
      required: fc.boolean(),
      expiresInS: fc.option(fc.integer({ min: -86_400, max: 86_400 }), { nil: null }),
    }),
    balance: fc.nat(10_000_000),
    heldShare: fc.double({ min: 0, max: 1, noNaN: true }),
    used: fc.nat(25),
    overageShare: fc.double({ min: 0, max: 1, noNaN: true }),
  })
  .map(({ heldShare, overageShare, ...a }) => ({
    ...a,
    held: Math.floor(a.balance * heldShare),
    overage: Math.floor(a.used * overageShare),
  }));

class Rollback extends Error {}

test('billing_hold decides and records as the model says, and a refusal writes nothing', async () => {
  await fc.assert(
    fc.asyncProperty(account, fc.integer({ min: 1, max: 50 }), async (a, requests) => {
      let seen: { verdict: Verdict; rows: { used: number; overage: number; held: number } } | undefined;
      await t.ctx.db
        .transaction(async (tx) => {
          const id = await createCustomer(tx, 'property', t.clock);
          if (a.plan)
            await setPlan(
              tx,
              id,
              {
                label: 'p',
                dailyLimit: a.plan.dailyLimit,
                perRequestMicros: a.plan.rate,
                overage: a.plan.overage,
                active: a.plan.active,
              },
              t.clock,
            );
          const exp = a.subscription.expiresInS;
          await setSubscription(tx, id, {
            required: a.subscription.required,
            expiresAt: exp === null ? null : new Date(NOW.getTime() + exp * 1000),
          });
          await tx.query(
            `insert into accounts (customer_id, mode, balance_micros, held_micros) values ($1, 'test', $2, $3)`,
            [id, a.balance, a.held],
          );
          await tx.query(
            `insert into daily_usage (customer_id, mode, day, used, overage) values ($1, 'test', $2, $3, $4)`,
            [id, DAY, a.used, a.overage],
          );
          const h = await tx.query<{ h: Record<string, unknown> }>(
            `select billing_hold($1, 'test', $2, $3, $4) as h`,
            [id, NOW, DAY, requests],
          );
          const r = h.rows[0]!.h;
          const rows = await tx.query<{ used: number; overage: number; held: number }>(
            `select u.used, u.overage, a.held_micros as held
               from daily_usage u join accounts a on a.customer_id = u.customer_id and a.mode = u.mode
              where u.customer_id = $1 and u.mode = 'test' and u.day = $2`,
            [id, DAY],
          );
          seen = {
            verdict:
              'refusal' in r
                ? { refusal: r.refusal as string }
                : {
                    included: r.included as number,
                    wallet: r.wallet as number,
                    after: {
                      used: (r.account as { usedToday: number }).usedToday,
                      overage: (r.account as { overageToday: number }).overageToday,
                      held: (r.account as { heldMicros: number }).heldMicros,
                    },
                  },
            rows: rows.rows[0]!,
          };
          throw new Rollback();
        })
        .catch((err: unknown) => {
          if (!(err instanceof Rollback)) throw err;
        });
      const expected = model(a, requests);
      expect(seen!.verdict).toEqual(expected);
      // What was recorded: the hold on success (the account it returns is the one stored), nothing
      // on a refusal.
      expect(seen!.rows).toEqual(
        'refusal' in expected ? { used: a.used, overage: a.overage, held: a.held } : expected.after,
      );
    }),
    { numRuns: 150 },
  );
}, 120_000);
