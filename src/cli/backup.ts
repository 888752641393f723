// `redeem-gateway backup --out FILE` and `redeem-gateway restore --from FILE --data-dir DIR`, for the
// embedded database (docs/reference/running.md#backups). A backup is taken from DATA_DIR when no process holds it
// (the DATA_DIR lock), else through the running server's admin API (GET /admin/v1/backup).
//
// The file: a first line naming the format, a JSON line with the data directory's secret files
// (admin token, code encryption key: the stock and job codes in the database are unreadable
// without the key), then PGlite's gzip'd tarball. It is written 0600: it holds what DATA_DIR holds.
import {
  createWriteStream,
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { request } from 'undici';
import { DataDirInUseError, lockDataDir } from '../db/data-dir-lock.ts';
import { openPglite } from '../db/database.ts';
import { ADMIN_TOKEN_FILE, ENCRYPTION_KEY_FILE, ensurePrivateDir } from '../start/secrets.ts';
import { AdminClientError, resolveTarget } from './admin-client.ts';

const MAGIC = 'REDEEM-GATEWAY-BACKUP 1';
const SECRET_FILES = [ADMIN_TOKEN_FILE, ENCRYPTION_KEY_FILE];

export class BackupError extends Error {
  override name = 'BackupError';
}

function dataDirOf(env: NodeJS.ProcessEnv, given?: string): string {
  return resolve(given ?? (env.DATA_DIR?.trim() || './data'));
}

export async function runBackup(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { out: { type: 'string' }, 'data-dir': { type: 'string' } },
  });
  if (!values.out) throw new BackupError('usage: redeem-gateway backup --out FILE [--data-dir DIR]');
  if (env.DATABASE_URL)
    throw new BackupError(
      'DATABASE_URL is set: back PostgreSQL up with its own tools (pg_dump, or base backups with WAL archiving)',
    );
  const dataDir = dataDirOf(env, values['data-dir']);
  const out = resolve(values.out);
  const tmp = `${out}.${process.pid}.tmp`;
  // The secrets first (the header), then the database's tarball streamed after them: neither
  // copy of the database is held in memory.
  const secrets: Record<string, string> = {};
  for (const file of SECRET_FILES) {
    const path = join(dataDir, file);
    if (existsSync(path)) secrets[file] = readFileSync(path, 'utf8').trim();
  }
  const header = `${MAGIC}\n${JSON.stringify({ created_at: new Date().toISOString(), secrets })}\n`;
  const write = async (tarball: Readable) => {
    writeFileSync(tmp, header, { mode: 0o600 });
    try {
      await pipeline(tarball, createWriteStream(tmp, { flags: 'a' }));
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
    return statSync(tmp).size - Buffer.byteLength(header);
  };
  let bytes: number;
  let via: string;
  try {
    // No data directory here: the server may run elsewhere (another working directory, a
    // container); its admin API still gives the database, without the secret files.
    if (!existsSync(join(dataDir, 'pglite')))
      throw new DataDirInUseError(`no embedded database in ${dataDir}`);
    const lock = lockDataDir(dataDir);
    try {
      const db = await openPglite(join(dataDir, 'pglite'));
      try {
        bytes = await write((await db.dump!()).stream);
      } finally {
        await db.close();
      }
    } finally {
      lock.release();
    }
    via = `from ${dataDir}`;
  } catch (err) {
    if (!(err instanceof DataDirInUseError)) throw err;
    // A server holds the directory: it takes the copy itself.
    bytes = await write(await backupThroughAdminApi({ ...env, DATA_DIR: dataDir }));
    via = 'through the admin API of the running server';
  }
  if (!secrets[ENCRYPTION_KEY_FILE])
    process.stderr.write(
      `warning: no ${ENCRYPTION_KEY_FILE} in ${dataDir}: this backup holds no code encryption key; keep the server's CODE_ENCRYPTION_KEY (or that file) with it\n`,
    );
  renameSync(tmp, out);
  process.stdout.write(`backup written to ${out} (${bytes} bytes of database, ${via})\n`);
}

async function backupThroughAdminApi(env: NodeJS.ProcessEnv): Promise<Readable> {
  const target = resolveTarget(env);
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(`${target.baseUrl}/admin/v1/backup`, {
      headers: { authorization: `Bearer ${target.token}` },
      headersTimeout: 600_000,
      bodyTimeout: 600_000,
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new AdminClientError(`cannot reach the admin API at ${target.baseUrl}: ${e.code ?? e.message}`);
  }
  if (res.statusCode !== 200) {
    const body = await res.body.text();
    throw new BackupError(`the admin API answered ${res.statusCode} to the backup: ${body.slice(0, 300)}`);
  }
  return res.body;
}

/** Splits a backup file into its secrets and the database tarball. */
export function readBackup(file: string): { secrets: Record<string, string>; tarball: Buffer } {
  const bytes = readFileSync(file);
  const first = bytes.indexOf(10);
  const second = first < 0 ? -1 : bytes.indexOf(10, first + 1);
  if (first < 0 || second < 0 || bytes.toString('utf8', 0, first) !== MAGIC)
    throw new BackupError(`${file} is not a redeem-gateway backup`);
  const meta = JSON.parse(bytes.toString('utf8', first + 1, second)) as { secrets?: Record<string, string> };
  return { secrets: meta.secrets ?? {}, tarball: bytes.subarray(second + 1) };
}

export async function runRestore(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { from: { type: 'string' }, 'data-dir': { type: 'string' } },
  });
  if (!values.from || !values['data-dir'])
    throw new BackupError('usage: redeem-gateway restore --from FILE --data-dir DIR');
  const dataDir = resolve(values['data-dir']);
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0)
    throw new BackupError(`${dataDir} is not empty: restore fills a new, empty data directory`);
  const { secrets, tarball } = readBackup(resolve(values.from));
  ensurePrivateDir(dataDir);
  const lock = lockDataDir(dataDir);
  try {
    ensurePrivateDir(join(dataDir, 'pglite'));
    const db = await PGlite.create(join(dataDir, 'pglite'), {
      loadDataDir: new Blob([new Uint8Array(tarball)]),
    });
    // Read back: the restored database answers (and has replayed its WAL).
    await db.query('select count(*) from customers');
    await db.close();
    for (const file of SECRET_FILES)
      if (secrets[file])
        writeFileSync(join(dataDir, file), `${secrets[file]}\n`, { mode: 0o600, flag: 'wx' });
  } finally {
    lock.release();
  }
  process.stdout.write(`restored into ${dataDir}: start the server with DATA_DIR=${dataDir}\n`);
}
