// The public API's request log hooks: every answer of the public listener with status 400 or
// above (every path: /v1/*, /bot/updates, an unknown path's 404) is handed to the writer
// (core/requests/log-writer.ts) once sent, with what the request was and why it failed, and
// nothing secret it carried: no body, no key (its prefix and id, which name it without opening
// it), no query string, no code (the path keeps only what our routes name). A redeem adds its
// player id, its job and its codes' outcomes; every error adds its body's message.
// Answers Node gives before Fastify sees the request (a 408, headers too large) are not logged.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type RequestLogWriter, startRequestLogWriter } from '../core/requests/log-writer.ts';
import { loggedPath } from '../logged-path.ts';
import type { ServerContext } from './context.ts';

const PLAYER = /^\d{5,20}$/;
const ERROR_CODE = /^[a-z_]{1,64}$/;

/** What the request log keeps of an error or result body. */
interface LoggedBody {
  errorCode: string | null;
  message: string | null;
  jobId: string | null;
  outcomes: Record<string, number> | null;
}

/**
 * A message as logged: a path it names (a 404's) as a logged path, caller text it quotes (a field
 * name, a category) by its last 4 characters, a key by its prefix; at most 300 characters.
 */
export function loggedMessage(message: string): string {
  return message
    .slice(0, 300)
    .replace(/\/[^\s"]*/g, (path) => loggedPath(path))
    .replace(/rk_(live|test)_[A-Za-z0-9]*/g, 'rk_$1_…')
    .replace(/"([^"]{5,})"/g, (_, quoted: string) => `"…${quoted.slice(-4)}"`);
}

/** The fields of a JSON answer the log keeps; nothing when it is not one. */
function readBody(payload: string): LoggedBody {
  const none = { errorCode: null, message: null, jobId: null, outcomes: null };
  if (payload.length > 100_000 || payload[0] !== '{') return none;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    return none;
  }
  const summary = body.summary;
  let outcomes: Record<string, number> | null = null;
  if (typeof summary === 'object' && summary !== null) {
    outcomes = {};
    for (const [status, n] of Object.entries(summary))
      if (typeof n === 'number' && n > 0 && ERROR_CODE.test(status)) outcomes[status] = n;
  }
  return {
    errorCode:
      typeof body.error_code === 'string' && ERROR_CODE.test(body.error_code) ? body.error_code : null,
    message: typeof body.message === 'string' ? loggedMessage(body.message) : null,
    jobId: typeof body.job_id === 'string' ? body.job_id : null,
    outcomes,
  };
}

export function installRequestLog(app: FastifyInstance, ctx: ServerContext): RequestLogWriter {
  const writer = startRequestLogWriter({
    db: ctx.db,
    logger: ctx.logger,
    caps: {
      perCustomer: ctx.config.REQUEST_LOG_DAILY_CAP,
      unidentified: ctx.config.REQUEST_LOG_UNIDENTIFIED_DAILY_CAP,
    },
    counters: ctx.metrics.requestLog,
    flushMs: ctx.config.REQUEST_LOG_FLUSH_MS,
  });
  app.decorateRequest('loggedBody', null);
  app.decorateRequest('loggedJobId', null);
  // What the error or result body says, read from the payload as it is sent (every such body is
  // a string here).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode >= 400 && typeof payload === 'string') request.loggedBody = readBody(payload);
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (reply.statusCode >= 400) writer.record(entryOf(request, reply.statusCode, reply.elapsedTime, ctx));
    done();
  });
  app.addHook('onClose', () => writer.stop());
  app.decorate('requestLog', writer);
  return writer;
}

function entryOf(request: FastifyRequest, status: number, elapsedMs: number, ctx: ServerContext) {
  const key = request.auth ?? request.cachedKey;
  const body = request.loggedBody;
  const sent = request.body as { player_id?: unknown } | null | undefined;
  const redeem = request.routeOptions.url === '/v1/redeem';
  const playerId =
    redeem && typeof sent?.player_id === 'string' && PLAYER.test(sent.player_id) ? sent.player_id : null;
  return {
    at: ctx.clock.now(),
    customerId: key ? key.customerId : null,
    keyPrefix: key ? key.keyPrefix : null,
    mode: key ? key.mode : null,
    method: request.method.slice(0, 16),
    path: loggedPath(request.originalUrl ?? request.url),
    status,
    errorCode: body?.errorCode ?? null,
    requestId: request.id,
    // Undefined when the client's socket was gone before the answer was logged.
    ip: request.ip ?? 'unknown',
    durationMs: Math.max(0, Math.round(elapsedMs)),
    keyId: key ? key.id : null,
    playerId,
    jobId: request.loggedJobId ?? body?.jobId ?? null,
    outcomes: body?.outcomes ?? null,
    message: body?.message ?? null,
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The public app's request log writer (tests flush it). */
    requestLog: RequestLogWriter;
  }
  interface FastifyRequest {
    /** What the error or result body said, kept for the request log. */
    loggedBody: LoggedBody | null;
    /** The job a redeem made, kept for the request log (a sync answer's body does not name it). */
    loggedJobId: string | null;
  }
}
