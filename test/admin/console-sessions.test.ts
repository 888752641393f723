// Console sessions are capped per operator: one operator signing in again and again
// evicts only its own oldest sessions, never another operator's.
import { expect, test } from 'vitest';
import { createSessionStore, MAX_SESSIONS_PER_OPERATOR } from '../../src/console/session.ts';
import { ManualClock } from '../../src/core/clock.ts';

test('a viewer signing in 200 times keeps its newest 20 sessions and signs no admin out', () => {
  const store = createSessionStore(new ManualClock('2026-11-22T09:00:00Z'));
  const admin = store.create('op_admin');
  const viewer = Array.from({ length: 200 }, () => store.create('op_viewer'));
  expect(store.check(admin.id)).toMatchObject({ operatorId: 'op_admin' });
  expect(MAX_SESSIONS_PER_OPERATOR).toBe(20);
  const alive = viewer.filter((s) => store.check(s.id) !== null);
  expect(alive).toEqual(viewer.slice(-20));
});
