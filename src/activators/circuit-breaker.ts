// A circuit breaker for calls to one upstream (docs/reference/redeem.md#activators): it stops calling an upstream that
// keeps failing, and lets one trial call through after a pause.

export type BreakerState = 'closed' | 'open' | 'half_open';

export type Breaker = ReturnType<typeof createBreaker>;

/**
 * Closed: calls go through; `failureThreshold` consecutive failures open it. Open: calls are
 * answered at once without the network. After `openMs`, one trial call goes through (half open):
 * its success closes the breaker, its failure opens it again.
 */
export function createBreaker(failureThreshold: number, openMs: number, onChange: (s: BreakerState) => void) {
  let state: BreakerState = 'closed';
  let failures = 0;
  let openedAt = 0;
  let probing = false;
  const set = (next: BreakerState) => {
    if (next !== state) {
      state = next;
      onChange(next);
    }
  };
  return {
    state: () => (state === 'open' && Date.now() - openedAt >= openMs ? 'half_open' : state),
    /** 'go' for a normal call, 'probe' for the trial call, null when the call must not be made. */
    admit(): 'go' | 'probe' | null {
      if (state === 'closed') return 'go';
      if (state === 'open' && Date.now() - openedAt >= openMs) set('half_open');
      if (state === 'half_open' && !probing) {
        probing = true;
        return 'probe';
      }
      return null;
    },
    success() {
      probing = false;
      failures = 0;
      set('closed');
    },
    failure() {
      probing = false;
      failures += 1;
      if (state === 'half_open' || failures >= failureThreshold) {
        openedAt = Date.now();
        set('open');
      }
    },
    /** A call that ended without telling anything about the upstream (no slot came free). */
    neutral() {
      probing = false;
    },
  };
}
