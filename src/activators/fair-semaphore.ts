// A counting semaphore shared fairly between keys (customers, contract 12.5): free slots go
// round-robin to the keys that wait, and while another key waits no key holds more than half of
// the slots. Alone, a key may use them all. `acquire` answers null when no slot came free in time.

export interface FairSemaphore {
  /** A release function, or null when no slot came free within `waitMs`. */
  acquire(key: string, waitMs: number): Promise<(() => void) | null>;
  /** Slots held now, by key (for tests and metrics). */
  held(): ReadonlyMap<string, number>;
  /** Callers waiting now. */
  waiting(): number;
}

interface Waiter {
  grant: (release: (() => void) | null) => void;
}

export function createFairSemaphore(capacity: number): FairSemaphore {
  if (!Number.isInteger(capacity) || capacity < 1) throw new Error('capacity must be a positive integer');
  // "No more than half": at least one, so a semaphore of one slot still serves.
  const share = Math.max(1, Math.floor(capacity / 2));
  const held = new Map<string, number>();
  // Keys in the order they are served next: the key just served goes to the back.
  const queues = new Map<string, Waiter[]>();
  let active = 0;

  const othersWaiting = (key: string) => {
    for (const [k, q] of queues) if (k !== key && q.length > 0) return true;
    return false;
  };
  const mayTake = (key: string) => active < capacity && ((held.get(key) ?? 0) < share || !othersWaiting(key));

  const take = (key: string) => {
    active += 1;
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
  };

  function dispatch() {
    while (active < capacity) {
      let served = false;
      for (const [key, queue] of queues) {
        if (queue.length === 0) {
          queues.delete(key);
          continue;
        }
        if (!mayTake(key)) continue;
        const waiter = queue.shift()!;
        // Round-robin: this key goes to the back of the line.
        queues.delete(key);
        if (queue.length > 0) queues.set(key, queue);
        waiter.grant(take(key));
        served = true;
        break;
      }
      if (!served) return;
    }
  }

  return {
    acquire(key, waitMs) {
      if (!(queues.get(key)?.length ?? 0) && mayTake(key)) return Promise.resolve(take(key));
      return new Promise((resolve) => {
        const waiter: Waiter = {
          grant(release) {
            clearTimeout(timer);
            resolve(release);
          },
        };
        const timer = setTimeout(() => {
          const queue = queues.get(key);
          const i = queue?.indexOf(waiter) ?? -1;
          if (queue && i >= 0) queue.splice(i, 1);
          if (queue?.length === 0) queues.delete(key);
          resolve(null);
          // A key that stopped waiting may let a capped key take a free slot.
          dispatch();
        }, waitMs);
        const queue = queues.get(key);
        if (queue) queue.push(waiter);
        else queues.set(key, [waiter]);
      });
    },
    held: () => held,
    waiting: () => {
      let n = 0;
      for (const q of queues.values()) n += q.length;
      return n;
    },
  };
}
