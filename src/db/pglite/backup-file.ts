// An online backup of the embedded database without holding it in memory
// (docs/reference/running.md#backups). PGlite's own `dumpDataDir` reads every file of the data
// directory into memory, builds the tarball as one more array, copies it into a Blob and, gzip'd,
// into another: a backup peaked at about 15 times its gzip'd size in the serving process, and
// PGlite 0.5 offers no streaming form of it (node_modules/@electric-sql/pglite, src/fs/tarUtils.ts:
// `createTarball` → tinytar's `tar(files)`, one buffer).
//
// On Node the data directory is a real directory (PGlite's NodeFS mounts it as PGDATA), so the
// copy is made on disk instead: under PGlite's lock the files are copied to a sibling directory
// (the lock is what made `dumpDataDir` consistent: nothing writes while it is held), the lock is
// released, and the copy is written as the same gzip'd tarball `dumpDataDir` gives (entries named
// `/base/1/1259` as PGlite names them, so `loadDataDir` restores it) to a file, 64 KB at a time.
// The serving process holds one chunk; the disk holds the copy until the tarball is written and
// the tarball until it has been sent.
import { randomBytes } from 'node:crypto';
import { constants, cpSync, createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

const RECORD = 512;
const CHUNK = 64 * 1024;
/** The prefix of a backup's working directory beside the data directory. */
const WORK_PREFIX = '.pglite-backup-';

/** A backup written to disk: its gzip'd tarball, and the directory to remove once it is sent. */
export interface BackupFile {
  /** The working directory holding `file` (removed with it). */
  dir: string;
  file: string;
  bytes: number;
}

/**
 * Copies the data directory into `<working directory>/files` and returns the working directory:
 * a new one beside the data directory (same filesystem: the copy is cheap and never lands in a
 * memory-backed /tmp), after removing any a stopped process left behind. Call it under PGlite's lock.
 */
export async function copyDataDir(dataDir: string): Promise<string> {
  const parent = dirname(dataDir);
  const prefix = `${WORK_PREFIX}${basename(dataDir)}-`;
  for (const entry of await readdir(parent))
    if (entry.startsWith(prefix)) await rm(join(parent, entry), { recursive: true, force: true });
  const dir = join(parent, `${prefix}${randomBytes(6).toString('hex')}`);
  try {
    // Synchronous on purpose: the lock is held, nothing else can run on this thread's database
    // meanwhile, and one call per file without a trip through the thread pool is what keeps the
    // lock short (the async copy of a new database's ~1,000 files held it twice as long as
    // dumpDataDir did). A clone where the filesystem can (btrfs, XFS), else a copy.
    cpSync(dataDir, join(dir, 'files'), {
      recursive: true,
      errorOnExist: true,
      mode: constants.COPYFILE_FICLONE,
    });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw new Error('copying the data directory for a backup failed', { cause: err });
  }
  return dir;
}

/** Writes the copy in `dir/files` as `dir/backup.tar.gz` and removes the copy. */
export async function writeBackupFile(dir: string): Promise<BackupFile> {
  const files = join(dir, 'files');
  const file = join(dir, 'backup.tar.gz');
  try {
    await pipeline(
      Readable.from(inBlocks(tarEntries(files))),
      createGzip(),
      createWriteStream(file, { mode: 0o600 }),
    );
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw new Error('writing the backup failed', { cause: err });
  }
  await rm(files, { recursive: true, force: true });
  return { dir, file, bytes: (await stat(file)).size };
}

/** A backup made in memory (an in-memory database, which has no directory): written to a file too. */
export async function backupFileOf(gzipped: Uint8Array): Promise<BackupFile> {
  const dir = await mkdtemp(join(tmpdir(), WORK_PREFIX));
  const file = join(dir, 'backup.tar.gz');
  await writeFile(file, gzipped, { mode: 0o600 });
  return { dir, file, bytes: gzipped.byteLength };
}

/** The backup's bytes as a stream; its directory is removed when the stream closes (read or not). */
export function readBackupFile(b: BackupFile): Readable {
  const stream = createReadStream(b.file, { highWaterMark: CHUNK });
  stream.once('close', () => void rm(b.dir, { recursive: true, force: true }).catch(() => undefined));
  return stream;
}

/**
 * The chunks gathered into blocks of at least CHUNK bytes: a data directory is mostly small files,
 * and gzip given a 512-byte header at a time spends its time on the hand-offs, not on compressing.
 */
async function* inBlocks(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let held: Buffer[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    held.push(chunk);
    size += chunk.length;
    if (size >= CHUNK) {
      yield Buffer.concat(held, size);
      held = [];
      size = 0;
    }
  }
  if (size) yield Buffer.concat(held, size);
}

/**
 * A ustar archive of `root`, one chunk at a time: every directory before its entries, names
 * relative to `root` with a leading `/` (as PGlite's createTarball names them).
 */
export async function* tarEntries(root: string): AsyncGenerator<Buffer> {
  async function* walk(path: string): AsyncGenerator<Buffer> {
    for (const entry of await readdir(path)) {
      const full = join(path, entry);
      const name = full.slice(root.length);
      const s = await stat(full);
      if (s.isDirectory()) {
        yield header(name, s.mode, 0, s.mtimeMs, 5);
        yield* walk(full);
      } else if (s.isFile()) {
        yield header(name, s.mode, s.size, s.mtimeMs, 0);
        yield* content(full, s.size);
      }
    }
  }
  yield* walk(root);
  yield Buffer.alloc(RECORD * 2);
}

/** A file's bytes in chunks, exactly `size` of them (it does not change: it is a copy), padded. */
async function* content(path: string, size: number): AsyncGenerator<Buffer> {
  const pad = (RECORD - (size % RECORD)) % RECORD;
  if (size <= CHUNK) {
    const whole = await readFile(path);
    if (whole.length !== size) throw new Error(`${path} has ${whole.length} bytes, not ${size}`);
    yield pad ? Buffer.concat([whole, Buffer.alloc(pad)]) : whole;
    return;
  }
  const handle = await open(path, 'r');
  try {
    let done = 0;
    while (done < size) {
      const buffer = Buffer.alloc(Math.min(CHUNK, size - done));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, done);
      if (bytesRead === 0) throw new Error(`${path} ended at ${done} of ${size} bytes`);
      done += bytesRead;
      yield bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
    }
  } finally {
    await handle.close();
  }
  if (pad) yield Buffer.alloc(pad);
}

/** One ustar header: octal numbers NUL-terminated, the checksum over the header with its field as spaces. */
export function header(name: string, mode: number, size: number, mtimeMs: number, type: 0 | 5): Buffer {
  const h = Buffer.alloc(RECORD);
  if (Buffer.byteLength(name) > 100) throw new Error(`a backup entry's name is over 100 bytes: ${name}`);
  if (size >= 8 ** 11) throw new Error(`a backup entry is over 8 GiB: ${name}`);
  const octal = (n: number, width: number, at: number) =>
    h.write(
      `${Math.floor(n)
        .toString(8)
        .padStart(width - 1, '0')}\0`,
      at,
      'latin1',
    );
  h.write(name, 0, 'utf8');
  octal(mode & 0o777, 8, 100);
  octal(0, 8, 108);
  octal(0, 8, 116);
  octal(size, 12, 124);
  octal(mtimeMs / 1000, 12, 136);
  h.write('        ', 148, 'latin1');
  h.write(String(type), 156, 'latin1');
  h.write('ustar\u000000', 257, 'latin1');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return h;
}
