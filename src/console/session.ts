// Console sessions: signing in with an operator's token (docs/reference/operators-and-audit.md#operators-and-roles) gives the browser a random session id in an
// HttpOnly, SameSite=Strict cookie; the token itself never reaches the cookie or page storage.
// Sessions live in this process's memory: signing out or a restart ends them, and a session
// found on one process is unknown to another (the admin listener is the operator's, on loopback).
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.ts';
import { sha256Hex } from '../core/hash.ts';

export const SESSION_COOKIE = 'rg_console';
/** A session lasts this long from sign-in (no sliding renewal: sign in again each working day). */
export const SESSION_TTL_MS = 8 * 3_600_000;
/**
 * Open sessions kept at most per operator; that operator's oldest goes first. Per operator, not
 * in all (with one cap for everyone, a viewer signing in 200 times signed every admin
 * out). Memory stays bounded: only an operator's token creates its sessions, and operators are few.
 */
export const MAX_SESSIONS_PER_OPERATOR = 20;
/**
 * Requests that change something must carry this header when authenticated by the cookie. A
 * cross-site page cannot send a custom header without a CORS preflight, which is never granted.
 */
export const CONSOLE_HEADER = 'x-console';

/** A live session: when it ends and which operator signed in (the console acts as that operator). */
export interface Session {
  expiresAt: Date;
  operatorId: string;
}

export interface SessionStore {
  create(operatorId: string): { id: string; expiresAt: Date };
  /** The session, or null when the id is unknown or expired. */
  check(id: string): Session | null;
  destroy(id: string): void;
}

export function createSessionStore(clock: Clock, ttlMs = SESSION_TTL_MS): SessionStore {
  // Keyed by the id's digest, so a lookup does not compare secrets byte by byte.
  const sessions = new Map<string, Session>();
  const key = (id: string) => sha256Hex(id);
  const sweep = () => {
    const now = clock.now().getTime();
    for (const [k, s] of sessions) if (s.expiresAt.getTime() <= now) sessions.delete(k);
  };
  return {
    create(operatorId) {
      sweep();
      // Insertion order is age: this operator's sessions, oldest first.
      const mine = [...sessions].filter(([, x]) => x.operatorId === operatorId).map(([k]) => k);
      for (const k of mine.slice(0, Math.max(0, mine.length - MAX_SESSIONS_PER_OPERATOR + 1)))
        sessions.delete(k);
      const id = randomBytes(32).toString('base64url');
      const expiresAt = new Date(clock.now().getTime() + ttlMs);
      sessions.set(key(id), { expiresAt, operatorId });
      return { id, expiresAt };
    },
    check(id) {
      const session = sessions.get(key(id));
      if (session === undefined) return null;
      if (session.expiresAt.getTime() <= clock.now().getTime()) {
        sessions.delete(key(id));
        return null;
      }
      return session;
    },
    destroy(id) {
      sessions.delete(key(id));
    },
  };
}

/** The value of one cookie in a Cookie header, or null. */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (typeof header !== 'string') return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** True when the request came from this listener's own pages (see CONSOLE_HEADER). */
export function sameOriginRequest(request: FastifyRequest): boolean {
  if (request.headers[CONSOLE_HEADER] !== '1') return false;
  const origin = request.headers.origin;
  return origin === undefined || origin === `${request.protocol}://${request.headers.host}`;
}

/**
 * The session the console cookie authenticates this request with: a live session, and for
 * anything but GET and HEAD a request from the console's own pages; else null.
 */
export function sessionAuthorizes(request: FastifyRequest, sessions: SessionStore): Session | null {
  const id = cookieValue(request.headers.cookie, SESSION_COOKIE);
  const session = id ? sessions.check(id) : null;
  if (!session) return null;
  return request.method === 'GET' || request.method === 'HEAD' || sameOriginRequest(request) ? session : null;
}
