// The http activator's circuit breaker counts only what says the upstream is unwell
// (docs/reference/redeem.md#activators): transport errors, timeouts and 5xx. A 4xx is an answer about that request; a 429 makes
// every call hold off for a while and never opens the breaker. Over real sockets, against a
// small upstream that answers the statuses a test scripts (the simulator only fails with 5xx).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  createHttpActivator,
  type HttpActivator,
  type HttpActivatorOptions,
} from '../../src/activators/http.ts';

const KEY = 'breaker-test-key-0123456789';
const PLAYER = '5123456789';
const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();
let seq = 0;
const code = () => `BRK-${tag}-${seq++}-60`;
let url: string;
let server: Server;
/** Statuses the upstream answers next, in order; then 200 activated. */
let script: number[] = [];
let requests = 0;
const activated = new Set<string>();
const sim = {
  setFaults(statuses: number[]) {
    script = [...statuses];
  },
  resetStats() {
    requests = 0;
  },
  requests: () => requests,
};
const activators: HttpActivator[] = [];

function activator(opts: Partial<HttpActivatorOptions> = {}): HttpActivator {
  const a = createHttpActivator({ url, key: KEY, timeoutMs: 500, retryDelaysMs: [10], ...opts });
  activators.push(a);
  return a;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += String(d);
    });
    req.on('end', () => {
      requests += 1;
      const status = script.shift() ?? 200;
      if (status !== 200) {
        res.writeHead(status, { 'content-type': 'application/json' });
        return res.end('{"error":"scripted"}');
      }
      activated.add((JSON.parse(body) as { code: string }).code);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"result":"activated","uc":60}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await Promise.all(activators.map((a) => a.close()));
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

test('4xx answers never open the breaker, however many', async () => {
  const a = activator({ breaker: { failureThreshold: 2, openMs: 60_000 } });
  for (const status of [400, 404, 409, 422, 400, 404]) {
    sim.setFaults([status]);
    expect(await a.activate({ mode: 'live', code: code(), playerId: PLAYER })).toEqual({
      status: 'failed',
      unknown: false,
    });
  }
  expect(a.breakerState()).toBe('closed');
  // Two 5xx in a row do: the threshold itself works.
  sim.setFaults([503, 503]);
  for (let i = 0; i < 2; i++) await a.activate({ mode: 'live', code: code(), playerId: PLAYER });
  expect(a.breakerState()).toBe('open');
  sim.setFaults([]);
});

test('a 4xx between 5xx resets the count: only consecutive upstream failures open it', async () => {
  const a = activator({ breaker: { failureThreshold: 2, openMs: 60_000 } });
  for (const status of [500, 400, 500, 404, 500]) {
    sim.setFaults([status]);
    await a.activate({ mode: 'live', code: code(), playerId: PLAYER });
  }
  expect(a.breakerState()).toBe('closed');
  sim.setFaults([]);
});

test('429: the call fails unsent, later calls hold off, the breaker stays closed', async () => {
  const a = activator({ timeoutMs: 500, breaker: { failureThreshold: 1, openMs: 60_000 } });
  sim.setFaults([429, 429, 429, 429, 429]);
  sim.resetStats();
  const first = code();
  expect(await a.activate({ mode: 'live', code: first, playerId: PLAYER })).toEqual({
    status: 'failed',
    unknown: false,
  });
  expect(a.breakerState()).toBe('closed');
  // Within the hold-off (1 s without Retry-After, longer than this call's deadline) the next
  // calls are not sent at all: failed, surely not sent, and the upstream sees nothing.
  for (let i = 0; i < 3; i++)
    expect(await a.activate({ mode: 'live', code: code(), playerId: PLAYER })).toEqual({
      status: 'failed',
      unknown: false,
    });
  expect(sim.requests()).toBe(1);
  expect(a.breakerState()).toBe('closed');
  expect(activated.has(first)).toBe(false);
  // After the hold-off the upstream is asked again, and a healthy answer goes through.
  sim.setFaults([]);
  await new Promise((r) => setTimeout(r, 1100));
  expect(await a.activate({ mode: 'live', code: code(), playerId: PLAYER })).toMatchObject({
    status: 'activated',
  });
  expect(sim.requests()).toBe(2);
});

test('429 with time left in the deadline: the same call is tried again after the hold-off', async () => {
  const a = activator({ timeoutMs: 3000, breaker: { failureThreshold: 1, openMs: 60_000 } });
  // Busy once, then fine: the call gets its answer on the second request.
  sim.setFaults([429]);
  sim.resetStats();
  const c = code();
  expect(await a.activate({ mode: 'live', code: c, playerId: PLAYER })).toMatchObject({
    status: 'activated',
  });
  expect(sim.requests()).toBe(2);
  expect(a.breakerState()).toBe('closed');
  sim.setFaults([]);
});
