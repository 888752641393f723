// Graceful stop of a listener (docs/reference/running.md#graceful-stop): counts the requests in flight and, once draining,
// answers every new request (a kept-alive connection may still send one) with the
// 503 unavailable error body (docs/reference/running.md#graceful-stop), Retry-After and the listener's own headers, and closes that
// connection. It sits in front of Fastify's own handler, so Fastify's closing answer (a bare 503
// without our body or headers) is never sent.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { errorBody } from '../core/errors.ts';
import { newRequestId } from '../core/ids.ts';

export interface Draining {
  /**
   * A stop has begun (docs/reference/running.md#draining): `GET /v1/health` answers 503 unavailable with
   * `"status": "draining"`, so a load balancer takes the process out; everything else is still
   * served until start().
   */
  announce(): void;
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
  let announced = false;
  // A count, not a Set of the responses: a Set that every request adds to and deletes from
  // rebuilds its table every few requests, and V8 leaves each former table (in the old
  // generation once the Set is) holding the responses that were in flight then, linked to its
  // successor until the next full collection; young collections take such references as live.
  // Measured in the gateway under GET /v1/me: with the Set nearly every finished response, with
  // its request, headers and reply, was copied and promoted (~1 MB survived each scavenge), with
  // the count ~0.24 MB (bench/history.md; a plain server did not show it).
  let active = 0;
  const waiters: Array<() => void> = [];
  const listeners = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (draining) return refuse(res, headers, isHealth(req));
    if (announced && isHealth(req)) return refuse(res, headers, true, false);
    active++;
    res.once('close', () => {
      active--;
      if (active === 0) for (const w of waiters.splice(0)) w();
    });
    for (const listener of listeners) listener.call(server, req, res);
  });
  return {
    announce() {
      announced = true;
    },
    start() {
      announced = true;
      // Answers in flight keep their connection: a client that sends its next request on it
      // gets the 503 (and the connection closed) instead of a reset it cannot tell from a crash.
      draining = true;
    },
    inFlight: () => active,
    idle: () => (active === 0 ? Promise.resolve() : new Promise<void>((r) => waiters.push(r))),
  };
}

/** The public health check, which load balancers poll (GET or HEAD, any query). */
function isHealth(req: IncomingMessage): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && /^\/v1\/health(\?|$)/.test(req.url ?? '');
}

function refuse(res: ServerResponse, headers: Record<string, string>, health = false, close = true) {
  const id = newRequestId();
  const body = JSON.stringify(
    errorBody(
      'unavailable',
      'the server is shutting down; retry shortly',
      id,
      health ? { status: 'draining' } : {},
    ),
  );
  // While only announced, the health checker's connection may stay: the process still serves.
  res.shouldKeepAlive = !close;
  res.writeHead(503, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'X-Request-Id': id,
    'Retry-After': String(RETRY_AFTER_SEC),
    'Cache-Control': 'no-store',
    ...(close ? { Connection: 'close' } : {}),
  });
  res.end(body);
}

/** Tells load balancers the process is going (health 503 draining) and waits `delayMs`. */
export async function announceDraining(gates: readonly Draining[], delayMs: number): Promise<void> {
  for (const gate of gates) gate.announce();
  if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
}
