// The money functions of src/db/functions/billing.sql against a model, on the real database:
// fast-check generates sequences of operations (top-ups, holds, captures, releases, quarantined
// outcomes and their settlements, day changes) for a fresh customer with a random plan, runs each
// through the SQL function (or its one TypeScript wrapper), and compares what each returns and
// what the database holds afterwards (balance, held, daily used/overage, the ledger and its
// running balance) with a tiny model of docs/reference/billing-and-quota.md#billing-a-redeem.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCustomer, setPlan } from '../../src/core/accounts/accounts.ts';
import { appendLedger } from '../../src/core/billing/wallet.ts';
import { ManualClock } from '../../src/core/clock.ts';
import type { Mode } from '../../src/core/vocabulary.ts';
import type { Queryable } from '../../src/db/database.ts';
import { openTestDatabase, type TestDatabase } from '../helpers/db.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(() => t.close());

const START = '2031-03-01T10:00:00Z';
const DAY_MS = 86_400_000;
let serial = 0;
const uniqueId = (p: string) => `${p}-${process.pid}-${++serial}`;

interface Plan {
  dailyLimit: number | null;
  rate: number;
  overage: boolean;
}
const plan: fc.Arbitrary<Plan> = fc.record({
  dailyLimit: fc.option(fc.nat(3), { nil: null }),
  rate: fc.constantFrom(0, 10_000, 25_000),
  overage: fc.boolean(),
});

type Op =
  | { op: 'topup'; amount: number }
  | { op: 'hold'; requests: number }
  | { op: 'capture' | 'release' | 'quarantine'; pick: number }
  | { op: 'settle'; pick: number; used: boolean }
  | { op: 'nextDay' };
// Weighted towards what meets at the edges: holds near the daily limit, quarantined codes and
// their settlements.
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('topup' as const), amount: fc.integer({ min: 1, max: 60_000 }) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant('hold' as const), requests: fc.integer({ min: 1, max: 3 }) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('capture' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('quarantine' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('settle' as const), pick: fc.nat(), used: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('nextDay' as const) }) },
);

interface ModelJob {
  id: string;
  day: string;
  rate: number;
  openIncluded: number;
  openWallet: number;
  codes: number;
}

/** docs/reference/billing-and-quota.md#billing-a-redeem for one customer and mode, as small as it can be. */
class Model {
  balance = 0;
  held = 0;
  usage = new Map<string, { used: number; overage: number }>();
  ledger: number[] = [];
  jobs: ModelJob[] = [];
  quarantined: { job: ModelJob; position: number; settled: boolean }[] = [];
  constructor(readonly plan: Plan) {}

  day(d: string) {
    const u = this.usage.get(d) ?? { used: 0, overage: 0 };
    this.usage.set(d, u);
    return u;
  }
  charge(amount: number) {
    this.balance -= amount;
    this.ledger.push(-amount);
  }
  hold(day: string, n: number): { refusal: string } | { included: number; wallet: number } {
    const { dailyLimit, rate, overage } = this.plan;
    const u = this.usage.get(day) ?? { used: 0, overage: 0 };
    const remaining = dailyLimit === null ? 0 : Math.max(0, dailyLimit - (u.used - u.overage));
    const included = Math.min(n, remaining);
    const wallet = n - included;
    if (wallet > 0 && dailyLimit !== null && !overage) return { refusal: 'quota_exceeded' };
    if (wallet > 0 && this.balance - this.held < wallet * rate) return { refusal: 'insufficient_funds' };
    const d = this.day(day);
    d.used += n;
    d.overage += wallet;
    this.held += wallet * rate;
    return { included, wallet };
  }
  capture(j: ModelJob): number {
    if (j.openIncluded > 0) {
      j.openIncluded -= 1;
      return 0;
    }
    j.openWallet -= 1;
    if (j.rate === 0) return 0;
    this.held -= j.rate;
    this.charge(j.rate);
    return j.rate;
  }
  release(j: ModelJob) {
    const fromWallet = j.openWallet > 0;
    if (fromWallet) j.openWallet -= 1;
    else j.openIncluded -= 1;
    const d = this.day(j.day);
    d.used -= 1;
    if (fromWallet) {
      d.overage -= 1;
      this.held -= j.rate;
    }
  }
  /** A code found used after all: billed on its job's day, the include first, even into debt. */
  settleUsed(j: ModelJob): number {
    const d = this.day(j.day);
    const included = this.plan.dailyLimit !== null && d.used - d.overage < this.plan.dailyLimit;
    d.used += 1;
    if (included) return 0;
    d.overage += 1;
    if (j.rate === 0) return 0;
    this.charge(j.rate);
    return j.rate;
  }
}

/** The job row redeem_create_job writes after a hold (only the columns billing reads matter). */
async function insertJob(
  q: Queryable,
  id: string,
  customerId: number,
  day: string,
  h: Record<string, number>,
) {
  await q.query(
    `insert into jobs (id, customer_id, mode, idempotency_key, is_async, status, source, player_id, total,
                       hold_day, rate_micros, hold_included, hold_wallet, created_at, request_id)
     values ($1, $2, 'live', $1, false, 'running', 'codes', 'p1', $3, $4, $5, $6, $7, $8, $9)`,
    [
      id,
      customerId,
      h.included! + h.wallet!,
      day,
      h.rate,
      h.included,
      h.wallet,
      new Date(START),
      `req-${id}`,
    ],
  );
}

/** What the database holds for the customer, in the model's shape. */
async function stored(q: Queryable, customerId: number) {
  const a = await q.query<{ balance: number; held: number }>(
    `select balance_micros as balance, held_micros as held from accounts where customer_id = $1 and mode = 'live'`,
    [customerId],
  );
  const u = await q.query<{ day: string; used: number; overage: number }>(
    `select to_char(day, 'YYYY-MM-DD') as day, used, overage from daily_usage
      where customer_id = $1 and mode = 'live' order by day`,
    [customerId],
  );
  const l = await q.query<{ amount: number; after: number }>(
    `select amount_micros as amount, balance_after_micros as after from wallet_ledger
      where customer_id = $1 and mode = 'live' order by id`,
    [customerId],
  );
  return {
    balance: a.rows[0]?.balance ?? 0,
    held: a.rows[0]?.held ?? 0,
    usage: u.rows.filter((r) => r.used !== 0 || r.overage !== 0),
    ledger: l.rows,
  };
}

function expectedOf(m: Model) {
  let running = 0;
  return {
    balance: m.balance,
    held: m.held,
    usage: [...m.usage]
      .filter(([, u]) => u.used !== 0 || u.overage !== 0)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([day, u]) => ({ day, ...u })),
    ledger: m.ledger.map((amount) => {
      running += amount;
      return { amount, after: running };
    }),
  };
}

const pickOpen = (m: Model, pick: number) => {
  const open = m.jobs.filter((j) => j.openIncluded + j.openWallet > 0);
  return open.length ? open[pick % open.length]! : null;
};

/** A hold as phase 1 makes it: billing_hold under the account lock, then the job row. */
async function holdStep(m: Model, customerId: number, clock: ManualClock, requests: number) {
  const day = clock.now().toISOString().slice(0, 10);
  const id = uniqueId('mj');
  const got = await t.db.transaction(async (tx) => {
    await tx.query('select account_lock($1, $2)', [customerId, 'live']);
    const r = await tx.query<{ h: Record<string, number> & { refusal?: string } }>(
      `select billing_hold($1, 'live', $2, $3, $4) as h`,
      [customerId, clock.now(), day, requests],
    );
    const h = r.rows[0]!.h;
    if (h.refusal) return { refusal: h.refusal };
    await insertJob(tx, id, customerId, day, h);
    return { included: h.included, wallet: h.wallet };
  });
  const want = m.hold(day, requests);
  if ('included' in want)
    m.jobs.push({
      id,
      day,
      rate: m.plan.rate,
      openIncluded: want.included,
      openWallet: want.wallet,
      codes: 0,
    });
  return [got, want] as [unknown, unknown];
}

/** A release; for a quarantined outcome (recorded unbilled) also its code, kept for settlement. */
async function releaseStep(
  m: Model,
  customerId: number,
  clock: ManualClock,
  op: 'release' | 'quarantine',
  pick: number,
) {
  const j = pickOpen(m, pick);
  if (!j) return [null, null] as [unknown, unknown];
  await t.db.transaction(async (tx) => {
    await tx.query('select billing_release_one($1, $2)', [customerId, j.id]);
    if (op === 'quarantine')
      await tx.query(
        `insert into job_codes (customer_id, job_id, position, code_hash, last4, state, status, disposition, billed, finished_at)
         select customer_id, $1, $2, $3, 'ABCD', 'done', 'failed', 'quarantined', false, $4 from jobs where id = $1`,
        [j.id, j.codes, uniqueId('hash'), clock.now()],
      );
  });
  m.release(j);
  if (op === 'quarantine') m.quarantined.push({ job: j, position: j.codes, settled: false });
  j.codes += 1;
  return [null, null] as [unknown, unknown];
}

/** Runs one operation on the database and the model; returns both results to compare. */
async function step(m: Model, customerId: number, clock: ManualClock, o: Op): Promise<[unknown, unknown]> {
  const db = t.db;
  switch (o.op) {
    case 'topup': {
      const { entryId } = await appendLedger(
        db,
        {
          customerId,
          mode: 'live',
          amountMicros: o.amount,
          kind: 'topup',
          actor: 'model',
          requestId: 'req-top',
        },
        clock,
      );
      m.balance += o.amount;
      m.ledger.push(o.amount);
      // The entry records the balance after it.
      const entry = await db.query<{ balance: number }>(
        'select balance_after_micros as balance from wallet_ledger where id = $1',
        [entryId],
      );
      return [entry.rows[0]!.balance, m.balance];
    }
    case 'hold':
      return holdStep(m, customerId, clock, o.requests);
    case 'capture': {
      const j = pickOpen(m, o.pick);
      if (!j) return [null, null];
      const r = await db.query<{ micros: number }>('select billing_capture_one($1, $2, $3) as micros', [
        customerId,
        j.id,
        clock.now(),
      ]);
      return [r.rows[0]!.micros, m.capture(j)];
    }
    case 'release':
    case 'quarantine':
      return releaseStep(m, customerId, clock, o.op, o.pick);
    case 'settle': {
      if (!m.quarantined.length) return [null, null];
      // Settled codes are picked too: a second settlement must change nothing.
      const q = m.quarantined[o.pick % m.quarantined.length]!;
      const r = await db.query<{ s: { customer_id: number; mode: Mode; wallet_micros: number } | null }>(
        'select quarantine_settle($1, $2, $3, $4, $5, $6, null) as s',
        [customerId, q.job.id, q.position, o.used ? 'used' : 'unused', 'check', clock.now()],
      );
      let want: { customer_id: number; mode: Mode; wallet_micros: number } | null = null;
      if (!q.settled)
        want = { customer_id: customerId, mode: 'live', wallet_micros: o.used ? m.settleUsed(q.job) : 0 };
      q.settled = true;
      return [r.rows[0]!.s, want];
    }
    case 'nextDay':
      clock.advance(DAY_MS);
      return [null, null];
  }
}

test('holds, captures, releases, top-ups and quarantine settlements move money as the model says', {
  timeout: 240_000,
}, async () => {
  await fc.assert(
    fc.asyncProperty(plan, fc.array(op, { minLength: 4, maxLength: 30, size: 'max' }), async (p, ops) => {
      const clock = new ManualClock(START);
      const customerId = await createCustomer(t.db, 'money model', clock);
      await setPlan(
        t.db,
        customerId,
        { label: 'm', dailyLimit: p.dailyLimit, perRequestMicros: p.rate, overage: p.overage, active: true },
        clock,
      );
      const m = new Model(p);
      for (const o of ops) {
        const [got, want] = await step(m, customerId, clock, o);
        expect({ op: o, result: got }).toEqual({ op: o, result: want });
      }
      expect(await stored(t.db, customerId)).toEqual(expectedOf(m));
    }),
    { numRuns: 60 },
  );
});
