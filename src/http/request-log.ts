// The public API's request log hooks (issue 36): every answer of the public listener with status
// 400 or above (every path: /v1/*, /bot/updates, an unknown path's 404) is handed to the writer
// (core/requests/log-writer.ts) once sent, with what the request was and nothing it carried: no
// body, no key (its prefix, which every answer of that key shows anyway), no query string.
// Answers Node gives before Fastify sees the request (a 408, headers too large) are not logged.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type RequestLogWriter, startRequestLogWriter } from '../core/requests/log-writer.ts';
import type { ServerContext } from './context.ts';

const ERROR_CODE = /"error_code":"([a-z_]{1,64})"/;
const KEY_SHAPED = /rk_(live|test)_[A-Za-z0-9]+/g;
const MAX_PATH = 200;

/** The path without its query string, anything shaped like a key masked, at most 200 characters. */
export function loggedPath(url: string): string {
  const path = url.split(/[?#]/, 1)[0] ?? '';
  return path.replace(KEY_SHAPED, 'rk_$1_…').slice(0, MAX_PATH);
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
  app.decorateRequest('loggedErrorCode', null);
  // The error body's code, read from the payload as it is sent (every error body is a string here).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode >= 400 && typeof payload === 'string')
      request.loggedErrorCode = ERROR_CODE.exec(payload)?.[1] ?? null;
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
  return {
    at: ctx.clock.now(),
    customerId: key ? key.customerId : null,
    keyPrefix: key ? key.keyPrefix : null,
    mode: key ? key.mode : null,
    method: request.method.slice(0, 16),
    path: loggedPath(request.originalUrl ?? request.url),
    status,
    errorCode: request.loggedErrorCode,
    requestId: request.id,
    ip: request.ip,
    durationMs: Math.max(0, Math.round(elapsedMs)),
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The public app's request log writer (tests flush it). */
    requestLog: RequestLogWriter;
  }
  interface FastifyRequest {
    /** The error body's error_code, kept for the request log. */
    loggedErrorCode: string | null;
  }
}
