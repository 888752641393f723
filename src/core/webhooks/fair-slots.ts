// The resolver's slots, shared fairly between keys (customers, contract 13.8): a free slot goes
// round-robin to the keys that wait, and while another key waits no key holds more than half of
// the slots; alone, a key may use them all. The same rule as the activator's fair semaphore
// (activators/fair-semaphore.ts), which core may not import; this one also bounds the number of
// waiters (beyond it a lookup fails at once) and gives up on an abort signal (the lookup's
// deadline) instead of a timer.

export interface FairSlots {
  /** A release function, or null when the signal aborted first or too many wait already. */
  acquire(key: string, signal: AbortSignal): Promise<(() => void) | null>;
  /** Slots in flight now, waiting now, and the most ever in flight at once. */
  stats(): { active: number; queued: number; peakActive: number };
}

export function createFairSlots(capacity: number, maxQueued: number): FairSlots {
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
    active++;
    peakActive = Math.max(peakActive, active);
    held.set(key, (held.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      active--;
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
        queued--;
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

  return {
    acquire(key, signal) {
      if (!(queues.get(key)?.length ?? 0) && mayTake(key)) return Promise.resolve(take(key));
      if (queued >= maxQueued || signal.aborted) return Promise.resolve(null);
      return new Promise((resolve) => {
        const grant = () => {
          signal.removeEventListener('abort', giveUp);
          resolve(take(key));
        };
        const giveUp = () => {
          const queue = queues.get(key);
          const i = queue?.indexOf(grant) ?? -1;
          if (queue && i >= 0) {
            queue.splice(i, 1);
            queued--;
          }
          if (queue?.length === 0) queues.delete(key);
          resolve(null);
          // A key that stopped waiting may let a capped key take a free slot.
          dispatch();
        };
        const queue = queues.get(key);
        if (queue) queue.push(grant);
        else queues.set(key, [grant]);
        queued++;
        signal.addEventListener('abort', giveUp, { once: true });
      });
    },
    stats: () => ({ active, queued, peakActive }),
  };
}
