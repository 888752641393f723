// Answers given before a route has read the request's body, made to read like every other answer.
// - A request without Host: Node's HTTP server would refuse it with a bare 400 of its own (no
//   body, no request id); the listeners take the check over and answer the error body.
// - A refusal that comes before the body (401, 404, 405, 421, 429 …) waits for that body, so a
//   body that never arrives is a 408 request_timeout whatever the key, as it is with a good key:
//   otherwise the client reads a 401, its connection then hangs until the request timeout, and
//   the 408 that Node gives then has no answer left to take. A body declared (or found) larger
//   than the listener's limit is not waited for: the refusal is sent at once and the connection
//   closed, so refusing still costs nothing for a huge body.
// - A request its client abandoned (the connection closed under its body) is logged as that,
//   not as a database failure: its socket error looks like a lost database connection.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';

/** Node's server option that hands a request without Host to the listener (checked below). */
export const NODE_HOST_CHECK_OFF = { requireHostHeader: false } as const;

export function installEarlyAnswers(app: FastifyInstance, bodyLimit: number): void {
  app.decorateRequest('bodyReadStarted', false);
  app.addHook('onRequest', (request, _reply, done) => {
    // HTTP/1.1 requires Host (RFC 9112 section 3.2); HTTP/1.0 has none to require.
    const raw = request.raw;
    if (raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1 && raw.headers.host === undefined) {
      done(new ApiError('bad_request', 'a Host header is required'));
      return;
    }
    done();
  });
  app.addHook('preParsing', (request, _reply, payload, done) => {
    request.bodyReadStarted = true;
    done(null, payload);
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const raw = request.raw;
    if (request.bodyReadStarted || raw.complete || !hasBody(raw)) return done(null, payload);
    const declared = Number(raw.headers['content-length'] ?? 0);
    if (declared > bodyLimit) {
      reply.header('Connection', 'close');
      return done(null, payload);
    }
    // Read and dropped; Node's request timeout still bounds the wait (its 408 ends it).
    let seen = 0;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      raw.off('data', onData);
      raw.off('end', finish);
      raw.off('close', finish);
      done(null, payload);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > bodyLimit) {
        reply.header('Connection', 'close');
        finish();
      }
    };
    raw.on('data', onData);
    raw.on('end', finish);
    raw.on('close', finish);
    raw.resume();
  });
}

const hasBody = (raw: IncomingMessage) =>
  raw.headers['transfer-encoding'] !== undefined || Number(raw.headers['content-length'] ?? 0) > 0;

/** True when `error` is the request's own stream failing because its client went away. */
export function isClientAbort(error: unknown, request: FastifyRequest): boolean {
  const raw = request.raw;
  if (raw.errored !== null && raw.errored === error) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ECONNRESET' && (raw.readableAborted || raw.destroyed) && !raw.complete;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The content parser has started on the body (a refusal after that does not wait for it). */
    bodyReadStarted: boolean;
  }
}
