// One HTTP exchange with the upstream, told apart by what matters for a code: was the request
// written to a socket at all? A request is "sent" from the moment undici starts writing it (the
// handler's onRequestStart); an error before that is surely not sent.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dispatcher } from 'undici';

/** Largest response body read; anything longer is not a protocol answer. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** What one HTTP exchange came to. */
export type Exchange =
  | { kind: 'answer'; status: number; body: string; retryAfter?: string | undefined }
  /** Never written to a socket: the upstream cannot have seen it. */
  | { kind: 'not_sent'; reason: string; retryable: boolean }
  /** Written (maybe in part), and no complete answer came back. */
  | { kind: 'lost'; reason: string };

const errorReason = (err: unknown) => {
  const e = err as { code?: unknown; message?: unknown } | null;
  return typeof e?.code === 'string' ? e.code : typeof e?.message === 'string' ? e.message : 'error';
};

/** One POST, answered as an Exchange; never throws. */
export function exchangeOnce(
  pool: Dispatcher,
  request: { origin: string; path: string; headers: Record<string, string>; body: string },
  timeoutMs: number,
): Promise<Exchange> {
  return new Promise((resolve) => {
    let started = false;
    let settled = false;
    let controller: Dispatcher.DispatchController | null = null;
    let status = 0;
    let retryAfter: string | undefined;
    let size = 0;
    const chunks: Buffer[] = [];
    const finish = (x: Exchange) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(x);
    };
    const timer = setTimeout(() => {
      if (!started) return finish({ kind: 'not_sent', reason: 'timeout before sending', retryable: false });
      finish({ kind: 'lost', reason: 'timeout' });
      controller?.abort(new Error('upstream call timed out'));
    }, timeoutMs);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        // Given up while still connecting: abort before a byte is written.
        if (settled) return c.abort(new Error('gave up before sending'));
        started = true;
      },
      onResponseStart(_c, statusCode, responseHeaders) {
        status = statusCode;
        const ra = responseHeaders['retry-after'];
        retryAfter = Array.isArray(ra) ? ra[0] : ra;
      },
      onResponseData(c, chunk) {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          finish({ kind: 'lost', reason: 'response too large' });
          c.abort(new Error('upstream response too large'));
          return;
        }
        chunks.push(chunk);
      },
      onResponseEnd() {
        finish({ kind: 'answer', status, body: Buffer.concat(chunks).toString('utf8'), retryAfter });
      },
      onResponseError(_c, err) {
        finish(
          started
            ? { kind: 'lost', reason: errorReason(err) }
            : { kind: 'not_sent', reason: errorReason(err), retryable: true },
        );
      },
    };
    try {
      pool.dispatch({ ...request, method: 'POST' }, handler);
    } catch (err) {
      finish({ kind: 'not_sent', reason: errorReason(err), retryable: false });
    }
  });
}

/** One POST, tried again after each pause of `retryDelaysMs` only while it surely was not sent. */
export async function exchangeUnlessSent(
  pool: Dispatcher,
  request: { origin: string; path: string; headers: Record<string, string>; body: string },
  timeoutMs: number,
  retryDelaysMs: readonly number[],
): Promise<Exchange> {
  for (let attempt = 0; ; attempt++) {
    const x = await exchangeOnce(pool, request, timeoutMs);
    const delay = retryDelaysMs[attempt];
    if (x.kind !== 'not_sent' || !x.retryable || delay === undefined) return x;
    await sleep(delay);
  }
}
