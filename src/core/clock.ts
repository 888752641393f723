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

/** The UTC day of an instant, as YYYY-MM-DD. */
export const utcDay = (d: Date): string => d.toISOString().slice(0, 10);

/** Whole seconds until the next 00:00 UTC (at least 1). */
export function secondsUntilUtcMidnight(d: Date): number {
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - d.getTime()) / 1000));
}

/** ISO 8601 UTC with a Z and no milliseconds: 2026-11-22T09:00:00Z. */
export const isoUtc = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
