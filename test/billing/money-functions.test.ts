// ledger_append and usage_record (src/db/functions/billing.sql), each against its own model on the
// real database: random sequences of entries and of daily usage changes (test/billing/money-model.test.ts
// runs them inside whole billing sequences).
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCustomer } from '../../src/core/accounts/accounts.ts';
import { appendLedger } from '../../src/core/billing/wallet.ts';
import { ManualClock } from '../../src/core/clock.ts';
import type { Mode } from '../../src/core/vocabulary.ts';
import { openTestDatabase, type TestDatabase } from '../helpers/db.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(() => t.close());

const START = '2031-03-01T10:00:00Z';

test('ledger_append: the balance is the ledger sum, each entry records it, its actor and request', async () => {
  const entry = fc.record({
    mode: fc.constantFrom<Mode>('live', 'test'),
    amount: fc.integer({ min: -50_000, max: 100_000 }),
    actor: fc.option(fc.constantFrom('ops-ana', 'ops-bo'), { nil: undefined }),
    requestId: fc.option(fc.stringMatching(/^req_[a-z0-9]{4}$/), { nil: null }),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 15 }), async (entries) => {
      const clock = new ManualClock(START);
      const customerId = await createCustomer(t.db, 'ledger model', clock);
      const sums: Record<Mode, number> = { live: 0, test: 0 };
      for (const e of entries) {
        sums[e.mode] += e.amount;
        const { entryId } = await appendLedger(
          t.db,
          {
            customerId,
            mode: e.mode,
            amountMicros: e.amount,
            kind: e.amount >= 0 ? 'topup' : 'charge',
            ...(e.actor ? { actor: e.actor } : {}),
            requestId: e.requestId,
          },
          clock,
        );
        // The new entry's id comes back; the entry records the balance after it.
        const entry = await t.db.query<{ balance: number }>(
          'select balance_after_micros as balance from wallet_ledger where id = $1',
          [entryId],
        );
        expect(entry.rows[0]!.balance).toBe(sums[e.mode]);
      }
      const rows = await t.db.query<{ mode: Mode; amount: number; actor: string; requestId: string | null }>(
        `select mode, amount_micros as amount, actor, request_id as "requestId" from wallet_ledger
          where customer_id = $1 order by id`,
        [customerId],
      );
      expect(rows.rows).toEqual(
        entries.map((e) => ({
          mode: e.mode,
          amount: e.amount,
          actor: e.actor ?? 'system',
          requestId: e.requestId,
        })),
      );
      const accounts = await t.db.query<{ mode: Mode; balance: number; held: number }>(
        'select mode, balance_micros as balance, held_micros as held from accounts where customer_id = $1 order by mode',
        [customerId],
      );
      const modes = (['live', 'test'] as const).filter((mode) => entries.some((e) => e.mode === mode));
      expect(accounts.rows).toEqual(modes.map((mode) => ({ mode, balance: sums[mode], held: 0 })));
    }),
    { numRuns: 40 },
  );
});

test('usage_record: adds and takes back used and overage per day', async () => {
  const change = fc.record({ day: fc.nat(2), used: fc.integer({ min: -3, max: 4 }), share: fc.nat(4) });
  await fc.assert(
    fc.asyncProperty(fc.array(change, { minLength: 1, maxLength: 15 }), async (changes) => {
      const customerId = await createCustomer(t.db, 'usage model', new ManualClock(START));
      const model = new Map<string, { used: number; overage: number }>();
      for (const c of changes) {
        const day = `2031-03-0${c.day + 1}`;
        const u = model.get(day) ?? { used: 0, overage: 0 };
        let used: number;
        let overage: number;
        if (c.used >= 0) {
          used = c.used;
          overage = Math.min(used, c.share);
        } else {
          // A take-back only returns what was added (a release follows its hold), and leaves
          // the overage within the used.
          const back = Math.min(-c.used, u.used);
          if (back === 0) continue;
          const overageBack = Math.max(Math.min(back, u.overage, c.share), u.overage - (u.used - back));
          used = -back;
          overage = -overageBack;
        }
        await t.db.query("select usage_record($1, 'test', $2, $3, $4)", [customerId, day, used, overage]);
        model.set(day, { used: u.used + used, overage: u.overage + overage });
      }
      const rows = await t.db.query<{ day: string; used: number; overage: number }>(
        `select to_char(day, 'YYYY-MM-DD') as day, used, overage from daily_usage where customer_id = $1 order by day`,
        [customerId],
      );
      expect(rows.rows).toEqual(
        [...model].sort(([a], [b]) => a.localeCompare(b)).map(([day, u]) => ({ day, ...u })),
      );
    }),
    { numRuns: 40 },
  );
});
