// The upstream simulator (docs/upstream-protocol.md) over real sockets: the protocol's answers,
// authentication before processing, and every injectable fault with whether it consumed the code.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { parseSimArgs } from '../../src/cli/upstream-sim.ts';
import { createUpstreamSim, type UpstreamSim } from '../../src/dev/upstream-sim.ts';

const KEY = 'sim-test-key-0123456789';
let sim: UpstreamSim;
let url: string;
let seq = 0;
const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`.toUpperCase();
const code = (suffix = '-660') => `SIM-${tag}-${seq++}${suffix}`;

beforeAll(async () => {
  sim = createUpstreamSim({ key: KEY });
  url = await sim.listen();
});
afterAll(() => sim.close());
afterEach(() => sim.setFaults([]));

function post(path: string, body: unknown, opts: { key?: string | null; signal?: AbortSignal } = {}) {
  const key = opts.key === undefined ? KEY : opts.key;
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}
const activate = (c: string, playerId = '5123456789') =>
  post('/v1/activate', { code: c, player_id: playerId });
const statusOf = async (c: string) =>
  (await (await post('/v1/status', { code: c })).json()) as Record<string, unknown>;
const checkOf = async (c: string) =>
  (await (await post('/v1/check', { code: c })).json()) as Record<string, unknown>;

describe('protocol', () => {
  test('a code ending in a catalog size activates once, then answers code_used for everyone', async () => {
    const c = code('-660');
    const res = await activate(c);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      result: 'activated',
      uc: 660,
      activation_id: expect.stringMatching(/^act_[0-9a-f]{20}$/),
      nickname: 'Player6789',
    });
    expect(await statusOf(c)).toEqual({
      redeemed: true,
      player_id: '5123456789',
      activation_id: body.activation_id,
    });
    expect(await (await activate(c)).json()).toEqual({ result: 'code_used' });
    expect(await (await activate(c, '5999999999')).json()).toEqual({ result: 'code_used' });
  });

  test('every catalog size; other codes are invalid and not redeemed', async () => {
    for (const uc of [60, 325, 660, 1800, 3850, 8100]) {
      expect(await (await activate(code(`-${uc}`))).json()).toMatchObject({ result: 'activated', uc });
    }
    for (const c of [code(''), code('-100'), code('-6600')]) {
      expect(await (await activate(c)).json()).toEqual({ result: 'invalid_code' });
      expect(await statusOf(c)).toEqual({ redeemed: false });
    }
  });

  test('seeded codes activate with their uc, through the admin endpoint too', async () => {
    const [a, b] = [code('-X'), code('-Y')];
    sim.addCodes({ [a]: 100 });
    const seeded = await post('/_sim/codes', { codes: { [b]: 8100 } });
    expect(seeded.status).toBe(200);
    expect(await seeded.json()).toEqual({ added: 1 });
    expect(await (await activate(a)).json()).toMatchObject({ result: 'activated', uc: 100 });
    expect(await (await activate(b)).json()).toMatchObject({ result: 'activated', uc: 8100 });
    expect((await post('/_sim/codes', { codes: { [b]: 0 } })).status).toBe(400);
  });

  test('player ids starting with 000 are not found, and the code is not consumed', async () => {
    const c = code('-60');
    expect(await (await activate(c, '0001234567')).json()).toEqual({ result: 'player_not_found' });
    expect(await statusOf(c)).toEqual({ redeemed: false });
    expect(await (await activate(c)).json()).toMatchObject({ result: 'activated', uc: 60 });
  });

  test('a code containing FAIL fails with a reason and is not consumed', async () => {
    const c = code('-FAIL-60');
    expect(await (await activate(c)).json()).toEqual({
      result: 'failed',
      reason: 'simulated failure: code not consumed',
    });
    expect(await statusOf(c)).toEqual({ redeemed: false });
    expect(sim.redemption(c)).toBeUndefined();
  });
});

describe('check', () => {
  test('answers as an activation would and consumes nothing: valid, then used; invalid; FAIL unknown', async () => {
    const [c, seeded, fail] = [code('-660'), code('-X'), code('-FAIL-60')];
    sim.addCodes({ [seeded]: 100 });
    const before = sim.stats();
    expect(await checkOf(c)).toEqual({ result: 'valid' });
    expect(await checkOf(c)).toEqual({ result: 'valid' });
    expect(await checkOf(seeded)).toEqual({ result: 'valid' });
    expect(await checkOf(code(''))).toEqual({ result: 'invalid' });
    expect(await checkOf(code('-100'))).toEqual({ result: 'invalid' });
    expect(await checkOf(fail)).toEqual({ result: 'unknown' });
    expect(sim.redemption(c)).toBeUndefined();
    expect(sim.stats()).toMatchObject({
      redeemed: before.redeemed,
      requests: { check: before.requests.check + 6, activate: before.requests.activate },
    });
    // Checked valid, then activated: the check took nothing away.
    expect(await (await activate(c)).json()).toMatchObject({ result: 'activated', uc: 660 });
    expect(await checkOf(c)).toEqual({ result: 'used' });
    expect(await (await activate(fail)).json()).toMatchObject({ result: 'failed' });
  });

  test('a wrong key is 401 and a malformed body 400; faults apply with path check or any only', async () => {
    const c = code('-60');
    expect((await post('/v1/check', { code: c }, { key: 'wrong' })).status).toBe(401);
    expect((await post('/v1/check', { code: 'x'.repeat(129) })).status).toBe(400);
    expect((await post('/v1/check', {})).status).toBe(400);
    sim.setFaults([{ kind: 'error', path: 'check', status: 503 }]);
    expect((await post('/v1/check', { code: c })).status).toBe(503);
    expect((await post('/v1/status', { code: c })).status).toBe(200);
    expect((await activate(code('-60'))).status).toBe(200);
    sim.setFaults([{ kind: 'error', stage: 'before' }]);
    expect(await checkOf(c)).toEqual({ result: 'valid' });
    sim.setFaults([{ kind: 'error', path: 'any' }]);
    expect((await post('/v1/check', { code: c })).status).toBe(500);
    expect((await post('/_sim/faults', { faults: [{ kind: 'hang', path: 'redeem' }] })).status).toBe(400);
  });
});

describe('authentication and request errors', () => {
  test('a missing or wrong key is 401 before anything is processed', async () => {
    const c = code('-60');
    for (const key of [null, 'wrong', `${KEY}x`, '']) {
      const res = await post('/v1/activate', { code: c, player_id: '5123456789' }, { key });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: 'unauthorized' });
    }
    expect((await post('/v1/status', { code: c }, { key: 'wrong' })).status).toBe(401);
    expect((await post('/_sim/faults', { faults: [] }, { key: 'wrong' })).status).toBe(401);
    expect((await fetch(`${url}/_sim/state`)).status).toBe(401);
    expect(sim.redemption(c)).toBeUndefined();
  });

  test('malformed requests are 400 and consume nothing; unknown paths 404; wrong method 405', async () => {
    const c = code('-60');
    const bad = [
      'not json',
      '[1]',
      { code: c },
      { code: c, player_id: 5123456789 },
      { code: c, player_id: '51234x' },
      { player_id: '5123456789' },
      { code: 'x'.repeat(129), player_id: '5123456789' },
      { code: 'A B', player_id: '5123456789' },
    ];
    for (const body of bad) {
      const res = await post('/v1/activate', body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: 'bad_request' });
    }
    expect((await post('/v1/activate', 'x'.repeat(17_000))).status).toBe(400);
    expect(sim.redemption(c)).toBeUndefined();
    expect((await post('/v1/other', {})).status).toBe(404);
    expect((await fetch(`${url}/v1/activate`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(
      405,
    );
  });
});

describe('faults', () => {
  const setFaults = async (faults: unknown[]) => {
    const res = await post('/_sim/faults', { faults });
    expect(res.status).toBe(200);
  };

  test('error before processing: 5xx and the code is untouched; after: 5xx and consumed', async () => {
    await setFaults([{ kind: 'error', stage: 'before', status: 503, count: 1 }]);
    const a = code('-60');
    const res = await activate(a);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: 'internal', message: 'simulated upstream error' });
    expect(sim.redemption(a)).toBeUndefined();
    // count: 1 is spent: the next request is answered normally.
    expect((await activate(a)).status).toBe(200);

    await setFaults([{ kind: 'error' }]);
    const b = code('-60');
    expect((await activate(b)).status).toBe(500);
    expect(sim.redemption(b)).toMatchObject({ playerId: '5123456789', uc: 60 });
  });

  test('hang before and after processing: no answer until the client gives up', async () => {
    await setFaults([
      { kind: 'hang', stage: 'before', match: 'HANGB' },
      { kind: 'hang', match: 'HANGA' },
    ]);
    const before = code('-HANGB-60');
    const after = code('-HANGA-60');
    await expect(
      post('/v1/activate', { code: before, player_id: '5123456789' }, { signal: AbortSignal.timeout(300) }),
    ).rejects.toThrow();
    await expect(
      post('/v1/activate', { code: after, player_id: '5123456789' }, { signal: AbortSignal.timeout(300) }),
    ).rejects.toThrow();
    expect(sim.redemption(before)).toBeUndefined();
    expect(sim.redemption(after)).toMatchObject({ uc: 60 });
    // Other codes are not matched by the rules.
    expect((await activate(code('-60'))).status).toBe(200);
  });

  test('reset before and after processing: the connection dies without an answer', async () => {
    await setFaults([
      { kind: 'reset', stage: 'before', match: 'RSTB' },
      { kind: 'reset', match: 'RSTA' },
    ]);
    const before = code('-RSTB-60');
    const after = code('-RSTA-60');
    await expect(activate(before)).rejects.toThrow();
    await expect(activate(after)).rejects.toThrow();
    expect(sim.redemption(before)).toBeUndefined();
    expect(sim.redemption(after)).toMatchObject({ uc: 60 });
  });

  test('garbage: a 200 that is not JSON, after processing', async () => {
    await setFaults([{ kind: 'garbage' }]);
    const c = code('-325');
    const res = await activate(c);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html');
    expect(await res.text()).toContain('<html>');
    expect(sim.redemption(c)).toMatchObject({ uc: 325 });
  });

  test('latency adds up over the rules that fire; rate 0 never fires', async () => {
    await setFaults([
      { kind: 'latency', stage: 'before', ms: 150 },
      { kind: 'latency', ms: 100 },
      { kind: 'error', rate: 0 },
    ]);
    const started = performance.now();
    const res = await activate(code('-60'));
    expect(performance.now() - started).toBeGreaterThanOrEqual(240);
    expect(res.status).toBe(200);
  });

  test('faults on /v1/status only with path status; path any covers both', async () => {
    await setFaults([{ kind: 'error', path: 'status', status: 502 }]);
    const c = code('-60');
    expect((await activate(c)).status).toBe(200);
    expect((await post('/v1/status', { code: c })).status).toBe(502);
    await setFaults([{ kind: 'error', path: 'any', stage: 'before' }]);
    expect((await post('/v1/status', { code: c })).status).toBe(500);
    expect((await activate(code('-60'))).status).toBe(500);
  });

  test('a random rate fires on about that share of requests', async () => {
    const rolls = [0.1, 0.9, 0.4, 0.6];
    let i = 0;
    const seeded = createUpstreamSim({
      key: KEY,
      random: () => rolls[i++ % rolls.length]!,
      faults: [{ kind: 'error', stage: 'before', rate: 0.5 }],
    });
    const base = await seeded.listen();
    try {
      const statuses: number[] = [];
      for (let n = 0; n < 4; n++) {
        const res = await fetch(`${base}/v1/activate`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}` },
          body: JSON.stringify({ code: code('-60'), player_id: '5123456789' }),
        });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([500, 200, 500, 200]);
      expect(seeded.stats().faults.error).toBe(2);
    } finally {
      await seeded.close();
    }
  });

  test('the admin endpoint validates fault rules, reports them and the statistics', async () => {
    for (const faults of [
      {},
      [{ kind: 'explode' }],
      [{ kind: 'hang', stage: 'during' }],
      [{ kind: 'error', status: 404 }],
      [{ kind: 'error', rate: 2 }],
      [{ kind: 'latency', ms: -1 }],
      [{ kind: 'hang', extra: true }],
    ]) {
      const res = await post('/_sim/faults', { faults });
      expect(res.status).toBe(400);
    }
    await post('/_sim/stats/reset', {});
    await setFaults([{ kind: 'latency', ms: 5, count: 2 }]);
    await activate(code('-60'));
    await post('/v1/status', { code: 'X' });
    const state = (await (
      await fetch(`${url}/_sim/state`, { headers: { authorization: `Bearer ${KEY}` } })
    ).json()) as {
      stats: Record<string, unknown>;
      faults: unknown[];
    };
    expect(state.faults).toEqual([{ kind: 'latency', ms: 5, count: 1 }]);
    expect(state.stats).toMatchObject({
      requests: { activate: 1, status: 1, check: 0 },
      inFlight: 0,
      maxInFlight: 1,
      faults: { latency: 1, error: 0, hang: 0, reset: 0, garbage: 0 },
    });
    const cleared = await fetch(`${url}/_sim/faults`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(await cleared.json()).toEqual({ faults: [] });
  });

  test('in-flight requests are counted, the most at once is kept', async () => {
    sim.resetStats();
    await setFaults([{ kind: 'latency', ms: 200 }]);
    await Promise.all(Array.from({ length: 5 }, () => activate(code('-60'))));
    expect(sim.stats()).toMatchObject({ inFlight: 0, maxInFlight: 5 });
  });
});

describe('the upstream-sim command', () => {
  test('parses its options', () => {
    expect(
      parseSimArgs(['--key', 'K', '--port', '0', '--fault', 'hang-after=0.05', '--fault', 'reset'], {}),
    ).toEqual({
      help: false,
      port: 0,
      host: '127.0.0.1',
      key: 'K',
      faults: [
        { kind: 'hang', stage: 'after', rate: 0.05 },
        { kind: 'reset', stage: 'after', rate: 1 },
      ],
    });
    expect(parseSimArgs(['--latency-ms', '20'], { UPSTREAM_SIM_KEY: 'E' })).toMatchObject({
      key: 'E',
      port: 9090,
      faults: [{ kind: 'latency', stage: 'before', ms: 20 }],
    });
    expect(() => parseSimArgs([], {})).toThrow('a key is required');
    expect(() => parseSimArgs(['--key', 'K', '--fault', 'explode'], {})).toThrow('--fault explode');
    expect(() => parseSimArgs(['--key', 'K', '--fault', 'hang=2'], {})).toThrow('--fault hang=2');
    expect(() => parseSimArgs(['--key', 'K', '--port', '70000'], {})).toThrow('--port');
    expect(() => parseSimArgs(['--nope'], {})).toThrow();
  });

  test('redeem-gateway upstream-sim serves the protocol until SIGTERM', { timeout: 30_000 }, async () => {
    const child = spawn(
      process.execPath,
      [
        join(import.meta.dirname, '..', '..', 'bin', 'redeem-gateway.js'),
        'upstream-sim',
        '--port',
        '0',
        '--key',
        'cli-key',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    try {
      let out = '';
      const base = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d) => {
          out += String(d);
          const m = /listening on (http:\/\/\S+)/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.once('exit', () => reject(new Error(`exited: ${out}`)));
      });
      const res = await fetch(`${base}/v1/activate`, {
        method: 'POST',
        headers: { authorization: 'Bearer cli-key' },
        body: JSON.stringify({ code: code('-1800'), player_id: '5123456789' }),
      });
      expect(await res.json()).toMatchObject({ result: 'activated', uc: 1800 });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  test('a bad option exits 2 with one line', { timeout: 30_000 }, async () => {
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, '..', '..', 'bin', 'redeem-gateway.js'), 'upstream-sim'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: process.env.PATH ?? '' },
      },
    );
    let err = '';
    child.stderr.on('data', (d) => {
      err += String(d);
    });
    const codeOut = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(codeOut).toBe(2);
    expect(err).toBe('error: a key is required: --key K or UPSTREAM_SIM_KEY\n');
  });
});
