// The one background loop of the workers and the sweeper: passes never overlap, wake cuts the
// sleep short, a failing pass is logged and retried (it never throws out of the loop), and stop
// waits for the pass in flight.
import { expect, test } from 'vitest';
import { startBackgroundLoop } from '../../src/core/background-loop.ts';

function recordingLogger() {
  const lines: Array<{ level: string; msg: string }> = [];
  const at = (level: string) => (_obj: unknown, msg: string) => {
    lines.push({ level, msg });
  };
  return { lines, logger: { error: at('error'), warn: at('warn'), info: at('info') } as never };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

test('no overlapping passes; wake runs the next pass at once; stop waits for the pass in flight', async () => {
  const { logger } = recordingLogger();
  let active = 0;
  let most = 0;
  let passes = 0;
  let release: (() => void) | null = null;
  const loop = startBackgroundLoop({
    name: 'test loop',
    intervalMs: 60_000,
    logger,
    async pass() {
      passes += 1;
      active += 1;
      most = Math.max(most, active);
      await new Promise<void>((r) => {
        release = r;
      });
      active -= 1;
    },
  });
  await tick();
  expect(passes).toBe(1);
  // Woken while a pass runs: no second pass beside it, but one right after it.
  loop.wake();
  loop.wake();
  await tick();
  expect(passes).toBe(1);
  release!();
  await tick();
  expect(passes).toBe(2);
  // Not woken: the loop sleeps its interval (a minute), so no third pass comes.
  release!();
  await tick();
  expect(passes).toBe(2);
  loop.wake();
  await tick();
  expect(passes).toBe(3);
  // Stop while a pass is in flight: stop resolves only after it.
  let stopped = false;
  const stopping = loop.stop().then(() => {
    stopped = true;
  });
  await tick();
  expect(stopped).toBe(false);
  release!();
  await stopping;
  expect(stopped).toBe(true);
  expect(passes).toBe(3);
  expect(most).toBe(1);
});

test('a failing pass never escapes: logged once as an error, then warnings, retried with backoff, recovery logged', async () => {
  const { lines, logger } = recordingLogger();
  let calls = 0;
  const loop = startBackgroundLoop({
    name: 'flaky',
    intervalMs: 1,
    maxBackoffMs: 4,
    logger,
    async pass() {
      calls += 1;
      if (calls <= 3) throw new Error('database away');
      return calls < 5; // one more pass at once, then sleep
    },
  });
  while (calls < 5) await tick();
  await loop.stop();
  expect(loop.failures()).toBe(0);
  expect(lines).toEqual([
    { level: 'error', msg: 'flaky pass failed; backing off' },
    { level: 'warn', msg: 'flaky pass failed again' },
    { level: 'warn', msg: 'flaky pass failed again' },
    { level: 'info', msg: 'flaky recovered' },
  ]);
});
