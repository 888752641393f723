// API key authentication (contract section 1), in the contract's order of answers.
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.ts';
import { API_KEY_PATTERN, findKeyByToken, ipAllowed, type KeyRecord, type Scope } from '../core/keys.ts';
import type { Queryable } from '../db/database.ts';
import { ApiError } from './errors.ts';

/** What a route needs: any valid key, one scope, or one of several scopes. */
export type ScopeRule = 'any' | Scope | readonly Scope[];

/** The token of `Authorization: Bearer <token>`, written exactly so (contract section 1); else null. */
export function bearerToken(header: string | undefined): string | null {
  if (typeof header !== 'string') return null;
  const m = /^Bearer (\S+)$/.exec(header);
  return m ? m[1]! : null;
}

export async function authenticate(
  q: Queryable,
  request: Pick<FastifyRequest, 'headers'>,
  clock: Clock,
): Promise<KeyRecord> {
  const token = bearerToken(request.headers.authorization);
  if (!token || !API_KEY_PATTERN.test(token))
    throw new ApiError('unauthorized', 'missing or invalid API key');
  const key = await findKeyByToken(q, token);
  if (!key) throw new ApiError('unauthorized', 'missing or invalid API key');
  if (key.revokedAt) throw new ApiError('revoked', 'this API key was revoked');
  if (key.expiresAt && key.expiresAt.getTime() <= clock.now().getTime()) {
    throw new ApiError('expired', 'this API key has expired');
  }
  return key;
}

/**
 * Steps 3 to 5, once the key is identified (the quota headers are sent from here on, contract
 * section 8: "403 after identification").
 */
export function authorize(key: KeyRecord, clientIp: string, rule: ScopeRule): void {
  if (key.customerDisabled) throw new ApiError('unknown_customer', 'the customer of this key is not active');
  if (!ipAllowed(clientIp, key.allowedIps))
    throw new ApiError('ip_denied', 'this address is not allowed for the key');
  const needed: readonly Scope[] = rule === 'any' ? [] : typeof rule === 'string' ? [rule] : rule;
  if (needed.length > 0 && !needed.some((s) => key.scopes.includes(s))) {
    throw new ApiError('scope_denied', `this key lacks the scope ${needed.join(' or ')}`);
  }
}
