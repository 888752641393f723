// The one shape of every background loop (job worker, webhook worker, sweeper): run a pass, sleep,
// run again. A pass never overlaps the previous one; `wake()` cuts the sleep short; a pass that
// throws is logged and the next one waits longer (capped), so a database that is away is retried
// calmly and the process never crashes (docs/architecture.md#house-rules); `stop()` ends the sleep, waits for the
// pass in flight and resolves when the loop is over.
import type { Logger } from 'pino';

export interface BackgroundLoopOptions {
  /** Named in log lines ("job worker", "sweeper"). */
  name: string;
  /**
   * One pass. Resolves `true` when there may be more to do at once (a full batch): the next
   * pass then starts without sleeping. The signal is aborted when the loop stops.
   */
  pass: (signal: AbortSignal) => Promise<unknown>;
  /** Sleep between passes when there is nothing more to do. */
  intervalMs: number;
  /** Longest sleep after failed passes (default 30000 ms); the sleep doubles from intervalMs. */
  maxBackoffMs?: number;
  /** Sleep before the first pass (default 0). */
  initialDelayMs?: number;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
}

export interface BackgroundLoop {
  /** Starts the next pass now (or right after the one in flight). */
  wake(): void;
  /** Stops: no new pass starts; resolves once the pass in flight has ended. */
  stop(): Promise<void>;
  /** Consecutive failed passes (0 when the last pass succeeded). */
  failures(): number;
}

export function startBackgroundLoop(opts: BackgroundLoopOptions): BackgroundLoop {
  const maxBackoffMs = opts.maxBackoffMs ?? 30_000;
  const stopping = new AbortController();
  let woken = false;
  let cutSleep: (() => void) | null = null;
  let failures = 0;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopping.signal.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        cutSleep = null;
        resolve();
      }
      cutSleep = done;
    });

  const loop = (async () => {
    if (opts.initialDelayMs) await sleep(opts.initialDelayMs);
    while (!stopping.signal.aborted) {
      woken = false;
      let more = false;
      try {
        more = (await opts.pass(stopping.signal)) === true;
        if (failures > 0) opts.logger.info({ loop: opts.name, failures }, `${opts.name} recovered`);
        failures = 0;
      } catch (err) {
        if (stopping.signal.aborted) break;
        failures += 1;
        // The first failure is an error; while it lasts, one warning per pass is enough.
        if (failures === 1)
          opts.logger.error({ err, loop: opts.name }, `${opts.name} pass failed; backing off`);
        else opts.logger.warn({ err, loop: opts.name, failures }, `${opts.name} pass failed again`);
      }
      if (stopping.signal.aborted) break;
      if (failures > 0) await sleep(Math.min(maxBackoffMs, opts.intervalMs * 2 ** failures));
      else if (!more) await sleep(opts.intervalMs);
    }
  })();

  return {
    wake() {
      woken = true;
      cutSleep?.();
    },
    async stop() {
      stopping.abort();
      cutSleep?.();
      await loop;
    },
    failures: () => failures,
  };
}
