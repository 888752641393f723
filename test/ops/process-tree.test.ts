// docs/reference/running.md#graceful-stop, signals and the process tree: `npm start` and `npm run cli` run the command as
// npm's only child (no shell or loader process between them), so a SIGTERM sent to npm (what
// systemd, a container runtime or a CI job sends) reaches the server: requests in flight get
// their answers (docs/reference/running.md#graceful-stop), npm exits 0 when the server has, and no process of the tree is left.
// The serving process runs the compiled JavaScript of dist/, with no TypeScript loader in it.
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, inject, test } from 'vitest';
import { MALLOC_TUNABLES } from '../../src/db/pglite/memory.ts';
import {
  createProcessMerchant,
  databaseEnv,
  freePort,
  serverProcesses,
  TEST_ADMIN_TOKEN,
  TEST_CODE_KEY,
  waitUntil,
} from '../helpers/process.ts';
import { uniqueCode } from '../helpers/redeem.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const dirs = serverProcesses();

/** The pids whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((p) => {
      try {
        const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] === String(pid);
      } catch {
        return false; // gone meanwhile
      }
    });
}

/** True while any process of the process group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `npm run <args>` in its own process group (so the test can see the whole tree go). */
function npm(args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn('npm', ['run', '--silent', ...args], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      npm_config_update_notifier: 'false',
      ...env,
    },
  });
  return child;
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
}

test.each([
  ['SIGTERM to npm (a supervisor)', 'npm', 'SIGTERM'],
  // A terminal's Ctrl-C goes to the whole process group, and npm forwards it too: the server
  // gets it twice, and must not take the echo for an operator's second signal.
  ['SIGINT to the process group (Ctrl-C)', 'group', 'SIGINT'],
] as const)(
  '%s during npm start: the server drains, every process of the tree exits, npm exits 0',
  async (_, target, signal) => {
    const dataDir = dirs.dataDir();
    const template = process.env.DATABASE_URL ? '' : inject('pgliteTemplate');
    if (template) cpSync(template, join(dataDir, 'pglite'), { recursive: true });
    const port = await freePort();
    const adminPort = await freePort();
    const child = npm(['start'], {
      DATA_DIR: dataDir,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      CODE_ENCRYPTION_KEY: TEST_CODE_KEY,
      LOG_LEVEL: 'warn',
      SANDBOX_SLOW_MS: '2000',
      SHUTDOWN_GRACE_MS: '10000',
      ...databaseEnv(),
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    try {
      const url = `http://127.0.0.1:${port}`;
      await waitUntil(
        'the server to answer',
        () =>
          fetch(`${url}/v1/health`).then(
            (r) => (r.status === 200 ? true : undefined),
            () => undefined,
          ),
        60_000,
      );
      // npm's one child is the serving process itself: node running the compiled build.
      const tree = childrenOf(child.pid!);
      expect(tree).toHaveLength(1);
      const serving = tree[0]!;
      expect(childrenOf(serving)).toEqual([]);
      const argv = readFileSync(`/proc/${serving}/cmdline`, 'utf8').split('\0').filter(Boolean);
      expect(argv.slice(1)).toEqual(['bin/redeem-gateway.js', 'serve']);
      const environ = readFileSync(`/proc/${serving}/environ`, 'utf8').split('\0');
      expect(environ.filter((e) => e.startsWith('NODE_OPTIONS='))).toEqual([]);
      // glibc's malloc gives back what a new data directory's seeding freed (pglite/memory.ts).
      expect(environ.filter((e) => e.startsWith('GLIBC_TUNABLES='))).toEqual([
        `GLIBC_TUNABLES=${MALLOC_TUNABLES}`,
      ]);
      // No TypeScript loader among the modules the process mapped or opened.
      expect(readFileSync(`/proc/${serving}/maps`, 'utf8')).not.toMatch(/tsx|esbuild/);

      const server = { url, adminUrl: `http://127.0.0.1:${adminPort}` };
      const { key } = await createProcessMerchant(server);
      const inFlight = fetch(`${url}/v1/redeem`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'idempotency-key': 'tree-1',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ player_id: '5123456789', codes: [uniqueCode('SLOW'), uniqueCode('OK')] }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));
      // The SLOW code is answered after 2 s: half a second in, the request is being worked on.
      await new Promise((r) => setTimeout(r, 500));
      process.kill(target === 'npm' ? child.pid! : -child.pid!, signal);

      const answer = await inFlight;
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ ok: true, summary: { activated: 2 }, billed_requests: 2 });
      expect(await exitOf(child)).toEqual({ code: 0, signal: null });
      // npm waited for its child: nothing of the tree is left once npm has exited.
      expect(groupAlive(child.pid!)).toBe(false);
      expect(out).not.toMatch(/"level":(50|60)/);
    } finally {
      if (groupAlive(child.pid!)) process.kill(-child.pid!, 'SIGKILL');
    }
  },
  90_000,
);

test('SIGTERM to npm run cli: the command it runs gets it, and the tree exits', async () => {
  const port = await freePort();
  const child = npm(['cli', '--', 'upstream-sim', '--port', String(port), '--key', 'tree-test-key'], {});
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  try {
    await waitUntil(
      'the simulator to listen',
      () => (out.includes('listening on') ? true : undefined),
      60_000,
    );
    const tree = childrenOf(child.pid!);
    expect(tree).toHaveLength(1);
    expect(childrenOf(tree[0]!)).toEqual([]);
    process.kill(child.pid!, 'SIGTERM');
    expect(await exitOf(child)).toEqual({ code: 0, signal: null });
    expect(groupAlive(child.pid!)).toBe(false);
  } finally {
    if (groupAlive(child.pid!)) process.kill(-child.pid!, 'SIGKILL');
  }
}, 90_000);

test("npm start and the systemd unit set the same malloc tunable, each leaving an operator's own value first", () => {
  const unit = readFileSync(join(ROOT, 'deploy/redeem-gateway.service'), 'utf8');
  const lines = unit.split('\n');
  expect(lines).toContain(`Environment=GLIBC_TUNABLES=${MALLOC_TUNABLES}`);
  // systemd: an EnvironmentFile's settings override Environment= lines, wherever they stand.
  expect(lines.some((l) => l.startsWith('EnvironmentFile='))).toBe(true);
  const start = (
    JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }
  ).scripts.start;
  expect(start).toBe(
    `GLIBC_TUNABLES=\${GLIBC_TUNABLES:-${MALLOC_TUNABLES}} exec node bin/redeem-gateway.js serve`,
  );
});
