// One process per embedded database (docs/reference/running.md#the-data-directory-lock). PGlite is a single-user PostgreSQL: two
// processes opening one data directory each run their own copy of it over the same files, and
// one side's committed rows are lost at the next restart. The first process to start writes a
// lock file naming itself; a second one exits with one line naming the holder. A lock whose
// process has died (a crash, SIGKILL, a power cut) is taken over.
//
// Hand-written rather than `proper-lockfile`: that library tells a live holder from a dead one
// by how fresh the lock's mtime is, so a crashed holder's lock blocks a restart until it goes
// stale and the holder's process id is never known; here the pid is checked directly.
//
// A holder that died but was not reaped yet (a zombie: its parent is slow to wait, or a
// container's PID 1 never waits) still answers kill(pid, 0) with its start time unchanged, so
// the process state in /proc/<pid>/stat is read as well: `Z` (zombie) or `X` (dead) counts as
// gone. Not an flock(2) held on an open descriptor, which the kernel would drop by itself: Node
// has no flock, and the maintained binding (`fs-ext`) builds with node-gyp, which downloads
// Node's headers at install; the /proc check serves the same on Linux, the platform we run on.
import {
  mkdirSync,
  readFileSync as read,
  renameSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const LOCK_FILE = 'pglite.lock';

interface Holder {
  pid: number;
  host: string;
  /** The process's start time in clock ticks since boot (Linux): a reused pid has another. */
  started: string | null;
}

export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError';
}

export interface DataDirLock {
  readonly path: string;
  /** Removes the lock file if it is still this process's. */
  release(): void;
}

/** Directories this process holds (a second start in the same process is refused too). */
const held = new Set<string>();

/** Fields of /proc/<pid>/stat after the command name: [0] the state, [19] the start time. */
function procStat(pid: number): string[] | null {
  try {
    const stat = read(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

function me(): Holder {
  return { pid: process.pid, host: hostname(), started: procStat(process.pid)?.[19] ?? null };
}

function readHolder(path: string): Holder | null {
  try {
    const h = JSON.parse(read(path, 'utf8')) as Partial<Holder>;
    if (typeof h.pid !== 'number' || typeof h.host !== 'string') return null;
    return { pid: h.pid, host: h.host, started: typeof h.started === 'string' ? h.started : null };
  } catch {
    return null; // missing, or half-written by a process that died while writing it
  }
}

/** Whether the process a lock names is still running. One on another host cannot be checked. */
function alive(h: Holder, dir: string): boolean {
  if (h.host !== hostname()) return true;
  // This very process, but not holding the directory: a previous run that had the same pid (a
  // container's process is often pid 1 every time).
  if (h.pid === process.pid) return held.has(dir);
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  const stat = procStat(h.pid);
  // Gone between the two questions (reaped meanwhile), unless there is no /proc to ask.
  if (stat === null) return procStat(process.pid) === null;
  if (stat[0] === 'Z' || stat[0] === 'X') return false; // died, not reaped yet
  return h.started === null || stat[19] === undefined || stat[19] === h.started;
}

/**
 * Takes the lock of `dir` (the data directory) or throws DataDirInUseError naming the holder.
 * Creating the file is atomic (`wx`); a takeover of a dead holder's lock runs under a second,
 * directory lock, so two processes taking over at once cannot both win.
 */
export function lockDataDir(dir: string): DataDirLock {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, LOCK_FILE);
  const content = `${JSON.stringify(me())}\n`;
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, content, { flag: 'wx', mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 20) throw err;
    }
    // Another process may be taking a dead holder's lock over right now: give it a moment.
    if (attempt > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    const holder = readHolder(path);
    if (holder && alive(holder, dir)) throw inUse(dir, holder, path);
    takeOver(path, content, holder);
    if (readHolder(path)?.pid === process.pid && read(path, 'utf8') === content) break;
  }
  held.add(dir);
  return {
    path,
    release() {
      held.delete(dir);
      try {
        if (read(path, 'utf8') === content) unlinkSync(path);
      } catch {
        // already gone
      }
    },
  };
}

function inUse(dir: string, h: Holder, path: string): DataDirInUseError {
  const where = h.host === hostname() ? '' : ` on host ${h.host}`;
  return new DataDirInUseError(
    `DATA_DIR ${dir} is in use by process ${h.pid}${where}: its embedded database takes one process; stop that process first (or, if it is gone, remove ${path})`,
  );
}

/** Replaces a dead holder's lock with ours, unless someone else is taking it over right now. */
function takeOver(path: string, content: string, dead: Holder | null) {
  const guard = `${path}.takeover`;
  try {
    mkdirSync(guard);
  } catch {
    // Another process is taking over; a guard left by one that died is cleared after a while.
    const age = Date.now() - (statSync(guard, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (age > 10_000) rmdirSync(guard);
    return;
  }
  try {
    // Still the dead holder's lock (nobody took it over between our read and the guard)?
    const now = readHolder(path);
    if (JSON.stringify(now) !== JSON.stringify(dead)) return;
    const tmp = `${path}.${process.pid}`;
    writeFileSync(tmp, content, { mode: 0o600 });
    renameSync(tmp, path);
  } finally {
    rmdirSync(guard);
  }
}
