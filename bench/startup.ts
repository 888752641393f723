// Start-up time and memory of the serving process (npm run bench:startup): the command started
// as an operator would, timed from spawn until GET /v1/health answers 200, then the resident
// memory (VmRSS, /proc) of every process of its tree, and of the tree's leaf (the serving
// process). Each run uses a new embedded data directory (the first start also seeds it) and a
// second start on the same directory. `-- --tsx` measures the old way (tsx src/cli.ts serve).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.ts';

const ROOT = join(import.meta.dirname, '..');
const RUNS = 3;
const viaTsx = process.argv.includes('--tsx');
const args = viaTsx
  ? [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), 'src/cli.ts', 'serve']
  : ['bin/redeem-gateway.js', 'serve'];

function rssKb(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
  return m ? Number(m[1]) : 0;
}

function children(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ')[1] === String(pid);
      } catch {
        return false;
      }
    });
}

/** The process tree under `pid`, root first. */
function tree(pid: number): number[] {
  return [pid, ...children(pid).flatMap(tree)];
}

async function once(dataDir: string) {
  const port = await freePort();
  const adminPort = await freePort();
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/v1/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const readyMs = performance.now() - started;
  // Settle: what the process holds once serving, not a start-up peak.
  await new Promise((r) => setTimeout(r, 1000));
  const pids = tree(child.pid!);
  const leaf = pids.at(-1)!;
  const result = {
    readyMs: Math.round(readyMs),
    processes: pids.length,
    treeRssMb: Math.round(pids.reduce((n, p) => n + rssKb(p), 0) / 1024),
    servingRssMb: Math.round(rssKb(leaf) / 1024),
  };
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return result;
}

const rows: string[] = [];
for (let i = 0; i < RUNS; i++) {
  const dir = mkdtempSync(join(tmpdir(), 'rg-bench-startup-'));
  try {
    const first = await once(dir);
    const second = await once(dir);
    rows.push(
      `| ${viaTsx ? 'tsx src/cli.ts' : 'node dist (compiled)'} | ${first.readyMs} | ${second.readyMs} | ${second.processes} | ${second.servingRssMb} | ${second.treeRssMb} |`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
process.stdout.write(
  `| command | ready, new data dir (ms) | ready, existing (ms) | processes | serving RSS (MB) | tree RSS (MB) |\n|---|---|---|---|---|---|\n${rows.join('\n')}\n`,
);
