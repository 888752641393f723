// The production build: src/ compiled to dist/ with TypeScript's own compiler (relative `.ts`
// imports rewritten to `.js`), and the files the code reads at run time (migrations, console
// assets) copied beside it. `npm run build` builds always; the `redeem-gateway` command calls
// ensureBuilt(), which builds only when dist/ is missing or older than the sources, so the
// serving process runs plain JavaScript with no TypeScript loader in it (docs/reference/running.md#starting).
//
// Plain JavaScript on purpose: it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = join(ROOT, 'dist');
const SRC = join(ROOT, 'src');
const FINGERPRINT_FILE = '.source-fingerprint';
// What the build depends on besides src/.
const CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package.json'];

/** Every file under `dir`, as paths relative to ROOT, sorted. */
function filesUnder(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(relative(ROOT, path));
  }
  return out.sort();
}

/**
 * A digest of the sources' names, sizes and modification times: any edit, added or removed file
 * changes it. Cheaper than hashing contents (a start reads no source file), and a checkout that
 * touches files only causes a build too many, never one too few.
 */
export function sourceFingerprint() {
  const hash = createHash('sha256');
  for (const file of [...filesUnder(SRC), ...CONFIG_FILES]) {
    const st = statSync(join(ROOT, file));
    hash.update(`${file}\0${st.size}\0${st.mtimeMs}\n`);
  }
  return hash.digest('hex');
}

/** True when dist/ was built from the sources as they are now. */
export function isBuildFresh() {
  const file = join(DIST, FINGERPRINT_FILE);
  return existsSync(file) && readFileSync(file, 'utf8').trim() === sourceFingerprint();
}

/**
 * Compiles into a new directory and swaps it in, so a process starting meanwhile never sees a
 * half-written dist/. Throws with the compiler's output when compilation fails.
 */
export function build({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const fingerprint = sourceFingerprint();
  const tmp = `${DIST}.build-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc))
    throw new Error(
      'dist/ is missing or stale and TypeScript is not installed: run "npm ci && npm run build"',
    );
  const started = Date.now();
  const result = spawnSync(
    process.execPath,
    [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', tmp],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  );
  if (result.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`build failed:\n${result.stdout}${result.stderr}`);
  }
  // Migrations, console page and assets: read from beside the compiled modules at run time.
  cpSync(SRC, tmp, { recursive: true, filter: (src) => !src.endsWith('.ts') });
  writeFileSync(join(tmp, FINGERPRINT_FILE), `${fingerprint}\n`);
  const old = `${DIST}.old-${process.pid}`;
  if (existsSync(DIST)) renameSync(DIST, old);
  renameSync(tmp, DIST);
  rmSync(old, { recursive: true, force: true });
  log(`built dist/ in ${Date.now() - started} ms`);
}

/** Builds when dist/ is missing or stale (the `redeem-gateway` command, before it runs). */
export function ensureBuilt(opts) {
  if (!isBuildFresh()) build(opts);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    build();
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
  }
}
