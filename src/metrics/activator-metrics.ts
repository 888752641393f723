// Activator calls by result and latency, and the circuit breaker's state (docs/reference/running.md#metrics): a
// decorator around any Activator, so neither the sandbox nor the http client knows about metrics.

import type { BreakerState } from '../activators/circuit-breaker.ts';
import type { ActivationOutcome, Activator } from '../core/activator.ts';
import type { Metrics } from './registry.ts';

/** The result label of an activation: its status, `unknown` when it may have been consumed. */
function activationResult(o: ActivationOutcome): string {
  return o.status === 'failed' && o.unknown === true ? 'unknown' : o.status;
}

/**
 * Wraps an activator so each call is counted by result (activate: its status or `unknown`;
 * status: `redeemed`, `not_redeemed` or `unknown`; check: its state, `valid`, `used`, `invalid` or
 * `unknown`; any: `error` when it threw) and timed. An
 * activator with a `breakerState()` (the http one) has its breaker reported at every scrape.
 */
export function instrumentActivator(metrics: Metrics, inner: Activator): Activator {
  const name = inner.name;
  const breaker = (inner as Partial<{ breakerState(): BreakerState }>).breakerState;
  if (typeof breaker === 'function') metrics.watchBreaker(name, () => breaker.call(inner));
  const seconds = (started: number) => (performance.now() - started) / 1000;
  return {
    name,
    async activate(input) {
      const started = performance.now();
      try {
        const outcome = await inner.activate(input);
        metrics.activatorCall(name, 'activate', activationResult(outcome), seconds(started));
        return outcome;
      } catch (err) {
        metrics.activatorCall(name, 'activate', 'error', seconds(started));
        throw err;
      }
    },
    async status(input) {
      const started = performance.now();
      try {
        const answer = await inner.status(input);
        const result = answer === null ? 'unknown' : answer.redeemed ? 'redeemed' : 'not_redeemed';
        metrics.activatorCall(name, 'status', result, seconds(started));
        return answer;
      } catch (err) {
        metrics.activatorCall(name, 'status', 'error', seconds(started));
        throw err;
      }
    },
    async check(input) {
      const started = performance.now();
      try {
        const state = await inner.check(input);
        metrics.activatorCall(name, 'check', state, seconds(started));
        return state;
      } catch (err) {
        metrics.activatorCall(name, 'check', 'error', seconds(started));
        throw err;
      }
    },
  };
}
