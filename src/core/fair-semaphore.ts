// A counting semaphore shared fairly between keys (customers, docs/reference/jobs.md#fair-sharing, docs/reference/webhooks-and-events.md#fair-delivery): free slots
// go round-robin to the keys that wait, and while another key waits no key holds more than half of
// the slots. Alone, a key may use them all. It serves the http activator's calls and the webhook
// resolver's host lookups. `acquire` answers null when no slot came free in time (a timeout in ms,
// or an abort signal: the caller's own deadline), or at once when `maxQueued` callers wait already.

export interface FairSemaphore {
  /** A release function, or null when no slot came free within `wait` or too many wait already. */
  acquire(key: string, wait: number | AbortSignal): Promise<(() => void) | null>;
  /** Slots held now, by key (for tests and metrics). */
  held(): ReadonlyMap<string, number>;
  /** Callers waiting now. */
  waiting(): number;
  /** Slots in flight now, waiting now, and the most ever in flight at once. */
  stats(): { active: number; queued: number; peakActive: number };
}

export function createFairSemaphore(capacity: number, opts: { maxQueued?: number } = {}): FairSemaphore {
  if (!Number.isInteger(capacity) || capacity < 1) throw new Error('capacity must be a positive integer');
  const maxQueued = opts.maxQueued ?? Number.POSITIVE_INFINITY;
  // "No more than half": at least one, so a semaphore of one slot still serves.
  const share = Math.max(1, Math.floor(capacity / 2));
  const held = new Map<string, number>();
  // Keys in the order they are served next: the key just served goes to the back.
  const queues = new Map<string, Array<() => void>>();
  let active = 0;
  let peakActive = 0;
  let queued = 0;

  const othersWaiting = (key: string) => {
    for (const [k, q] of queues) if (k !== key && q.length > 0) return true;
    return false;
  };
  const mayTake = (key: string) => active < capacity && ((held.get(key) ?? 0) < share || !othersWaiting(key));

  function take(key: string): () => void {
    active += 1;
    peakActive = Math.max(peakActive, active);
    held.set(key, (held.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      active -= 1;
      const n = (held.get(key) ?? 1) - 1;
      if (n === 0) held.delete(key);
      else held.set(key, n);
      dispatch();
    };
  }

  function dispatch() {
    while (active < capacity) {
      let served = false;
      for (const [key, queue] of queues) {
        if (queue.length === 0) {
          queues.delete(key);
          continue;
        }
        if (!mayTake(key)) continue;
        const grant = queue.shift()!;
        queued -= 1;
        // Round-robin: this key goes to the back of the line.
        queues.delete(key);
        if (queue.length > 0) queues.set(key, queue);
        grant();
        served = true;
        break;
      }
      if (!served) return;
    }
  }

  function acquire(key: string, wait: number | AbortSignal): Promise<(() => void) | null> {
    if (!(queues.get(key)?.length ?? 0) && mayTake(key)) return Promise.resolve(take(key));
    const signal = typeof wait === 'number' ? undefined : wait;
    if (queued >= maxQueued || signal?.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const grant = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', giveUp);
        resolve(take(key));
      };
      const giveUp = () => {
        const queue = queues.get(key);
        const i = queue?.indexOf(grant) ?? -1;
        if (queue && i >= 0) {
          queue.splice(i, 1);
          queued -= 1;
        }
        if (queue?.length === 0) queues.delete(key);
        resolve(null);
        // A key that stopped waiting may let a capped key take a free slot.
        dispatch();
      };
      const queue = queues.get(key);
      if (queue) queue.push(grant);
      else queues.set(key, [grant]);
      queued += 1;
      if (signal) signal.addEventListener('abort', giveUp, { once: true });
      else timer = setTimeout(giveUp, wait as number);
    });
  }

  return {
    acquire,
    held: () => held,
    waiting: () => queued,
    stats: () => ({ active, queued, peakActive }),
  };
}
