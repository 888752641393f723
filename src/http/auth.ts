// API key authentication (docs/reference/keys-and-modes.md#authentication-order), in the documented order of answers.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.ts';
import { ApiError } from '../core/errors.ts';
import { sha256Hex } from '../core/hash.ts';
import type { KeyCache } from '../core/keys/key-cache.ts';
import {
  API_KEY_PATTERN,
  findKeyByDigest,
  ipAllowed,
  type KeyRecord,
  type Scope,
} from '../core/keys/keys.ts';
import type { Queryable } from '../db/database.ts';

/** What a route needs: any valid key, one scope, or one of several scopes. */
export type ScopeRule = 'any' | Scope | readonly Scope[];

/** The token of `Authorization: Bearer <token>`, written exactly so (docs/reference/keys-and-modes.md#authentication-order); else null. */
export function bearerToken(header: string | undefined): string | null {
  if (typeof header !== 'string') return null;
  const m = /^Bearer (\S+)$/.exec(header);
  return m ? m[1]! : null;
}

/** Step 1 before any query: the SHA-256 digest of a well-formed bearer key, else `401 unauthorized`. */
export function keyDigest(request: Pick<FastifyRequest, 'headers'>): string {
  const token = bearerToken(request.headers.authorization);
  if (!token || !API_KEY_PATTERN.test(token))
    throw new ApiError('unauthorized', 'missing or invalid API key');
  return sha256Hex(token);
}

/** Steps 1 and 2 by one query: the key of that digest (remembered in `cache`), checked. */
export async function authenticate(
  q: Queryable,
  digest: string,
  clock: Clock,
  cache?: KeyCache,
): Promise<KeyRecord> {
  const key = await findKeyByDigest(q, digest);
  if (!key) throw new ApiError('unauthorized', 'missing or invalid API key');
  cache?.set(digest, key);
  checkKeyState(key, clock);
  return key;
}

/** Step 2: revoked, then expired (a revoked key past its expiry answers `revoked`). */
export function checkKeyState(key: Pick<KeyRecord, 'revokedAt' | 'expiresAt'>, clock: Clock): void {
  if (key.revokedAt) throw new ApiError('revoked', 'this API key was revoked');
  if (key.expiresAt && key.expiresAt.getTime() <= clock.now().getTime()) {
    throw new ApiError('expired', 'this API key has expired');
  }
}

/**
 * Steps 3 to 5, once the key is identified (the quota headers are sent from here on,
 * docs/reference/keys-and-modes.md#response-headers: "403 after identification").
 */
export function authorize(key: KeyRecord, clientIp: string, rule: ScopeRule): void {
  if (key.customerDisabled) throw new ApiError('unknown_customer', 'the customer of this key is not active');
  if (!ipAllowed(clientIp, key.allowedIps))
    throw new ApiError('ip_denied', 'this address is not allowed for the key');
  if (!scopeAllowed(key, rule)) {
    throw new ApiError('scope_denied', `this key lacks the scope ${neededScopes(rule).join(' or ')}`);
  }
}

const neededScopes = (rule: ScopeRule): readonly Scope[] =>
  rule === 'any' ? [] : typeof rule === 'string' ? [rule] : rule;

/** Step 5: the key has a scope the rule asks for (any key passes 'any'). */
export function scopeAllowed(key: Pick<KeyRecord, 'scopes'>, rule: ScopeRule): boolean {
  const needed = neededScopes(rule);
  return needed.length === 0 || needed.some((s) => key.scopes.includes(s));
}

/** Constant-time comparison of two secrets of any length (digests have equal length). */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(Buffer.from(sha256Hex(given), 'hex'), Buffer.from(sha256Hex(expected), 'hex'));
}
