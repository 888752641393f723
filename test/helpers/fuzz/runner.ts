// The fuzzer's runner: sends a seeded stream of generated requests (from 127.0.0.1, and from
// 127.0.0.2 for a stranger's credentials) until a count or a duration is reached, checks every
// answer and keeps the totals (by status, by answer, 5xx, no request id, schema mismatches) and the
// first finding of each kind; and the helpers that print findings.
import { Agent, request } from 'undici';
import { documentPath } from '../openapi-match.ts';
import { checkAnswer, isDocumented503 } from './checks.ts';
import { caseGenerator } from './generator.ts';
import type { Finding, FuzzCase, FuzzWorld } from './types.ts';

export interface FuzzTotals {
  requests: number;
  byStatus: Record<string, number>;
  /** Answers by listener, status and error_code (`admin 429 rate_limited`). */
  byAnswer: Record<string, number>;
  /**
   * 429 answers by listener (admin: the lockout after failed authentications; public: the read
   * budget, the burst limit, the unknown-key limit): answers, not findings, but each one is a
   * request that did not reach its route, so a run says how many.
   */
  rateLimited: { admin: number; public: number };
  /** 5xx answers that are findings (not a documented 503: checks.ts). */
  fiveXx: number;
  /** `503 unavailable` answers the public document lists, answered as documented (not findings). */
  documented503: number;
  /** The documented 503s by route (`GET /v1/health`). */
  documented503ByRoute: Record<string, number>;
  noRequestId: number;
  schemaMismatches: number;
  findings: Finding[];
  /** Requests that got no answer (connection error, client timeout). */
  transportErrors: number;
}

export const emptyTotals = (): FuzzTotals => ({
  requests: 0,
  byStatus: {},
  byAnswer: {},
  rateLimited: { admin: 0, public: 0 },
  fiveXx: 0,
  documented503: 0,
  documented503ByRoute: {},
  noRequestId: 0,
  schemaMismatches: 0,
  findings: [],
  transportErrors: 0,
});

export interface RunOptions {
  world: FuzzWorld;
  seed: number;
  /** Stop after this many requests (default unlimited). */
  requests?: number;
  /** Stop after this long (default unlimited). */
  durationMs?: number;
  /** Requests in flight at once (default 16). */
  concurrency?: number;
  /** Findings kept in full (the counts go on). Default 50. */
  keepFindings?: number;
  /** Called every second with the totals so far. */
  onProgress?: (t: FuzzTotals) => void;
}

/** Sends generated requests until a limit is reached; every answer is checked. */
export async function runFuzz(o: RunOptions): Promise<FuzzTotals> {
  const next = caseGenerator(o.world, o.seed);
  const totals = emptyTotals();
  const agent = (localAddress: string) =>
    new Agent({ connections: o.concurrency ?? 16, pipelining: 1, keepAliveTimeout: 10_000, localAddress });
  const trusted = agent('127.0.0.1');
  const stranger = agent('127.0.0.2');
  const deadline = o.durationMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + o.durationMs;
  const limit = o.requests ?? Number.POSITIVE_INFINITY;
  let started = 0;
  const progress = o.onProgress ? setInterval(() => o.onProgress!(totals), 1000) : undefined;
  const keep = o.keepFindings ?? 50;
  const kinds = new Set<string>();

  async function one(c: FuzzCase) {
    const base = c.listener === 'public' ? o.world.publicUrl : o.world.adminUrl;
    let status = 0;
    let headers: Record<string, string | string[] | undefined> = {};
    let body = '';
    try {
      const res = await request(`${base}${c.url}`, {
        method: c.method as 'GET',
        headers: c.headers,
        body: c.body,
        dispatcher: c.stranger ? stranger : trusted,
        headersTimeout: 60_000,
        bodyTimeout: 60_000,
      });
      status = res.statusCode;
      headers = res.headers;
      body = await res.body.text();
    } catch (err) {
      totals.transportErrors++;
      if (totals.findings.length < keep)
        totals.findings.push({
          case: c,
          status: 0,
          problems: [`no answer: ${(err as Error).message}`],
          body: '',
        });
      return;
    }
    totals.requests++;
    totals.byStatus[status] = (totals.byStatus[status] ?? 0) + 1;
    const code = status >= 400 ? (/"error_code":"(\w+)"/.exec(body)?.[1] ?? '?') : 'ok';
    const answer = `${c.listener} ${status} ${code}`;
    totals.byAnswer[answer] = (totals.byAnswer[answer] ?? 0) + 1;
    if (status === 429) totals.rateLimited[c.listener]++;
    if (status === 503 && isDocumented503(c, status, headers, body)) {
      totals.documented503++;
      const route = `${c.method} ${documentPath(c.url)}`;
      totals.documented503ByRoute[route] = (totals.documented503ByRoute[route] ?? 0) + 1;
    }
    const problems = checkAnswer(c, status, headers, body);
    if (problems.length === 0) return;
    if (problems.some((p) => p.startsWith('5xx'))) totals.fiveXx++;
    if (problems.includes('no request id')) totals.noRequestId++;
    if (
      problems.some(
        (p) =>
          p.startsWith('document:') ||
          p.includes('error body') ||
          p.includes('2xx JSON') ||
          p.startsWith('429'),
      )
    )
      totals.schemaMismatches++;
    // The first of each kind is kept, so a frequent finding cannot hide a rare one.
    const kind = `${c.listener} ${c.method} ${templateOf(c.url)} ${status} ${problems.join('; ')}`;
    if (totals.findings.length < keep && !kinds.has(kind)) {
      kinds.add(kind);
      totals.findings.push({ case: c, status, problems, body: body.slice(0, 400) });
    }
  }

  async function lane() {
    while (started < limit && Date.now() < deadline) {
      started++;
      await one(next());
    }
  }
  try {
    await Promise.all(Array.from({ length: o.concurrency ?? 16 }, lane));
  } finally {
    if (progress) clearInterval(progress);
    await Promise.all([trusted.close(), stranger.close()]);
  }
  return totals;
}

/** A URL's path with its ids and values folded, so answers of one route group together. */
export const templateOf = (url: string) => url.split('?')[0]!.replace(/\/[^/]*[\d%][^/]*/g, '/…');

/** A finding as one line a person can replay with curl. */
export function describeFinding(f: Finding): string {
  const c = f.case;
  return `${c.listener} ${c.method} ${c.url} ${JSON.stringify(c.headers)} ${c.body?.slice(0, 200) ?? ''} → ${f.status}: ${f.problems.join('; ')} ${f.body.slice(0, 200)}`;
}
