// Pacing of refusals a flood keeps asking for (docs/reference/limits.md#unknown-key-floods). A key past its read
// budget, or an address past its unknown-key limit, is refused without a statement; but a client
// that ignores Retry-After and asks again at once still costs this process's one event loop a
// request each time, and on a small machine a closed-loop flood of cheap refusals can take the
// loop from every other tenant (measured in bench/README.md, "Floods"). So the refusals of one
// subject are answered at most `perSecond` a second; beyond that each waits its turn, at most
// `maxDelayMs`, before its 429 goes out. A client that honours Retry-After never waits: its first
// refusal is answered at once. A flood of N connections slows to about N answers per
// `maxDelayMs`, and what it holds is N sockets and N timers.
// Hand-written, not a library: a rate limiter library answers "allowed or not", and what this
// needs is "how long to hold an answer already decided", in a dozen lines.
import { setTimeout as sleep } from 'node:timers/promises';

export interface RefusalPace {
  /** How long (ms) to hold this refusal of `subject` before answering it: 0 when under pace. */
  delayFor(subject: string, nowMs: number): number;
}

export function createRefusalPace(opts: {
  perSecond: number;
  maxDelayMs: number;
  /** Subjects remembered at most (the oldest leaves first). */
  capacity?: number;
}): RefusalPace {
  const intervalMs = 1000 / opts.perSecond;
  const capacity = opts.capacity ?? 10_000;
  /** When each subject's next refusal may be answered at once. */
  const nextFree = new Map<string, number>();
  return {
    delayFor(subject, nowMs) {
      const start = Math.max(nextFree.get(subject) ?? 0, nowMs);
      const delay = start - nowMs;
      // At the cap the queue stops growing: every further refusal waits the cap.
      if (delay >= opts.maxDelayMs) return opts.maxDelayMs;
      nextFree.delete(subject);
      nextFree.set(subject, start + intervalMs);
      if (nextFree.size > capacity) nextFree.delete(nextFree.keys().next().value!);
      return delay;
    },
  };
}

/** Holds a refusal of `subject` for its turn; at once when under pace or unpaced. */
export async function paced(pace: RefusalPace | undefined, subject: string): Promise<void> {
  const ms = pace?.delayFor(subject, performance.now()) ?? 0;
  if (ms > 0) await sleep(ms);
}
