// utcDay keeps its last answer: the kept day must never outlive its bounds, in either
// direction, since tests (and a corrected system clock) move time back as well as forward.
import { describe, expect, it } from 'vitest';
import { utcDay } from '../../src/core/clock.ts';

describe('utcDay', () => {
  it('answers each instant with its own UTC day, across midnights forward and back', () => {
    const instants = [
      '2026-11-22T09:00:00.000Z',
      '2026-11-22T23:59:59.999Z',
      '2026-11-23T00:00:00.000Z',
      '2026-11-22T23:59:59.999Z',
      '2026-11-22T00:00:00.000Z',
      '2026-11-21T23:59:59.999Z',
      '1969-12-31T23:59:59.999Z',
      '1970-01-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
      '2026-12-31T23:59:59.999Z',
    ];
    for (const iso of instants) expect([iso, utcDay(new Date(iso))]).toEqual([iso, iso.slice(0, 10)]);
  });

  it('refuses an invalid date as toISOString does, whatever it answered before', () => {
    utcDay(new Date('2026-11-22T09:00:00Z'));
    expect(() => utcDay(new Date(Number.NaN))).toThrow(RangeError);
  });
});
