// The serving thread's end of the embedded database's own thread (src/db/pglite/worker.ts):
// requests and replies by number, a reference on the worker only while a reply is awaited (an
// idle database never keeps the process alive, as PGlite on this thread did not), and every
// awaited reply rejected if the thread dies.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { WireValue } from '../wire-values.ts';

export interface PgliteWorkerData {
  dataDir: string | undefined;
}

export type PgliteRequest = { id: number } & (
  | { op: 'query'; sql: string; values: WireValue[]; name: string | undefined; tx: number | undefined }
  | { op: 'begin'; tx: number }
  | { op: 'end'; tx: number; commit: boolean }
  | { op: 'exec'; sql: string }
  | { op: 'dump' }
  | { op: 'close' }
);

/** Request 0's reply is the thread's start: 'ready', or the error PGlite failed with. */
export type PgliteReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: Record<string, unknown> };

interface Waiter {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

type Op = PgliteRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

export interface PgliteThread {
  call<T>(op: Op): Promise<T>;
  /** Waits for the thread to finish after `close` (its PGlite closed). */
  stop(): Promise<void>;
}

export async function startPgliteThread(dataDir: string | undefined): Promise<PgliteThread> {
  const worker = newWorker({ dataDir });
  // The awaited replies, by request number: the number is a slot of this array, used again once
  // its reply came, not a key of a Map that every statement adds to and deletes from. V8 keeps
  // such a Map's former tables, with the waiters they held, until a full collection, so every
  // finished statement's caller (its request and reply) would outlive young collections
  // (src/http/draining.ts says more).
  const waiting: (Waiter | undefined)[] = [];
  const free: number[] = [];
  let awaited = 0;
  let dead: Error | undefined;

  const awaitReply = (w: Waiter): number => {
    const id = free.pop() ?? waiting.length;
    waiting[id] = w;
    awaited++;
    return id;
  };
  const failAll = (err: Error) => {
    dead ??= err;
    for (const w of waiting) w?.reject(err);
    waiting.length = 0;
    free.length = 0;
    awaited = 0;
  };
  // Request 0: the thread's start.
  const ready = new Promise<void>((resolve, reject) => {
    awaitReply({ resolve: () => resolve(), reject });
  });
  worker.on('message', (reply: PgliteReply) => {
    const w = waiting[reply.id];
    if (!w) return;
    waiting[reply.id] = undefined;
    // Slot 0 stays the start's: a late reply 0 (the thread's own failure) never meets a statement.
    if (reply.id !== 0) free.push(reply.id);
    if (--awaited === 0) worker.unref();
    if (reply.ok) w.resolve(reply.value);
    else w.reject(Object.assign(new Error(String(reply.error.message)), reply.error));
  });
  let serving = false;
  let stopping = false;
  worker.on('error', (err) => failAll(err));
  worker.on('exit', (code) => {
    const err = new Error(`the embedded database's thread exited (code ${code})`);
    failAll(err);
    // A database thread that died under a running service leaves it answering nothing: end the
    // process, as an uncaught error in PGlite on this thread did, so its supervisor restarts it.
    if (serving && !stopping)
      setImmediate(() => {
        throw err;
      });
  });
  await ready;
  serving = true;
  worker.unref();

  return {
    call<T>(op: Op): Promise<T> {
      if (dead) return Promise.reject(dead);
      return new Promise<T>((resolve, reject) => {
        if (awaited === 0) worker.ref();
        const id = awaitReply({ resolve: resolve as (v: unknown) => void, reject });
        worker.postMessage({ ...op, id } as PgliteRequest);
      });
    },
    async stop() {
      stopping = true;
      await worker.terminate();
    },
  };
}

/**
 * The worker from its compiled JavaScript beside this file; when this file runs as TypeScript
 * (the tests and benches, under tsx or vitest), from its TypeScript through tsx's loader, which
 * a worker thread does not inherit.
 */
function newWorker(data: PgliteWorkerData): Worker {
  const here = import.meta.url;
  // The thread's own young generation capped (V8's default lets it grow to ~48 MB): its garbage
  // is small and short-lived (messages, rows), and the cap kept 20–40 MB of RSS off the serving
  // process after a redeem load at the same rate (bench/history.md, "the embedded
  // database's statements, and its own thread", 2026-11-25).
  const options = { workerData: data, resourceLimits: { maxYoungGenerationSizeMb: 16 } };
  if (!here.endsWith('.ts')) return new Worker(new URL('./worker.js', here), options);
  // tsx's ESM entry, as its package declares it (import.meta.resolve is not offered under vitest).
  const require = createRequire(here);
  const pkg = require('tsx/package.json') as { exports: Record<string, { import: { default: string } }> };
  const tsx = pathToFileURL(
    join(dirname(require.resolve('tsx/package.json')), pkg.exports['./esm/api']!.import.default),
  ).href;
  const entry = new URL('./worker.ts', here).href;
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(boot, { ...options, eval: true });
}
