// The embedded database's memory (measured in bench/README.md, "Embedded memory").
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
 * What `npm start` and deploy/redeem-gateway.service put in GLIBC_TUNABLES (unless it is set):
 * glibc's malloc gives freed memory at the top of its heap back to the system above 1 MB. By
 * default it raises that threshold as it sees large blocks freed, up to 64 MB, and a new data
 * directory's seeding frees many (the files copied between the WASM instances): the first start
 * then kept 60–100 MB it no longer used (bench/README.md, "Embedded memory"). glibc reads the
 * variable when the process starts, so it cannot be set from here; the bench starts the gateway
 * with it as `npm start` does, and test/ops/process-tree.test.ts keeps the three in step.
 */
export const MALLOC_TUNABLES = 'glibc.malloc.trim_threshold=1048576';

/**
 * After a new data directory was made: two full garbage collections, so the seeding instances'
 * WASM heaps go back to the system now, not at some later collection (a small JS heap may not
 * see one for minutes). V8 exposes gc() only behind a flag: set it, take the function from a new
 * context, and unset it again (the way Jest does for --logHeapUsage).
 */
export async function releaseSeedMemory(): Promise<void> {
  await collectNow();
}

/**
 * After a backup: what it held (a chunk at a time from disk; an in-memory database's dump: the
 * files, the tarball, the gzip'd one, some three times the database) is garbage once the answer
 * has left this thread, but this
 * thread allocates little between statements, so V8 would keep them until some later collection
 * (a backup took the serving process from 309 to 1,024 MB and it stayed there).
 */
export async function releaseBackupMemory(): Promise<void> {
  await collectNow();
}

async function collectNow(): Promise<void> {
  let gc: (() => void) | undefined;
  try {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  } catch {
    return; // Not offered here: V8 collects it later on its own.
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  // What was dropped is unreachable after this turn. The first collection finds the dead
  // objects (WASM instances, array buffers); the memory behind them is freed by the one after it.
  await new Promise((done) => setImmediate(done));
  gc();
  await new Promise((done) => setImmediate(done));
  gc();
}
