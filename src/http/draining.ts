// Graceful stop of a listener (contract 12.4): counts the requests in flight and, once draining,
// answers every new request (a kept-alive connection may still send one) with the contract's
// 503 unavailable error body, Retry-After and the listener's own headers, and closes that
// connection. It sits in front of Fastify's own handler, so Fastify's closing answer (a bare 503
// without our body or headers) is never sent.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { errorBody } from '../core/errors.ts';
import { newRequestId } from '../core/ids.ts';

export interface Draining {
  /** From now on new requests get 503 unavailable and their connection closed. */
  start(): void;
  /** Requests being answered now. */
  inFlight(): number;
  /** Resolves when no request is in flight (at once if none is). */
  idle(): Promise<void>;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** Seconds a client is told to wait before retrying elsewhere or here. */
const RETRY_AFTER_SEC = 1;

export function installDraining(server: Server, headers: Record<string, string> = {}): Draining {
  let draining = false;
  const active = new Set<ServerResponse>();
  const waiters: Array<() => void> = [];
  const listeners = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (draining) return refuse(res, headers);
    active.add(res);
    res.once('close', () => {
      active.delete(res);
      if (active.size === 0) for (const w of waiters.splice(0)) w();
    });
    for (const listener of listeners) listener.call(server, req, res);
  });
  return {
    start() {
      // Answers in flight keep their connection: a client that sends its next request on it
      // gets the 503 (and the connection closed) instead of a reset it cannot tell from a crash.
      draining = true;
    },
    inFlight: () => active.size,
    idle: () => (active.size === 0 ? Promise.resolve() : new Promise<void>((r) => waiters.push(r))),
  };
}

function refuse(res: ServerResponse, headers: Record<string, string>) {
  const id = newRequestId();
  const body = JSON.stringify(errorBody('unavailable', 'the server is shutting down; retry shortly', id));
  res.shouldKeepAlive = false;
  res.writeHead(503, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'X-Request-Id': id,
    'Retry-After': String(RETRY_AFTER_SEC),
    'Cache-Control': 'no-store',
    Connection: 'close',
  });
  res.end(body);
}
