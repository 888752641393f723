// A stand-alone simulator of the upstream redemption protocol (docs/upstream-protocol.md), with
// its own in-memory state and injectable faults, so the http activator is tested over real
// sockets and an operator can try the live path without the game's backend.
//
// Codes it knows: the seeded ones (code → uc), and any code ending in -<catalog size>
// (LIVE-AB12CD-660 activates with 660 UC). Codes containing FAIL answer `failed` without being
// consumed. Anything else is `invalid_code`. Players whose id starts with 000 are not found. A code
// redeemed once answers `code_used` ever after, for every player. A check answers what a redeem
// would, consuming nothing.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { CATALOG_UC } from '../core/stock/catalog.ts';

export type FaultKind = 'latency' | 'error' | 'hang' | 'reset' | 'garbage';
export type FaultStage = 'before' | 'after';
/** The protocol's endpoints (/v1/<name>). */
export type ProtocolPath = 'activate' | 'status' | 'check';
export type FaultPath = ProtocolPath | 'any';

/** One fault rule. A request takes every latency rule that fires and the first other rule that fires. */
export interface FaultRule {
  kind: FaultKind;
  /**
   * `before`: the fault happens before the request is processed (the code is not touched);
   * `after`: the request was processed first (an activation consumed the code). Default `after`.
   */
  stage?: FaultStage;
  /** The endpoint it applies to (default `activate`). */
  path?: FaultPath;
  /** Only requests whose code contains this text. */
  match?: string;
  /** Probability from 0 to 1 that the rule fires on a request it applies to (default 1). */
  rate?: number;
  /** Fires on at most this many requests, then is spent (default: no limit). */
  count?: number;
  /** latency: milliseconds added (default 100). */
  ms?: number;
  /** error: the status answered (default 500). */
  status?: number;
}

export interface SimStats {
  /** Requests to /v1/activate, /v1/status and /v1/check that passed authentication. */
  requests: Record<ProtocolPath, number>;
  /** Requests being handled now, and the most at once since the last reset. */
  inFlight: number;
  maxInFlight: number;
  /** Faults applied, by kind. */
  faults: Record<FaultKind, number>;
  /** Codes redeemed so far. */
  redeemed: number;
}

export interface Redemption {
  playerId: string;
  activationId: string;
  uc: number;
}

export interface UpstreamSimOptions {
  /** The bearer key clients must send (also guards the /_sim admin endpoints). */
  key: string;
  /** Known codes and their UC, beyond the -<size> rule. */
  codes?: Record<string, number>;
  faults?: FaultRule[];
  /** Random numbers for fault rates (default Math.random). */
  random?: () => number;
}

export interface UpstreamSim {
  server: Server;
  /** Listens (default 127.0.0.1, port 0 = any free port) and returns the base URL. */
  listen(opts?: { port?: number; host?: string }): Promise<string>;
  /** Stops listening and drops every open connection, hanging ones included. */
  close(): Promise<void>;
  setFaults(faults: FaultRule[]): void;
  addCodes(codes: Record<string, number>): void;
  redemption(code: string): Redemption | undefined;
  stats(): SimStats;
  resetStats(): void;
}

const MAX_BODY = 16 * 1024;
const FAULT_KINDS: readonly FaultKind[] = ['latency', 'error', 'hang', 'reset', 'garbage'];

class BadRequest extends Error {}

/** The UC of a code the simulator knows, or null. */
function ucOf(code: string, seeded: Map<string, number>): number | null {
  const seededUc = seeded.get(code);
  if (seededUc !== undefined) return seededUc;
  const m = /-(\d+)$/.exec(code);
  const uc = m ? Number(m[1]) : null;
  return uc !== null && (CATALOG_UC as readonly number[]).includes(uc) ? uc : null;
}

/** Checks a fault list from the admin endpoint or the command line; throws a readable error. */
export function parseFaults(input: unknown): FaultRule[] {
  if (!Array.isArray(input)) throw new BadRequest('faults must be an array');
  return input.map((raw, i): FaultRule => {
    if (typeof raw !== 'object' || raw === null) throw new BadRequest(`faults[${i}] must be an object`);
    const r = raw as Record<string, unknown>;
    const known = new Set(['kind', 'stage', 'path', 'match', 'rate', 'count', 'ms', 'status']);
    const extra = Object.keys(r).find((k) => !known.has(k));
    if (extra) throw new BadRequest(`faults[${i}].${extra} is not a fault field`);
    if (!FAULT_KINDS.includes(r.kind as FaultKind))
      throw new BadRequest(`faults[${i}].kind must be one of ${FAULT_KINDS.join(', ')}`);
    if (r.stage !== undefined && r.stage !== 'before' && r.stage !== 'after')
      throw new BadRequest(`faults[${i}].stage must be before or after`);
    if (r.path !== undefined && !['activate', 'status', 'check', 'any'].includes(r.path as string))
      throw new BadRequest(`faults[${i}].path must be activate, status, check or any`);
    if (r.match !== undefined && typeof r.match !== 'string')
      throw new BadRequest(`faults[${i}].match must be a string`);
    if (r.rate !== undefined && !(typeof r.rate === 'number' && r.rate >= 0 && r.rate <= 1))
      throw new BadRequest(`faults[${i}].rate must be a number from 0 to 1`);
    for (const f of ['count', 'ms'] as const) {
      if (r[f] !== undefined && !(Number.isInteger(r[f]) && (r[f] as number) >= 0))
        throw new BadRequest(`faults[${i}].${f} must be a non-negative integer`);
    }
    if (
      r.status !== undefined &&
      !(Number.isInteger(r.status) && (r.status as number) >= 500 && (r.status as number) <= 599)
    )
      throw new BadRequest(`faults[${i}].status must be a 5xx status`);
    return { ...(r as unknown as FaultRule) };
  });
}

function send(res: ServerResponse, status: number, body: unknown) {
  if (res.destroyed || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Applies a fault; true when it answered (or dropped) the request. */
function applyFault(rule: FaultRule, req: IncomingMessage, res: ServerResponse): boolean {
  switch (rule.kind) {
    case 'error':
      send(res, rule.status ?? 500, { error: 'internal', message: 'simulated upstream error' });
      return true;
    case 'hang':
      // Never answer: the client gives up, or close() drops the connection.
      return true;
    case 'reset':
      req.socket.destroy();
      return true;
    case 'garbage': {
      const text = '<html><body>502 Bad Gateway: simulated garbage</body></html>';
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return true;
    }
    default:
      return false;
  }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new BadRequest('body too large');
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new BadRequest('body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new BadRequest('body must be a JSON object');
  return body as Record<string, unknown>;
}

/** A string field of a protocol body, checked against `pattern`. */
const field = (body: Record<string, unknown>, name: string, pattern: RegExp) => {
  const v = body[name];
  if (typeof v !== 'string' || !pattern.test(v)) throw new BadRequest(`${name} is missing or malformed`);
  return v;
};

const emptyStats = (): SimStats => ({
  requests: { activate: 0, status: 0, check: 0 },
  inFlight: 0,
  maxInFlight: 0,
  faults: { latency: 0, error: 0, hang: 0, reset: 0, garbage: 0 },
  redeemed: 0,
});

/** The simulated upstream's memory: the codes it knows and redeemed, its faults and counters. */
class SimState {
  readonly seeded: Map<string, number>;
  readonly redeemed = new Map<string, Redemption>();
  faults: FaultRule[];
  stats = emptyStats();

  constructor(
    opts: UpstreamSimOptions,
    private readonly random: () => number = opts.random ?? Math.random,
  ) {
    this.seeded = new Map(Object.entries(opts.codes ?? {}));
    this.faults = parseFaults(opts.faults ?? []);
  }

  /** The latency to add before and after processing, and the one other fault to apply. */
  pickFaults(path: ProtocolPath, code: string) {
    let before = 0;
    let after = 0;
    let action: FaultRule | undefined;
    for (const rule of this.faults) {
      if ((rule.path ?? 'activate') !== 'any' && (rule.path ?? 'activate') !== path) continue;
      if (rule.match !== undefined && !code.includes(rule.match)) continue;
      if (rule.count !== undefined && rule.count <= 0) continue;
      if (rule.kind !== 'latency' && action) continue;
      if (this.random() >= (rule.rate ?? 1)) continue;
      if (rule.count !== undefined) rule.count -= 1;
      this.stats.faults[rule.kind] += 1;
      if (rule.kind === 'latency') {
        if ((rule.stage ?? 'after') === 'before') before += rule.ms ?? 100;
        else after += rule.ms ?? 100;
      } else action = rule;
    }
    return { before, after, action };
  }

  activate(code: string, playerId: string): Record<string, unknown> {
    if (playerId.startsWith('000')) return { result: 'player_not_found' };
    if (code.includes('FAIL')) return { result: 'failed', reason: 'simulated failure: code not consumed' };
    if (this.redeemed.has(code)) return { result: 'code_used' };
    const uc = ucOf(code, this.seeded);
    if (uc === null) return { result: 'invalid_code' };
    const activationId = `act_${randomBytes(10).toString('hex')}`;
    this.redeemed.set(code, { playerId, activationId, uc });
    this.stats.redeemed = this.redeemed.size;
    return { result: 'activated', uc, activation_id: activationId, nickname: `Player${playerId.slice(-4)}` };
  }

  /** What activate would answer, consumed nothing: a FAIL code cannot be told (no player here). */
  check(code: string): Record<string, unknown> {
    if (code.includes('FAIL')) return { result: 'unknown' };
    if (this.redeemed.has(code)) return { result: 'used' };
    return { result: ucOf(code, this.seeded) === null ? 'invalid' : 'valid' };
  }

  status(code: string): Record<string, unknown> {
    const r = this.redeemed.get(code);
    return r ? { redeemed: true, player_id: r.playerId, activation_id: r.activationId } : { redeemed: false };
  }

  addCodes(codes: Record<string, unknown>): number {
    for (const [code, uc] of Object.entries(codes)) {
      if (!Number.isInteger(uc) || (uc as number) <= 0)
        throw new BadRequest(`uc of ${code} must be a positive integer`);
      this.seeded.set(code, uc as number);
    }
    return Object.keys(codes).length;
  }

  resetStats(): void {
    const { inFlight } = this.stats;
    this.stats = { ...emptyStats(), inFlight, maxInFlight: inFlight, redeemed: this.redeemed.size };
  }

  /** Counts a protocol request in flight until its response ends. */
  track(res: ServerResponse): void {
    this.stats.inFlight += 1;
    this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.stats.inFlight);
    let done = false;
    const leave = () => {
      if (done) return;
      done = true;
      this.stats.inFlight -= 1;
    };
    res.once('finish', leave);
    res.once('close', leave);
  }
}

async function handleProtocol(sim: SimState, path: ProtocolPath, req: IncomingMessage, res: ServerResponse) {
  sim.stats.requests[path] += 1;
  const body = await readJson(req);
  const code = field(body, 'code', /^[\x21-\x7e]{1,128}$/);
  const playerId = path === 'activate' ? field(body, 'player_id', /^\d{1,32}$/) : '';
  const { before, after, action } = sim.pickFaults(path, code);
  if (before) await sleep(before);
  if (action && (action.stage ?? 'after') === 'before' && applyFault(action, req, res)) return;
  const answer = path === 'activate' ? sim.activate(code, playerId) : sim[path](code);
  if (after) await sleep(after);
  if (action && (action.stage ?? 'after') === 'after' && applyFault(action, req, res)) return;
  send(res, 200, answer);
}

async function handleAdmin(sim: SimState, path: string, req: IncomingMessage, res: ServerResponse) {
  if (path === '/_sim/state' && req.method === 'GET')
    return send(res, 200, { stats: sim.stats, faults: sim.faults });
  if (path === '/_sim/faults' && (req.method === 'POST' || req.method === 'PUT')) {
    sim.faults = parseFaults((await readJson(req)).faults);
    return send(res, 200, { faults: sim.faults });
  }
  if (path === '/_sim/faults' && req.method === 'DELETE') {
    sim.faults = [];
    return send(res, 200, { faults: sim.faults });
  }
  if (path === '/_sim/codes' && req.method === 'POST') {
    const codes = (await readJson(req)).codes;
    if (typeof codes !== 'object' || codes === null || Array.isArray(codes))
      throw new BadRequest('codes must be an object of code → uc');
    return send(res, 200, { added: sim.addCodes(codes as Record<string, unknown>) });
  }
  if (path === '/_sim/stats/reset' && req.method === 'POST') {
    sim.resetStats();
    return send(res, 200, { stats: sim.stats });
  }
  return send(res, 404, { error: 'not_found' });
}

function routeOf(path: string): ProtocolPath | 'admin' | null {
  if (path === '/v1/activate' || path === '/v1/status' || path === '/v1/check')
    return path.slice(4) as ProtocolPath;
  return path.startsWith('/_sim/') ? 'admin' : null;
}

export function createUpstreamSim(opts: UpstreamSimOptions): UpstreamSim {
  const expected = Buffer.from(`Bearer ${opts.key}`);
  const sim = new SimState(opts);
  const authorized = (req: IncomingMessage) => {
    const got = Buffer.from(req.headers.authorization ?? '');
    return got.length === expected.length && timingSafeEqual(got, expected);
  };

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const route = routeOf(path);
    if (route === null) return send(res, 404, { error: 'not_found' });
    if (route !== 'admin' && req.method !== 'POST') return send(res, 405, { error: 'method_not_allowed' });
    // Authentication comes before any processing: a 401 never touches a code.
    if (!authorized(req)) {
      req.resume();
      return send(res, 401, { error: 'unauthorized' });
    }
    if (route !== 'admin') sim.track(res);
    const work = route === 'admin' ? handleAdmin(sim, path, req, res) : handleProtocol(sim, route, req, res);
    work.catch((err: unknown) => {
      if (err instanceof BadRequest) send(res, 400, { error: 'bad_request', message: err.message });
      else send(res, 500, { error: 'internal' });
    });
  });

  return {
    server,
    async listen({ port = 0, host = '127.0.0.1' } = {}) {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const a = server.address() as AddressInfo;
      const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
      return `http://${h}:${a.port}`;
    },
    async close() {
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
    setFaults(next) {
      sim.faults = parseFaults(next);
    },
    addCodes(codes) {
      sim.addCodes(codes);
    },
    redemption: (code) => sim.redeemed.get(code),
    stats: () => structuredClone(sim.stats),
    resetStats: () => sim.resetStats(),
  };
}
