// Retrying work that lost its database connection (docs/reference/running.md#database-loss: a restarted server or a
// terminated backend fails the statements in flight; the pool reconnects). Only connection errors
// are retried, and only work that is safe to repeat; every other error is thrown at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { isConnectionError } from '../db/connection-errors.ts';
import { isPgError, PG_DEADLOCK_DETECTED } from '../db/database.ts';

export interface RetryPolicy {
  /** The last moment a retry may start, in epoch ms; read before each wait (a lease may move it). */
  deadline: () => number;
  /** The time now in epoch ms (the injected clock's, or Date.now). */
  now?: () => number;
  /** The wait before retry number `attempt` (0 for the first): default 100 ms, doubling up to 2 s. */
  delayMs?: (attempt: number) => number;
  /** At most this many tries in all. */
  maxAttempts?: number;
  /** Told before each wait: log the first, answer a request that has waited long enough, … */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

export const backoffDelay = (attempt: number) => Math.min(2000, 100 * 2 ** attempt);

/** Runs `fn`, again after a pause while it fails on a lost connection and the policy allows. */
export async function retryOnConnectionError<T>(fn: () => Promise<T>, policy: RetryPolicy): Promise<T> {
  const now = policy.now ?? Date.now;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const delay = (policy.delayMs ?? backoffDelay)(attempt);
      const last = policy.maxAttempts !== undefined && attempt + 1 >= policy.maxAttempts;
      if (!isConnectionError(err) || last || now() + delay > policy.deadline()) throw err;
      policy.onRetry?.(err, attempt, delay);
      await sleep(delay);
    }
  }
}

/** A policy that retries for up to `ms` from now. */
export function retryFor(ms: number): RetryPolicy {
  const end = Date.now() + ms;
  return { deadline: () => end };
}

/**
 * Runs one commit again when PostgreSQL rolled it back whole to break a lock cycle (40P01):
 * nothing of it was written, so only a commit that is safe to run again may be wrapped (phase 1
 * of a redeem, an outcome guarded by its code's state). At most `tries` runs in all.
 */
export async function retryOnDeadlock<T>(
  fn: () => Promise<T>,
  onRetry?: (attempt: number) => void,
  tries = 4,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isPgError(err, PG_DEADLOCK_DETECTED) || attempt >= tries) throw err;
      onRetry?.(attempt);
      await sleep(5 + Math.random() * 20 * attempt);
    }
  }
}
