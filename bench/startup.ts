// Start-up time and memory of the serving process (npm run bench:startup): the command started
// as an operator would, timed from spawn until GET /v1/health answers 200, then the resident
// memory (VmRSS, /proc) of every process of its tree, and of the tree's leaf (the serving
// process). Each run uses a new embedded data directory (the first start also seeds it) and a
// second start on the same directory. The first start then takes a redeem load:
// customers and test keys made through the admin API (its token read from DATA_DIR, as an
// operator would), then a synchronous one-code POST /v1/redeem (sandbox activator) from
// autocannon for `--load=S` seconds (10; 0: none), and its RSS after the load and its peak
// (VmHWM). `-- --tsx` measures the old way (tsx src/cli.ts serve).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createFixtures } from './fixtures.ts';
import { gatewayEnv } from './gateway.ts';
import { freePort, HOST } from './processes.ts';

const ROOT = join(import.meta.dirname, '..');
const { values: cli } = parseArgs({
  options: {
    tsx: { type: 'boolean', default: false },
    runs: { type: 'string', default: '3' },
    load: { type: 'string', default: '10' },
    connections: { type: 'string', default: '16' },
  },
});
const RUNS = Number(cli.runs);
const LOAD_SECONDS = Number(cli.load);
const args = cli.tsx
  ? [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), 'src/cli.ts', 'serve']
  : ['bin/redeem-gateway.js', 'serve'];

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${field}:\\s+(\\d+)`));
  return m ? Number(m[1]) : 0;
}
const mb = (kb: number) => Math.round(kb / 1024);

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

interface Load {
  reqPerSec: number;
  non2xx: number;
  errors: number;
  servingRssMb: number;
  peakRssMb: number;
}

/** A synchronous one-code redeem on every key in turn, for LOAD_SECONDS (after 2 s of warm-up). */
async function redeemLoad(port: number, adminPort: number, dataDir: string, leaf: number): Promise<Load> {
  const keys = await createFixtures({
    adminUrl: `http://${HOST}:${adminPort}`,
    adminToken: readFileSync(join(dataDir, 'admin-token'), 'utf8').trim(),
    customers: 200,
    keysPerCustomer: 2,
  });
  const runTag = `${Date.now()}${randomBytes(2).readUInt16BE()}`;
  let n = 0;
  const target = {
    url: `http://${HOST}:${port}`,
    connections: Number(cli.connections),
    requests: [
      {
        method: 'POST',
        path: '/v1/redeem',
        setupRequest: (req: autocannon.Request) => {
          const i = n++;
          return {
            ...req,
            headers: {
              authorization: `Bearer ${keys[i % keys.length]}`,
              'idempotency-key': `startup-${runTag}-${i}`,
              'content-type': 'application/json',
            },
            body: JSON.stringify({ player_id: '5123456789', codes: [`BENCH${runTag}${i}`] }),
          };
        },
      },
    ],
  };
  await autocannon({ ...target, duration: 2 });
  const r = await autocannon({ ...target, duration: LOAD_SECONDS });
  // Settle as after the start: what the process keeps, not what it held mid-request.
  await new Promise((done) => setTimeout(done, 1000));
  return {
    reqPerSec: Math.round(r.requests.mean),
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    servingRssMb: mb(statusKb(leaf, 'VmRSS')),
    peakRssMb: mb(statusKb(leaf, 'VmHWM')),
  };
}

async function once(dataDir: string, withLoad: boolean) {
  const port = await freePort();
  const adminPort = await freePort();
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: gatewayEnv({
      DATA_DIR: dataDir,
      HOST,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      LOG_LEVEL: 'warn',
    }),
    stdio: 'ignore',
  });
  for (;;) {
    const ok = await fetch(`http://${HOST}:${port}/v1/health`).then(
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
    treeRssMb: mb(pids.reduce((n, p) => n + statusKb(p, 'VmRSS'), 0)),
    servingRssMb: mb(statusKb(leaf, 'VmRSS')),
    peakRssMb: mb(statusKb(leaf, 'VmHWM')),
    load: withLoad && LOAD_SECONDS > 0 ? await redeemLoad(port, adminPort, dataDir, leaf) : undefined,
  };
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return result;
}

const label = cli.tsx ? 'tsx src/cli.ts' : 'node dist (compiled)';
const startRows: string[] = [];
const loadRows: string[] = [];
for (let i = 0; i < RUNS; i++) {
  const dir = mkdtempSync(join(tmpdir(), 'rg-bench-startup-'));
  const load1 = loadavg()[0]!.toFixed(2);
  try {
    const first = await once(dir, true);
    const second = await once(dir, false);
    startRows.push(
      `| ${label} | ${load1} | ${first.readyMs} | ${first.servingRssMb} | ${second.readyMs} | ${second.processes} | ${second.servingRssMb} | ${second.treeRssMb} |`,
    );
    const l = first.load;
    if (l)
      loadRows.push(
        `| ${label} | ${l.reqPerSec} | ${l.non2xx + l.errors} | ${first.servingRssMb} | ${l.servingRssMb} | ${l.peakRssMb} |`,
      );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
process.stdout.write(
  `| command | load avg (1 min) | ready, new data dir (ms) | serving RSS, new (MB) | ready, existing (ms) | processes | serving RSS, existing (MB) | tree RSS, existing (MB) |\n|---|---|---|---|---|---|---|---|\n${startRows.join('\n')}\n`,
);
if (loadRows.length)
  process.stdout.write(
    `\nFirst start (new data dir), ${LOAD_SECONDS} s synchronous one-code redeem, ${cli.connections} connections:\n\n` +
      `| command | redeem req/s | non-2xx + errors | RSS after start (MB) | RSS after load (MB) | peak RSS (MB) |\n|---|---|---|---|---|---|\n${loadRows.join('\n')}\n`,
  );
