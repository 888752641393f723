// The admin listener's door (docs/reference/operators-and-audit.md#operators-and-roles, docs/reference/operators-and-audit.md#the-admin-door), in the order a request meets it: its Host
// must be one of the listener's own names (421: a DNS-rebinding page cannot reach the console),
// its address must not be locked out by failed authentications (429), then the operator is
// identified by a bearer token (ADMIN_TOKEN is `root`, any other operator's `adm_…` token) or a
// console session (401), and a `viewer` may only read (403).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { type SessionStore, sessionAuthorizes } from '../console/session.ts';
import { ApiError } from '../core/errors.ts';
import { type Actor, type Operator, ROOT_OPERATOR } from '../core/operators/actor.ts';
import { findActiveOperator, findOperatorByToken } from '../core/operators/operators.ts';
import { type AdminThrottle, createAdminThrottle } from './admin-throttle.ts';
import { bearerToken, sameSecret } from './auth.ts';
import type { ServerContext } from './context.ts';

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/** Splits a Host header into its name (lower case, IPv6 in brackets) and port (null when absent). */
export function splitHost(host: string): { name: string; port: number | null } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(host.trim());
  if (!m) return null;
  return { name: m[1]!.toLowerCase(), port: m[2] === undefined ? null : Number(m[2]) };
}

/**
 * Whether the Host names this listener: a loopback name or ADMIN_HOST with the listener's port
 * (when the Host carries one and the request came over a socket), or an ADMIN_HOSTNAMES entry, with or
 * without a port (a TLS proxy in front may use its own).
 */
export function hostAllowed(
  host: string | undefined,
  config: Pick<Config, 'ADMIN_HOST' | 'ADMIN_HOSTNAMES'>,
  listenPort: number | null,
): boolean {
  if (!host) return false;
  const parts = splitHost(host);
  if (!parts) return false;
  if (config.ADMIN_HOSTNAMES.some((h) => h === host.trim().toLowerCase() || h === parts.name)) return true;
  const adminHost = config.ADMIN_HOST.includes(':')
    ? `[${config.ADMIN_HOST}]`
    : config.ADMIN_HOST.toLowerCase();
  if (!LOOPBACK_NAMES.includes(parts.name) && parts.name !== adminHost) return false;
  return parts.port === null || listenPort === null || parts.port === listenPort;
}

export interface AdminDoor {
  sessions: SessionStore;
  throttle: AdminThrottle;
  /** The operator a token names (root for ADMIN_TOKEN), or null. */
  operatorOfToken(token: string): Promise<Operator | null>;
  /** The operator of a console session, while it is not revoked. */
  operatorOfSession(operatorId: string): Promise<Operator | null>;
}

export function installAdminDoor(
  app: FastifyInstance,
  ctx: ServerContext,
  sessions: SessionStore,
): AdminDoor {
  const throttle = createAdminThrottle(ctx.clock, ctx.config.ADMIN_LOCKOUT_AFTER);
  const door: AdminDoor = {
    sessions,
    throttle,
    async operatorOfToken(token) {
      if (sameSecret(token, ctx.adminToken)) return ROOT_OPERATOR;
      return findOperatorByToken(ctx.db, token);
    },
    operatorOfSession: (operatorId) => findActiveOperator(ctx.db, operatorId),
  };
  app.decorate('adminDoor', door);
  app.decorateRequest('operator', null);

  app.addHook('onRequest', async (request) => {
    // The port the connection arrived on (none for app.inject, which has no socket of its own).
    const port = request.socket?.localPort;
    if (!hostAllowed(request.headers.host, ctx.config, typeof port === 'number' ? port : null))
      throw new ApiError('misdirected_request', 'this listener does not answer for that Host');
    const wait = throttle.lockedFor(request.ip);
    if (wait > 0) {
      request.log.warn({ ip: request.ip }, 'admin request refused: address locked out');
      throw new ApiError(
        'rate_limited',
        `too many failed admin authentications from this address; try again in ${wait} s`,
        { retry_after_sec: wait },
        { 'Retry-After': String(wait) },
      );
    }
    if (request.is404 || (request.routeOptions.config as { methodNotAllowed?: boolean }).methodNotAllowed)
      return;
    if (request.routeOptions.config.consolePublic) return;
    request.operator = await identify(request, door);
    if (request.operator.role === 'admin') return;
    // A read a viewer may not make (docs/reference/operators-and-audit.md#operators-and-roles: the backup holds every secret of the database).
    const adminOnly = (request.routeOptions.config as { adminOnly?: string }).adminOnly;
    if (adminOnly)
      throw new ApiError(
        'forbidden',
        `the operator ${request.operator.name} is a viewer and may not ${adminOnly}`,
      );
    if (request.method !== 'GET' && request.method !== 'HEAD')
      throw new ApiError('forbidden', `the operator ${request.operator.name} is a viewer and may only read`);
  });
  return door;
}

async function identify(request: FastifyRequest, door: AdminDoor): Promise<Operator> {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const token = bearerToken(header);
    const operator = token ? await door.operatorOfToken(token) : null;
    if (operator) return operator;
    door.throttle.fail(request.ip);
    request.log.warn({ ip: request.ip }, 'admin request with a wrong token');
    throw new ApiError('unauthorized', 'missing or wrong admin token');
  }
  const session = sessionAuthorizes(request, door.sessions);
  const operator = session ? await door.operatorOfSession(session.operatorId) : null;
  if (!operator) throw new ApiError('unauthorized', 'missing or wrong admin token');
  return operator;
}

/** The operator of this request as the actor of the change it makes (set by the door). */
export function actorOf(request: FastifyRequest): Actor {
  const operator = request.operator;
  if (!operator) throw new Error('actorOf: the request has no operator (a console-public route?)');
  return { ...operator, requestId: request.id, ip: request.ip };
}

declare module 'fastify' {
  interface FastifyInstance {
    adminDoor: AdminDoor;
  }
  interface FastifyRequest {
    /** The operator that authenticated this admin request (null before the door, and on public routes). */
    operator: Operator | null;
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A read only an `admin` may make; a viewer's 403 says it may not <this>. */
    adminOnly?: string;
  }
}
