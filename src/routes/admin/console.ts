// The operator's web console at /console on the admin listener: the page, its assets (our ES
// modules in src/console/assets, uPlot from node_modules; no CDN, no build step) and the session
// endpoints. Everything the console shows or does goes through the admin API with the session
// cookie (src/console/session.ts), so it can do exactly what the CLI can.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { cookieValue, SESSION_COOKIE, type SessionStore, sameOriginRequest } from '../../console/session.ts';
import { isoUtc } from '../../core/clock.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { AUDIT_ACTIONS } from '../../core/operators/audit.ts';
import { EVENT_STATES } from '../../core/vocabulary.ts';
import { parseBody } from './validation.ts';

const CONSOLE_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../console');
const UPLOT_DIST = dirname(createRequire(import.meta.url).resolve('uplot'));

// Scripts, styles, images and requests only from this listener; no inline script or style, no
// framing, no plugins. uPlot sizes its elements through the CSSOM, which style-src does not block.
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
};

interface Asset {
  body: Buffer;
  type: string;
}

/** Every file the console serves, read once at start: nothing else on disk is reachable. */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const add = (url: string, file: string) => {
    const ext = file.slice(file.lastIndexOf('.'));
    assets.set(url, { body: readFileSync(file), type: TYPES[ext]! });
  };
  add('/console', join(CONSOLE_DIR, 'index.html'));
  for (const name of readdirSync(join(CONSOLE_DIR, 'assets'))) {
    if (/^[a-z0-9-]+\.(js|css)$/.test(name))
      add(`/console/assets/${name}`, join(CONSOLE_DIR, 'assets', name));
  }
  // The console's copy of the server's vocabularies, made from the one list each (never kept twice).
  assets.set('/console/assets/vocabulary.js', {
    body: Buffer.from(
      `export const AUDIT_ACTIONS = ${JSON.stringify(AUDIT_ACTIONS)};\n` +
        `export const EVENT_STATES = ${JSON.stringify(EVENT_STATES)};\n`,
    ),
    type: TYPES['.js']!,
  });
  add('/console/vendor/uplot.js', join(UPLOT_DIST, 'uPlot.esm.js'));
  add('/console/vendor/uplot.css', join(UPLOT_DIST, 'uPlot.min.css'));
  return assets;
}

function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('Content-Security-Policy', CONSOLE_CSP)
    .header('X-Content-Type-Options', 'nosniff')
    .header('X-Frame-Options', 'DENY')
    .header('Referrer-Policy', 'no-referrer')
    .header('Cache-Control', 'no-store');
}

// Secure whenever the request came over TLS, directly or through a trusted proxy's
// X-Forwarded-Proto (the admin app believes it only from TRUST_PROXY; docs/reference/operators-and-audit.md#the-admin-door).
function sessionCookie(request: FastifyRequest, value: string, maxAgeSec: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSec}${secure}`;
}

const signInBody = z.strictObject({ token: z.string().min(1).max(1000) });

export function registerConsoleRoutes(app: FastifyInstance, ctx: AppContext, sessions: SessionStore) {
  const assets = loadAssets();
  const open = { consolePublic: true };

  const serve = (url: string) => (_request: FastifyRequest, reply: FastifyReply) => {
    const asset = assets.get(url)!;
    return securityHeaders(reply).type(asset.type).send(asset.body);
  };
  app.get('/console', { config: open }, serve('/console'));
  app.get('/console/', { config: open }, serve('/console'));
  for (const url of assets.keys()) if (url !== '/console') app.get(url, { config: open }, serve(url));

  // Signing in and out also need the console's header: another site cannot sign the browser in
  // with its own token (login CSRF) or out.
  const requireConsoleHeader = (request: FastifyRequest) => {
    if (!sameOriginRequest(request))
      throw new ApiError('bad_request', 'console requests need the X-Console header from the same origin');
  };

  app.post('/console/session', { config: open }, async (request, reply) => {
    requireConsoleHeader(request);
    const { token } = parseBody(signInBody, request.body);
    const operator = await app.adminDoor.operatorOfToken(token);
    if (!operator) {
      app.adminDoor.throttle.fail(request.ip);
      request.log.warn({ ip: request.ip }, 'console sign-in with a wrong token');
      throw new ApiError('unauthorized', 'wrong admin token');
    }
    const session = sessions.create(operator.operatorId);
    const maxAge = Math.round((session.expiresAt.getTime() - ctx.clock.now().getTime()) / 1000);
    securityHeaders(reply).header('Set-Cookie', sessionCookie(request, session.id, maxAge));
    return {
      ok: true,
      request_id: request.id,
      signed_in: true,
      expires_at: isoUtc(session.expiresAt),
      operator: { name: operator.name, role: operator.role },
    };
  });

  app.get('/console/session', { config: open }, async (request, reply) => {
    const id = cookieValue(request.headers.cookie, SESSION_COOKIE);
    const session = id ? sessions.check(id) : null;
    // A revoked operator's session is over (the door refuses it too).
    const operator = session ? await app.adminDoor.operatorOfSession(session.operatorId) : null;
    securityHeaders(reply);
    return {
      ok: true,
      request_id: request.id,
      signed_in: operator !== null,
      expires_at: session && operator ? isoUtc(session.expiresAt) : null,
      operator: operator ? { name: operator.name, role: operator.role } : null,
    };
  });

  app.delete('/console/session', { config: open }, async (request, reply) => {
    requireConsoleHeader(request);
    const id = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (id) sessions.destroy(id);
    securityHeaders(reply).header('Set-Cookie', sessionCookie(request, '', 0));
    return { ok: true, request_id: request.id, signed_in: false };
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Console pages, assets and sign-in: answered without the admin token. */
    consolePublic?: boolean;
  }
}
