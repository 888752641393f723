// The http activator against the upstream simulator over real sockets: every protocol outcome,
// every fault with whether the code may have been consumed (unknown → quarantined), retries of
// what surely was not sent, the concurrency bound, the circuit breaker, and what reaches the logs.
import { type AddressInfo, createServer, type Server } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  createHttpActivator,
  type HttpActivator,
  type HttpActivatorOptions,
} from '../../src/activators/http.ts';
import { createUpstreamSim, type UpstreamSim } from '../../src/dev/upstream-sim.ts';
import { freePort } from '../helpers/process.ts';

const KEY = 'activator-test-key-0123456789';
const PLAYER = '5123456789';
let sim: UpstreamSim;
let url: string;
let seq = 0;
const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();
const code = (suffix = '-660') => `HTTP-${tag}-${seq++}${suffix}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const activators: HttpActivator[] = [];
const sims: UpstreamSim[] = [];
function activator(opts: Partial<HttpActivatorOptions> = {}): HttpActivator {
  const a = createHttpActivator({ url, key: KEY, timeoutMs: 1000, retryDelaysMs: [10, 20], ...opts });
  activators.push(a);
  return a;
}
const activate = (a: HttpActivator, c: string, playerId = PLAYER) =>
  a.activate({ mode: 'live', code: c, playerId });

beforeAll(async () => {
  sim = createUpstreamSim({ key: KEY });
  url = await sim.listen();
});
afterEach(() => sim.setFaults([]));
afterAll(async () => {
  await Promise.all(activators.map((a) => a.close()));
  await Promise.all([sim, ...sims].map((s) => s.close()));
});

describe('answers', () => {
  test('activated, with uc and the catalog category', async () => {
    const a = activator();
    const c = code('-660');
    expect(await activate(a, c)).toEqual({ status: 'activated', unknown: false, uc: 660, category: '660' });
    expect(sim.redemption(c)).toMatchObject({ playerId: PLAYER, uc: 660 });
    expect(await a.status({ mode: 'live', code: c })).toEqual({ redeemed: true, playerId: PLAYER });
  });

  test('a uc outside the catalog has no category', async () => {
    const a = activator();
    const c = code('-ODD');
    sim.addCodes({ [c]: 100 });
    expect(await activate(a, c)).toEqual({ status: 'activated', unknown: false, uc: 100, category: null });
  });

  test('code_used, invalid_code, player_not_found → bad_player, failed (not consumed)', async () => {
    const a = activator();
    const used = code('-60');
    await activate(a, used);
    expect(await activate(a, used, '5999999999')).toEqual({ status: 'code_used', unknown: false });
    expect(await activate(a, code(''))).toEqual({ status: 'invalid_code', unknown: false });
    const noPlayer = code('-60');
    expect(await activate(a, noPlayer, '0001234567')).toEqual({ status: 'bad_player', unknown: false });
    expect(await a.status({ mode: 'live', code: noPlayer })).toEqual({ redeemed: false });
    expect(await activate(a, code('-FAIL-60'))).toEqual({ status: 'failed', unknown: false });
    expect(a.breakerState()).toBe('closed');
  });

  test('a base URL with a path prefix and a trailing slash', async () => {
    const prefixed = createUpstreamSim({ key: KEY });
    sims.push(prefixed);
    const base = await prefixed.listen();
    // The simulator serves /v1/… at its root: a prefix it does not know is a 404, a failure
    // that surely was not processed.
    const a = activator({ url: `${base}/bridge/` });
    const c = code('-60');
    expect(await activate(a, c)).toEqual({ status: 'failed', unknown: false });
    expect(prefixed.redemption(c)).toBeUndefined();
    expect(await activate(activator({ url: `${base}/` }), c)).toMatchObject({ status: 'activated' });
  });

  test('a wrong key: 401, failed and surely not sent', async () => {
    const a = activator({ key: 'wrong-key' });
    const c = code('-60');
    expect(await activate(a, c)).toEqual({ status: 'failed', unknown: false });
    expect(await a.status({ mode: 'live', code: c })).toBeNull();
    expect(sim.redemption(c)).toBeUndefined();
  });

  test('a 4xx for a request the upstream rejects before processing: failed, not unknown', async () => {
    // The simulator answers 400 for a code longer than 128 characters.
    expect(await activate(activator(), `L${'X'.repeat(128)}-60`)).toEqual({
      status: 'failed',
      unknown: false,
    });
  });
});

describe('faults', () => {
  test('latency within the timeout: the answer counts', async () => {
    sim.setFaults([{ kind: 'latency', stage: 'before', ms: 200 }]);
    expect(await activate(activator({ timeoutMs: 2000 }), code('-60'))).toMatchObject({
      status: 'activated',
    });
  });

  test('a timeout after the upstream processed the code: failed, unknown; status() says redeemed', async () => {
    sim.setFaults([{ kind: 'hang', stage: 'after' }]);
    const a = activator({ timeoutMs: 300 });
    const c = code('-60');
    expect(await activate(a, c)).toEqual({ status: 'failed', unknown: true });
    sim.setFaults([]);
    expect(await a.status({ mode: 'live', code: c })).toEqual({ redeemed: true, playerId: PLAYER });
  });

  test('a hang before processing: failed, unknown too (the client cannot tell); status() says not redeemed', async () => {
    sim.setFaults([{ kind: 'hang', stage: 'before' }]);
    const a = activator({ timeoutMs: 300 });
    const c = code('-60');
    expect(await activate(a, c)).toEqual({ status: 'failed', unknown: true });
    sim.setFaults([]);
    expect(await a.status({ mode: 'live', code: c })).toEqual({ redeemed: false });
  });

  test('latency past the timeout is a timeout: unknown', async () => {
    sim.setFaults([{ kind: 'latency', stage: 'after', ms: 600 }]);
    expect(await activate(activator({ timeoutMs: 200 }), code('-60'))).toEqual({
      status: 'failed',
      unknown: true,
    });
  });

  test('5xx before or after processing: unknown (the client cannot tell which)', async () => {
    const a = activator();
    for (const stage of ['before', 'after'] as const) {
      sim.setFaults([{ kind: 'error', stage, status: 503 }]);
      expect(await activate(a, code('-60'))).toEqual({ status: 'failed', unknown: true });
    }
  });

  test('a connection reset before or after processing: unknown, and never retried', async () => {
    const a = activator();
    for (const stage of ['before', 'after'] as const) {
      sim.resetStats();
      sim.setFaults([{ kind: 'reset', stage }]);
      const c = code('-60');
      expect(await activate(a, c)).toEqual({ status: 'failed', unknown: true });
      expect(sim.stats().requests.activate).toBe(1);
      expect(Boolean(sim.redemption(c))).toBe(stage === 'after');
    }
  });

  test('garbage bodies: unknown', async () => {
    sim.setFaults([{ kind: 'garbage' }]);
    expect(await activate(activator(), code('-60'))).toEqual({ status: 'failed', unknown: true });
  });

  test('status() is null when it cannot tell (5xx, garbage, timeout)', async () => {
    const a = activator({ timeoutMs: 200 });
    const c = code('-60');
    await activate(a, c);
    for (const fault of [{ kind: 'error' }, { kind: 'garbage' }, { kind: 'hang' }] as const) {
      sim.setFaults([{ ...fault, path: 'status' }]);
      expect(await a.status({ mode: 'live', code: c })).toBeNull();
    }
  });

  test('connection refused: failed, surely not sent, after retries', async () => {
    const port = await freePort();
    const a = activator({ url: `http://127.0.0.1:${port}`, retryDelaysMs: [10, 10] });
    expect(await activate(a, code('-60'))).toEqual({ status: 'failed', unknown: false });
    expect(await a.status({ mode: 'live', code: 'X' })).toBeNull();
  });

  test('connection refused is retried: an upstream back before the last retry answers', async () => {
    const port = await freePort();
    const a = activator({ url: `http://127.0.0.1:${port}`, retryDelaysMs: [300, 300] });
    const later = createUpstreamSim({ key: KEY });
    sims.push(later);
    const pending = activate(a, code('-60'));
    await sleep(100);
    await later.listen({ port });
    expect(await pending).toMatchObject({ status: 'activated', uc: 60 });
    expect(later.stats().requests.activate).toBe(1);
  });

  test('a connection that never gets ready (TLS handshake unanswered, or failing): surely not sent', async () => {
    // A TCP listener that accepts and stays silent: the TLS handshake never completes, so
    // undici never starts writing the request.
    const received: Buffer[] = [];
    const silent = createServer((socket) => {
      socket.on('data', (d) => received.push(d));
      socket.on('error', () => undefined);
    });
    // One that answers the ClientHello with plain text: the handshake fails at once.
    const rude = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    });
    const listen = (s: Server) =>
      new Promise<number>((resolve) =>
        s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)),
      );
    try {
      const silentPort = await listen(silent);
      const rudePort = await listen(rude);
      const started = performance.now();
      const hung = activator({ url: `https://127.0.0.1:${silentPort}`, timeoutMs: 300, retryDelaysMs: [] });
      expect(await activate(hung, code('-60'))).toEqual({ status: 'failed', unknown: false });
      expect(performance.now() - started).toBeLessThan(5000);
      // Only the ClientHello arrived, never our request.
      expect(Buffer.concat(received).toString('latin1')).not.toContain('/v1/activate');
      const failing = activator({ url: `https://127.0.0.1:${rudePort}` });
      expect(await activate(failing, code('-60'))).toEqual({ status: 'failed', unknown: false });
    } finally {
      silent.close();
      rude.close();
    }
  });

  test('a stopped simulator: refused, not unknown; the code was never seen', async () => {
    const stopped = createUpstreamSim({ key: KEY });
    const base = await stopped.listen();
    const a = activator({ url: base });
    expect(await activate(a, code('-60'))).toMatchObject({ status: 'activated' });
    await stopped.close();
    const c = code('-60');
    expect(await activate(a, c)).toEqual({ status: 'failed', unknown: false });
    expect(stopped.redemption(c)).toBeUndefined();
  });
});

describe('concurrency', () => {
  test('never more calls in flight than the bound; the rest wait their turn', async () => {
    sim.resetStats();
    sim.setFaults([{ kind: 'latency', ms: 100 }]);
    const a = activator({ concurrency: 3, timeoutMs: 5000 });
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => activate(a, code('-60'))));
    expect(outcomes.every((o) => o.status === 'activated')).toBe(true);
    expect(sim.stats()).toMatchObject({ maxInFlight: 3, inFlight: 0, requests: { activate: 12 } });
  });

  test('a call that gets no slot within the timeout is never sent: failed, not unknown', async () => {
    sim.setFaults([{ kind: 'hang', match: 'HOG' }]);
    const a = activator({ concurrency: 1, timeoutMs: 300 });
    const hog = activate(a, code('-HOG-60'));
    const c = code('-60');
    expect(await activate(a, c)).toEqual({ status: 'failed', unknown: false });
    expect(await hog).toEqual({ status: 'failed', unknown: true });
    expect(sim.redemption(c)).toBeUndefined();
    // The slot is free again.
    expect(await activate(a, code('-60'))).toMatchObject({ status: 'activated' });
  });
});

describe('circuit breaker', () => {
  test('opens after N failures, answers at once without the network, half-opens and closes', async () => {
    const a = activator({ breaker: { failureThreshold: 3, openMs: 400 } });
    sim.setFaults([{ kind: 'error', stage: 'before' }]);
    sim.resetStats();
    for (let i = 0; i < 3; i++) {
      expect(a.breakerState()).toBe('closed');
      expect(await activate(a, code('-60'))).toEqual({ status: 'failed', unknown: true });
    }
    expect(a.breakerState()).toBe('open');
    sim.setFaults([]);
    // Open: failed and surely not sent, without a request to the upstream.
    const c = code('-60');
    expect(await activate(a, c)).toEqual({ status: 'failed', unknown: false });
    expect(await a.status({ mode: 'live', code: c })).toBeNull();
    expect(sim.stats().requests).toEqual({ activate: 3, status: 0, check: 0 });
    expect(sim.redemption(c)).toBeUndefined();

    await sleep(450);
    expect(a.breakerState()).toBe('half_open');
    expect(await activate(a, c)).toMatchObject({ status: 'activated' });
    expect(a.breakerState()).toBe('closed');
    expect(sim.stats().requests.activate).toBe(4);
  });

  test('a healthy answer resets the count: only consecutive failures open it', async () => {
    const a = activator({ breaker: { failureThreshold: 2, openMs: 10_000 } });
    sim.setFaults([{ kind: 'error', match: 'BAD' }]);
    for (let i = 0; i < 3; i++) {
      await activate(a, code('-BAD-60'));
      await activate(a, code('-60'));
    }
    expect(a.breakerState()).toBe('closed');
    await activate(a, code('-BAD-60'));
    await activate(a, code('-BAD-60'));
    expect(a.breakerState()).toBe('open');
  });

  test('half open: one trial call at a time; a failed trial opens it again', async () => {
    const a = activator({ timeoutMs: 500, breaker: { failureThreshold: 1, openMs: 200 } });
    sim.setFaults([{ kind: 'reset', stage: 'before' }]);
    expect(await activate(a, code('-60'))).toEqual({ status: 'failed', unknown: true });
    expect(a.breakerState()).toBe('open');
    await sleep(250);
    sim.setFaults([{ kind: 'hang', stage: 'before' }]);
    sim.resetStats();
    const probe = activate(a, code('-60'));
    await sleep(50);
    // While the trial is out, other calls are refused without the network.
    expect(await activate(a, code('-60'))).toEqual({ status: 'failed', unknown: false });
    expect(await probe).toEqual({ status: 'failed', unknown: true });
    expect(sim.stats().requests.activate).toBe(1);
    expect(a.breakerState()).toBe('open');
  });

  test('an unreachable upstream opens the breaker too', async () => {
    const port = await freePort();
    const a = activator({
      url: `http://127.0.0.1:${port}`,
      breaker: { failureThreshold: 2, openMs: 10_000 },
    });
    await activate(a, code('-60'));
    await activate(a, code('-60'));
    expect(a.breakerState()).toBe('open');
  });
});

test('logs name codes by their last 4 characters and never show the key or a whole code', async () => {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  const logger = pino({ level: 'debug' }, stream);
  const a = activator({ logger, timeoutMs: 200, breaker: { failureThreshold: 2, openMs: 10_000 } });
  const codes = [code('-AB60'), code('-CD60'), code('-EF60')];
  sim.setFaults([{ kind: 'hang' }, { kind: 'hang', path: 'status' }]);
  for (const c of codes) await activate(a, c);
  await a.status({ mode: 'live', code: codes[0]! });
  const text = lines.join('');
  expect(lines.length).toBeGreaterThanOrEqual(4);
  for (const c of codes) expect(text).not.toContain(c);
  expect(text).not.toContain(KEY);
  expect(text).toContain('"last4":"AB60"');
  expect(text).toContain('"unknown":true');
  expect(text).toContain('upstream circuit breaker open');
});
