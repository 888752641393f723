// Request hooks whose usual path waits for nothing. Fastify runs an `async` hook by
// waiting for its promise: a promise and a turn of the microtask queue per hook per request, also
// when the hook returns at once, as most of ours do on most requests (a GET /v1/me passed eight).
// A hook written with quickHook returns undefined when it is done and a promise only when it had
// to wait (a database statement, a paced refusal), and Fastify is told through its callback form.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

type QuickHook = (request: FastifyRequest, reply: FastifyReply) => undefined | Promise<void>;

/** A request hook (onRequest): `fn` returns undefined when done, or a promise to wait for. */
export function quickHook(fn: QuickHook) {
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    let waiting: undefined | Promise<void>;
    try {
      waiting = fn(request, reply);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (waiting === undefined) done();
    else waiting.then(() => done(), done);
  };
}
