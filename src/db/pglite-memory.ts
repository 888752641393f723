// The embedded database's memory (issue 22; measured in bench/README.md, "Embedded memory").
// PGlite is PostgreSQL compiled to WebAssembly, inside this process: its shared memory is a part
// of the WASM heap that PostgreSQL zeroes at start, so every MB of shared_buffers is a MB of the
// serving process's RSS from the first second. And a new data directory is made by two more WASM
// instances (initdb and a helper PGlite), some 450 MB, left for V8 to collect when it pleases.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PGlite } from '@electric-sql/pglite';

/**
 * PGlite's own start parameters, and a smaller buffer cache than PostgreSQL's 128MB: the
 * database's files stay in the operating system's page cache behind it, and the hot path's
 * working set (keys, accounts, the open jobs) is a few MB. wal_buffers follows (1/32 of it).
 */
export const PGLITE_SHARED_BUFFERS = '32MB';

export function pgliteStartParams(): string[] {
  return [...PGlite.defaultStartParams, '-c', `shared_buffers=${PGLITE_SHARED_BUFFERS}`];
}

/**
 * After a new data directory was made: two full garbage collections, so the seeding instances'
 * WASM heaps go back to the system now, not at some later collection (a small JS heap may not
 * see one for minutes). V8 exposes gc() only behind a flag: set it, take the function from a new
 * context, and unset it again (the way Jest does for --logHeapUsage).
 */
export async function releaseSeedMemory(): Promise<void> {
  let gc: (() => void) | undefined;
  try {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  } catch {
    return; // Not offered here: V8 collects it later on its own.
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  // The seeding instances are unreachable once their close() has settled: after this turn. The
  // first collection finds the WASM instances dead; their heaps are freed by the one after it.
  await new Promise((done) => setImmediate(done));
  gc();
  await new Promise((done) => setImmediate(done));
  gc();
}
