// Fair claims of webhook attempts (docs/reference/webhooks-and-events.md#fair-delivery), on the real database with real HTTPS
// receivers and an injected clock: customers take turns (each one's first due event before
// anyone's second), no customer has more than 4 attempts in flight, a receiver that keeps failing
// gets one attempt at a time until it answers again, and none of its events is dropped before
// its retries are used. The resolver's slots go round-robin by customer (core/fair-semaphore.ts, the activator's too).
import { describe, expect, test } from 'vitest';
import { createFairSemaphore } from '../../src/core/fair-semaphore.ts';
import { deliverEvent } from '../../src/core/webhooks/delivery.ts';
import { claimDueEventsFairly } from '../../src/core/webhooks/fair-claim.ts';
import type { ClaimedEvent } from '../../src/core/webhooks/worker-types.ts';
import { createMerchant, type Merchant } from '../helpers/app.ts';
import { eventKit } from '../helpers/event-kit.ts';

const kit = eventKit();
const claim = (limit: number) => claimDueEventsFairly(kit.t.ctx, { limit, leaseMs: 60_000 });
const send = (claimed: ClaimedEvent[]) =>
  Promise.all(claimed.map((evt) => deliverEvent(kit.t.ctx, { ca: kit.ca.ca }, evt)));
const countBy = (claimed: ClaimedEvent[], m: Merchant) =>
  claimed.filter((e) => e.customerId === m.customerId).length;

async function merchantWithEvents(n: number, status = 200) {
  const m = await createMerchant(kit.t, { topup: { test: 10 } });
  const receiver = await kit.newReceiver();
  receiver.fallback = status;
  receiver.secret = await kit.register(m.key, receiver.url);
  for (let i = 0; i < n; i++) await kit.finishedJob(m);
  return { m, receiver };
}

async function eventRows(m: Merchant) {
  const r = await kit.t.ctx.db.query<{ state: string; attempts: number }>(
    'select state, attempts from webhook_events where customer_id = $1 order by created_at, id',
    [m.customerId],
  );
  return r.rows;
}

describe('claims across customers', () => {
  test('turns by customer, at most 4 of one customer at once, each sent on its own', async () => {
    const a = await merchantWithEvents(10);
    const b = await merchantWithEvents(2);

    // A's ten events are older than B's two; B still gets the second turn.
    const first = await claim(2);
    expect([countBy(first, a.m), countBy(first, b.m)]).toEqual([1, 1]);
    const second = await claim(10);
    expect([countBy(second, a.m), countBy(second, b.m)]).toEqual([3, 1]);
    // A is at 4 in flight and B has nothing left: nothing more to claim.
    expect(await claim(10)).toEqual([]);

    await send([...first, ...second]);
    expect(a.receiver.requests).toHaveLength(4);
    expect(b.receiver.requests).toHaveLength(2);
    expect(b.receiver.requests.map((r) => r.verdict)).toEqual([null, null]);
    const third = await claim(10);
    expect([third.length, countBy(third, a.m)]).toEqual([4, 4]);
    await send(third);
    const fourth = await claim(10);
    expect(fourth.map((e) => e.customerId)).toEqual([a.m.customerId, a.m.customerId]);
    await send(fourth);
    expect((await eventRows(a.m)).map((r) => r.state)).toEqual(Array(10).fill('delivered'));
    expect(a.receiver.requests).toHaveLength(10);
  });

  test('a receiver that keeps failing gets one attempt at a time; its events wait, none dropped', async () => {
    const c = await merchantWithEvents(6, 500);
    // First pass: 4 attempts (the customer's limit), all answered 500.
    expect(await kit.deliver()).toBe(4);
    expect((await eventRows(c.m)).map((r) => r.attempts)).toEqual([1, 1, 1, 1, 0, 0]);

    // Every event is due now, but the receiver failed 4 times in a row: one attempt per pass.
    kit.clock.advance(10_000);
    expect(await kit.deliver()).toBe(1);
    expect(await kit.deliver()).toBe(1);
    const rows = await eventRows(c.m);
    expect(rows.map((r) => r.state)).toEqual(Array(6).fill('pending'));
    expect(rows.reduce((n, r) => n + r.attempts, 0)).toBe(6);

    // The receiver answers again: the next attempt succeeds and the customer's 4 come back.
    c.receiver.fallback = 200;
    expect(await kit.deliver()).toBe(1);
    // The three others due now (the two sent while backed off wait for their own retry time).
    expect(await kit.deliver()).toBe(3);
    expect(await kit.deliver()).toBe(0);
    kit.clock.advance(10_000);
    expect(await kit.deliver()).toBe(2);
    const after = await eventRows(c.m);
    expect(after.map((r) => r.state)).toEqual(Array(6).fill('delivered'));
    // Every event was sent until it was delivered: 6 failed attempts, 6 delivered ones.
    expect(c.receiver.requests.map((r) => r.answered).sort()).toEqual([
      ...Array(6).fill(200),
      ...Array(6).fill(500),
    ]);
    const health = await kit.t.ctx.db.query(
      'select consecutive_failures from webhook_receiver_health where customer_id = $1',
      [c.m.customerId],
    );
    expect(health.rows).toEqual([{ consecutive_failures: 0 }]);
  });
});

describe('the resolver slots', () => {
  test('free slots go round-robin by key; while another waits, no key holds more than half', async () => {
    const slots = createFairSemaphore(4, { maxQueued: 100 });
    const never = new AbortController().signal;
    const a = await Promise.all([0, 1, 2, 3].map(() => slots.acquire('customer:a', never)));
    expect(a.every((r) => r !== null)).toBe(true); // alone, a key may use them all
    const granted: string[] = [];
    const wait = async (key: string) => {
      const release = await slots.acquire(key, never);
      granted.push(key);
      return release;
    };
    const waiting = [wait('customer:a'), wait('customer:a'), wait('customer:b'), wait('customer:b')];
    expect(slots.stats()).toEqual({ active: 4, queued: 4, peakActive: 4 });
    a[0]!();
    a[1]!();
    a[2]!();
    await new Promise((r) => setTimeout(r, 0));
    // b waited after a, yet takes the first two free slots; a gets the third (back to half).
    expect(granted).toEqual(['customer:b', 'customer:b', 'customer:a']);
    a[3]!();
    const releases = await Promise.all(waiting);
    expect(granted).toEqual(['customer:b', 'customer:b', 'customer:a', 'customer:a']);
    for (const r of releases) r!();
    expect(slots.stats()).toEqual({ active: 0, queued: 0, peakActive: 4 });
  });

  test('a waiter gives up at its deadline; beyond the queue bound a lookup is refused at once', async () => {
    const slots = createFairSemaphore(1, { maxQueued: 1 });
    const held = await slots.acquire('customer:a', new AbortController().signal);
    const deadline = new AbortController();
    const waiting = slots.acquire('customer:b', deadline.signal);
    expect(await slots.acquire('customer:c', new AbortController().signal)).toBeNull();
    deadline.abort();
    expect(await waiting).toBeNull();
    held!();
    expect(slots.stats()).toEqual({ active: 0, queued: 0, peakActive: 1 });
  });
});
