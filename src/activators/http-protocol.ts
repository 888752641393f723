// The upstream protocol's answers (docs/upstream-protocol.md), judged: what each exchange means
// for the code, and whether it tells the circuit breaker the upstream is failing.
import type { ActivationOutcome, CodeCheckState, CodeStatus } from '../core/activator.ts';
import { CATALOG_UC } from '../core/stock/catalog.ts';
import type { Exchange } from './http-exchange.ts';

/** What an exchange tells the breaker about the upstream's health. */
export type Verdict = 'healthy' | 'failure';

function catalogCategory(uc: number | null): string | null {
  return uc !== null && (CATALOG_UC as readonly number[]).includes(uc) ? String(uc) : null;
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export function judgeActivation(x: Exchange): { result: ActivationOutcome; verdict: Verdict } {
  const failed = (unknown: boolean): ActivationOutcome => ({ status: 'failed', unknown });
  if (x.kind === 'not_sent') return { result: failed(false), verdict: 'failure' };
  if (x.kind === 'lost') return { result: failed(true), verdict: 'failure' };
  // The protocol: every 4xx is answered before the code is processed. It is an answer about
  // this request, not a sign the upstream is down (docs/reference/redeem.md#activators).
  if (x.status >= 400 && x.status < 500) return { result: failed(false), verdict: 'healthy' };
  if (x.status !== 200) return { result: failed(true), verdict: 'failure' };
  const body = parseObject(x.body);
  switch (body?.result) {
    case 'activated': {
      // Consumed, whatever else the answer says; an odd uc only loses the category.
      const uc = Number.isInteger(body.uc) && (body.uc as number) > 0 ? (body.uc as number) : null;
      return {
        result: { status: 'activated', unknown: false, uc, category: catalogCategory(uc) },
        verdict: 'healthy',
      };
    }
    case 'code_used':
      return { result: { status: 'code_used', unknown: false }, verdict: 'healthy' };
    case 'invalid_code':
      return { result: { status: 'invalid_code', unknown: false }, verdict: 'healthy' };
    case 'player_not_found':
      return { result: { status: 'bad_player', unknown: false }, verdict: 'healthy' };
    case 'failed':
      // The upstream's own verdict: it did not consume the code.
      return { result: failed(false), verdict: 'healthy' };
    default:
      // A 200 that is not the protocol: something in between is broken.
      return { result: failed(true), verdict: 'failure' };
  }
}

export function judgeStatus(x: Exchange): { result: CodeStatus | null; verdict: Verdict } {
  if (x.kind !== 'answer') return { result: null, verdict: 'failure' };
  if (x.status >= 400 && x.status < 500) return { result: null, verdict: 'healthy' };
  if (x.status !== 200) return { result: null, verdict: 'failure' };
  const body = parseObject(x.body);
  if (typeof body?.redeemed !== 'boolean') return { result: null, verdict: 'failure' };
  const playerId = typeof body.player_id === 'string' ? body.player_id : null;
  return {
    result: body.redeemed ? { redeemed: true, playerId } : { redeemed: false },
    verdict: 'healthy',
  };
}

const CHECK_RESULTS: readonly CodeCheckState[] = ['valid', 'used', 'invalid', 'unknown'];

/**
 * A check's answer: one of the four states (the upstream's own `unknown` is a healthy answer);
 * anything else is `unknown`, and counts against the upstream as a status call's does.
 */
export function judgeCheck(x: Exchange): { result: CodeCheckState; verdict: Verdict } {
  if (x.kind !== 'answer') return { result: 'unknown', verdict: 'failure' };
  if (x.status >= 400 && x.status < 500) return { result: 'unknown', verdict: 'healthy' };
  if (x.status !== 200) return { result: 'unknown', verdict: 'failure' };
  const result = parseObject(x.body)?.result;
  return CHECK_RESULTS.includes(result as CodeCheckState)
    ? { result: result as CodeCheckState, verdict: 'healthy' }
    : { result: 'unknown', verdict: 'failure' };
}
