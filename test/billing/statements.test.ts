// Statements (docs/reference/statements.md#the-answer) on a real database with an injected clock: one worked example with
// its whole body, the CSV attachment read back by an independent parser (papaparse), the
// range rules, the operator's endpoint, and a property: for random sequences of top-ups,
// adjustments, redeems with every outcome (quarantined included) and day boundaries, every day
// reconciles to the micro-dollar, days chain, the last closing is the ledger balance, and the
// counts add up to the outcomes billed and refunded.
import fc from 'fast-check';
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock, utcDay } from '../../src/core/clock.ts';
import {
  ADMIN_TOKEN,
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  type Merchant,
  type TestApp,
} from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
const clock = new ManualClock('2026-11-22T09:00:00Z');
beforeAll(async () => {
  t = await createTestApp({ clock, jobWorker: false });
});
afterAll(() => t?.close());

const PLAYER = '5123456789';
const micros = (usd: number) => Math.round(usd * 1_000_000);
const statement = (key: string, query = '', accept?: string) =>
  t.api.inject({
    method: 'GET',
    url: `/v1/statements${query}`,
    headers: { ...bearer(key), ...(accept ? { accept } : {}) },
  });

interface Day {
  date: string;
  requests_included: number;
  requests_overage: number;
  requests_refunded: number;
  codes: Record<string, number>;
  charged_usd: number;
  topups_usd: number;
  adjustments_usd: number;
  opening_balance_usd: number;
  closing_balance_usd: number;
}

const zeroDay = (date: string, balance = 0): Day => ({
  date,
  requests_included: 0,
  requests_overage: 0,
  requests_refunded: 0,
  codes: { activated: 0, code_used: 0, invalid_code: 0, bad_player: 0, failed: 0 },
  charged_usd: 0,
  topups_usd: 0,
  adjustments_usd: 0,
  opening_balance_usd: balance,
  closing_balance_usd: balance,
});

/**
 * An adjustment as the admin endpoint writes it (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments) (kind `adjustment`, the balance
 * moved in the same transaction); that endpoint is another change's, so the test writes the row.
 */
async function adjust(m: Merchant, amountMicros: number) {
  await t.ctx.db.transaction(async (tx) => {
    await tx.query(`insert into accounts (customer_id, mode) values ($1, 'test') on conflict do nothing`, [
      m.customerId,
    ]);
    const b = await tx.query<{ balance: number }>(
      `update accounts set balance_micros = balance_micros + $2 where customer_id = $1 and mode = 'test'
       returning balance_micros as balance`,
      [m.customerId, amountMicros],
    );
    await tx.query(
      `insert into wallet_ledger (customer_id, mode, amount_micros, balance_after_micros, kind, note, created_at)
       values ($1, 'test', $2, $3, 'adjustment', 'test correction', $4)`,
      [m.customerId, amountMicros, b.rows[0]!.balance, clock.now()],
    );
  });
}

async function balanceMicros(customerId: number) {
  const r = await t.ctx.db.query<{ balance: number; ledger: number }>(
    `select a.balance_micros as balance,
            (select coalesce(sum(amount_micros), 0)::int8 from wallet_ledger l
              where l.customer_id = a.customer_id and l.mode = a.mode) as ledger
       from accounts a where customer_id = $1 and mode = 'test'`,
    [customerId],
  );
  const row = r.rows[0] ?? { balance: 0, ledger: 0 };
  expect(Number(row.balance)).toBe(Number(row.ledger));
  return Number(row.balance);
}

/** The CSV read by an independent parser, as the JSON's numbers. */
function csvDays(text: string): Day[] {
  const parsed = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true });
  expect(parsed.errors).toEqual([]);
  return parsed.data.map((r) => ({
    date: r.date!,
    requests_included: Number(r.requests_included),
    requests_overage: Number(r.requests_overage),
    requests_refunded: Number(r.requests_refunded),
    codes: {
      activated: Number(r.codes_activated),
      code_used: Number(r.codes_code_used),
      invalid_code: Number(r.codes_invalid_code),
      bad_player: Number(r.codes_bad_player),
      failed: Number(r.codes_failed),
    },
    charged_usd: Number(r.charged_usd),
    topups_usd: Number(r.topups_usd),
    adjustments_usd: Number(r.adjustments_usd),
    opening_balance_usd: Number(r.opening_balance_usd),
    closing_balance_usd: Number(r.closing_balance_usd),
  }));
}

describe('a worked example', () => {
  test('whole body: include first, then the wallet; refunds; a top-up and an adjustment', async () => {
    clock.set('2026-11-22T09:00:00Z');
    const m = await createMerchant(t, {
      plan: { daily_limit: 1, per_request_usd: '0.25' },
      topup: { test: 2 },
    });
    // Day 1: two billed (one included, one from the wallet: 0.25), one refunded (failed).
    const r1 = await redeem(t, m.key, {
      player_id: PLAYER,
      codes: [uniqueCode(), uniqueCode('USED'), uniqueCode('FAIL')],
    });
    expect(r1.statusCode, r1.body).toBe(200);
    clock.set('2026-11-23T10:00:00Z');
    await adjust(m, -150_000);
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, {
      mode: 'test',
      usd: '1.000001',
    });
    clock.set('2026-11-24T12:00:00Z');
    const res = await statement(m.key, '?from=2026-11-21&to=2026-11-24');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['svc-cost']).toBe('0');
    const day1 = {
      ...zeroDay('2026-11-22'),
      requests_included: 1,
      requests_overage: 1,
      requests_refunded: 1,
      codes: { activated: 1, code_used: 1, invalid_code: 0, bad_player: 0, failed: 1 },
      charged_usd: 0.25,
      topups_usd: 2,
      opening_balance_usd: 0,
      closing_balance_usd: 1.75,
    };
    const day2 = {
      ...zeroDay('2026-11-23', 1.75),
      topups_usd: 1.000001,
      adjustments_usd: -0.15,
      closing_balance_usd: 2.600001,
    };
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      mode: 'test',
      currency: 'USD',
      from: '2026-11-21',
      to: '2026-11-24',
      days: [zeroDay('2026-11-21'), day1, day2, zeroDay('2026-11-24', 2.600001)],
      totals: {
        requests_included: 1,
        requests_overage: 1,
        requests_refunded: 1,
        codes: day1.codes,
        charged_usd: 0.25,
        topups_usd: 3.000001,
        adjustments_usd: -0.15,
        opening_balance_usd: 0,
        closing_balance_usd: 2.600001,
      },
    });
    expect(micros(2.600001)).toBe(await balanceMicros(m.customerId));

    const csv = await statement(m.key, '?from=2026-11-21&to=2026-11-24', 'text/csv');
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe(
      'attachment; filename="statement-test-2026-11-21-2026-11-24.csv"',
    );
    expect(csv.headers['x-request-id']).toMatch(/^req_/);
    expect(csv.headers['svc-balance-usd']).toBe('2.600001');
    expect(csv.body.split('\r\n')[0]).toBe(
      'date,requests_included,requests_overage,requests_refunded,codes_activated,codes_code_used,' +
        'codes_invalid_code,codes_bad_player,codes_failed,charged_usd,topups_usd,adjustments_usd,' +
        'opening_balance_usd,closing_balance_usd',
    );
    expect(csvDays(csv.body)).toEqual(res.json().days);

    // The operator sees the same, as JSON and CSV.
    const admin = await adminCall<{ days: Day[] }>(
      t,
      'GET',
      `/admin/v1/customers/${m.customerId}/statements?mode=test&from=2026-11-21&to=2026-11-24`,
    );
    expect(admin.days).toEqual(res.json().days);
    const adminCsv = await t.admin.inject({
      method: 'GET',
      url: `/admin/v1/customers/${m.customerId}/statements?mode=test&from=2026-11-21&to=2026-11-24`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, accept: 'text/csv' },
    });
    expect(adminCsv.body).toBe(csv.body);
  });

  test('defaults: the 30 days ending today; bad ranges are 400; the live mode is another statement', async () => {
    clock.set('2026-11-24T12:00:00Z');
    const m = await createMerchant(t, { topup: { live: 5 } });
    const res = await statement(m.key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ from: '2026-10-26', to: '2026-11-24' });
    expect(res.json().days).toHaveLength(30);
    // The test key's statement never shows the live top-up.
    expect(res.json().totals.topups_usd).toBe(0);
    for (const q of [
      '?from=2026-11-25&to=2026-11-24',
      '?from=2025-11-22&to=2026-11-24',
      '?from=2026-02-30',
      '?to=2026-1-1',
      '?from=yesterday',
      '?color=red',
    ]) {
      const bad = await statement(m.key, q);
      expect(bad.statusCode, q).toBe(400);
      expect(bad.json().error_code).toBe('bad_request');
    }
    // Years 2000 to 9999 only (to=9999-12-31 was a 500, its next day in year 10000),
    // on the merchant's route and the operator's alike.
    for (const [q, message] of [
      ['?from=9999-12-01&to=9999-12-31', null],
      ['?from=1999-12-31&to=2000-01-05', 'from: must be a day of the years 2000 to 9999'],
      ['?from=2026-11-01&to=0001-01-01', 'to: must be a day of the years 2000 to 9999'],
    ] as const) {
      const admin = await t.admin.inject({
        method: 'GET',
        url: `/admin/v1/customers/${m.customerId}/statements${q}&mode=test`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      for (const res of [await statement(m.key, q), admin]) {
        if (message === null) {
          expect(res.statusCode, q).toBe(200);
          expect(res.json().days).toHaveLength(31);
        } else {
          expect({ status: res.statusCode, body: res.json() }, q).toEqual({
            status: 400,
            body: { ok: false, error_code: 'bad_request', message, request_id: res.headers['x-request-id'] },
          });
        }
      }
    }
    // 366 days, both ends included, is the longest range.
    expect((await statement(m.key, '?from=2025-11-24&to=2026-11-24')).statusCode).toBe(200);
    const noRead = await createMerchant(t, { key: { scopes: ['redeem'] } });
    expect((await statement(noRead.key)).statusCode).toBe(403);
  });
});

type Op =
  | { kind: 'topup'; cents: number }
  | { kind: 'adjust'; cents: number }
  | { kind: 'redeem'; markers: string[]; badPlayer: boolean }
  | { kind: 'advance'; hours: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('topup' as const), cents: fc.integer({ min: 1, max: 500 }) }),
  fc.record({
    kind: fc.constant('adjust' as const),
    cents: fc.integer({ min: -200, max: 200 }).filter((c) => c !== 0),
  }),
  {
    arbitrary: fc.record({
      kind: fc.constant('redeem' as const),
      markers: fc.array(fc.constantFrom('OK', 'USED', 'INVALID', 'FAIL', 'TIMEOUT'), {
        minLength: 1,
        maxLength: 4,
      }),
      badPlayer: fc.boolean(),
    }),
    weight: 3,
  },
  fc.record({ kind: fc.constant('advance' as const), hours: fc.integer({ min: 1, max: 40 }) }),
);

describe('property: statements reconcile', () => {
  test('every day closes at opening + topups + adjustments − charged; days chain; last closing = ledger', async () => {
    clock.set('2026-11-22T09:00:00Z');
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 1, maxLength: 14 }),
        fc.integer({ min: 0, max: 3 }),
        fc.constantFrom('0.01', '0.333333', '1', '0'),
        async (ops, dailyLimit, rate) => {
          const first = utcDay(clock.now());
          const m = await createMerchant(t, { plan: { daily_limit: dailyLimit, per_request_usd: rate } });
          const topups = new Map<string, number>();
          const adjustments = new Map<string, number>();
          const add = (map: Map<string, number>, v: number) =>
            map.set(utcDay(clock.now()), (map.get(utcDay(clock.now())) ?? 0) + v);
          for (const op of ops) {
            if (op.kind === 'advance') clock.advance(op.hours * 3_600_000);
            else if (op.kind === 'topup') {
              await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, {
                mode: 'test',
                usd: (op.cents / 100).toFixed(2),
              });
              add(topups, op.cents * 10_000);
            } else if (op.kind === 'adjust') {
              // A correction never takes the balance below zero (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments).
              if ((await balanceMicros(m.customerId)) + op.cents * 10_000 < 0) continue;
              await adjust(m, op.cents * 10_000);
              add(adjustments, op.cents * 10_000);
            } else {
              const res = await redeem(t, m.key, {
                player_id: op.badPlayer ? '0001234567' : PLAYER,
                codes: op.markers.map((mk) => uniqueCode(mk)),
              });
              expect([200, 402, 422], res.body).toContain(res.statusCode);
            }
          }
          const today = utcDay(clock.now());
          const res = await statement(m.key, `?from=${first}&to=${today}`);
          expect(res.statusCode, res.body).toBe(200);
          const body = res.json() as { days: Day[]; totals: Day };
          let previous = 0;
          for (const d of body.days) {
            expect(micros(d.opening_balance_usd)).toBe(previous);
            expect(micros(d.closing_balance_usd)).toBe(
              micros(d.opening_balance_usd) +
                micros(d.topups_usd) +
                micros(d.adjustments_usd) -
                micros(d.charged_usd),
            );
            expect(micros(d.topups_usd)).toBe(topups.get(d.date) ?? 0);
            expect(micros(d.adjustments_usd)).toBe(adjustments.get(d.date) ?? 0);
            previous = micros(d.closing_balance_usd);
          }
          expect(previous).toBe(await balanceMicros(m.customerId));
          // Counts: every billed outcome was billed from the include or the wallet, every other refunded.
          const c = body.totals.codes;
          expect(body.totals.requests_included + body.totals.requests_overage).toBe(
            c.activated! + c.code_used! + c.invalid_code!,
          );
          expect(body.totals.requests_refunded).toBe(c.bad_player! + c.failed!);
          // A later range opens where the full statement had that day open.
          const mid = body.days[Math.floor(body.days.length / 2)]!;
          const part = (await statement(m.key, `?from=${mid.date}&to=${today}`)).json();
          expect(part.days).toEqual(body.days.slice(body.days.indexOf(mid)));
          // The CSV is the same statement.
          expect(csvDays((await statement(m.key, `?from=${first}&to=${today}`, 'text/csv')).body)).toEqual(
            body.days,
          );
          // The next run starts on a new day.
          clock.advance(24 * 3_600_000);
        },
      ),
      { numRuns: 25 },
    );
  }, 240_000);
});
