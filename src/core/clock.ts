// Time comes from here, never from Date.now() in business code, so tests can cross midnight
// UTC and key expiry. The database's now() is not used for business time either.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests can set and move. */
export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date | string = '2026-11-22T09:00:00Z') {
    this.#ms = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  set(to: Date | string): void {
    this.#ms = new Date(to).getTime();
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
}

const DAY_MS = 86_400_000;
/** The last day utcDay formatted: [start, end) in ms, and its text. */
let lastDay = { start: 0, end: 0, text: '' };

/**
 * The UTC day of an instant, as YYYY-MM-DD. Every request asks it (the day's usage) and nearly
 * always for the same day as the request before: the last answer is kept, not formatted again.
 */
export function utcDay(d: Date): string {
  const ms = d.getTime();
  if (ms >= lastDay.start && ms < lastDay.end) return lastDay.text;
  const text = d.toISOString().slice(0, 10);
  const start = Math.floor(ms / DAY_MS) * DAY_MS;
  lastDay = { start, end: start + DAY_MS, text };
  return text;
}

/** Whole seconds until the next 00:00 UTC (at least 1). */
export function secondsUntilUtcMidnight(d: Date): number {
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - d.getTime()) / 1000));
}

/** ISO 8601 UTC with a Z and no milliseconds: 2026-11-22T09:00:00Z. */
export const isoUtc = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
