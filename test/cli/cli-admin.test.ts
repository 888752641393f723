// `redeem-gateway admin …` as the operator runs it: a real server process, the CLI as child
// processes, the token read from the data directory. Stock import and jobs are checked against a
// recording HTTP server, which shows exactly what the CLI sends.
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { runAdminCli } from '../helpers/admin-cli.ts';
import { databaseEnv } from '../helpers/process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'redeem-gateway.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let dataDir: string;
let server: ChildProcess;
let serverOutput = '';
let publicUrl: string;
let adminUrl: string;
/** Everything the CLI printed in this file, to check that the admin token never appears. */
const printed: string[] = [];

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Base environment of child processes: nothing of the test runner's admin settings leaks in. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir() };
  return { ...env, ...extra };
}

/** Runs `redeem-gateway admin …args` to completion. */
function cli(args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'admin', ...args], {
      cwd: ROOT,
      env: childEnv({ DATA_DIR: dataDir, ADMIN_URL: adminUrl, ...opts.env }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += String(d);
    });
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    child.once('error', reject);
    child.once('close', (code) => {
      printed.push(stdout, stderr);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/**
 * Runs the same command in this process, against the same environment and server. A Node process
 * start costs most of a second, so only the runs that check the process itself (exit codes
 * through `redeem-gateway`, the token file) use `cli`; the rest of the command logic runs here.
 */
async function adminRun(
  args: string[],
  opts: { env?: Record<string, string>; input?: string } = {},
): Promise<Run> {
  const run = await runAdminCli(adminUrl, args, {
    token: null,
    env: { DATA_DIR: dataDir, ...opts.env },
    input: opts.input,
  });
  printed.push(run.stdout, run.stderr);
  return run;
}

/** The single JSON object a --json run prints. */
function onlyJson(run: Run): Record<string, unknown> {
  expect(run.stdout.endsWith('\n')).toBe(true);
  expect(run.stdout.trimEnd().split('\n')).toHaveLength(1);
  return JSON.parse(run.stdout);
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'rg-cli-'));
  // A copy of the migrated template spares the server a new PGlite database (seconds).
  const template = inject('pgliteTemplate');
  if (!process.env.DATABASE_URL && template) cpSync(template, join(dataDir, 'pglite'), { recursive: true });
  const [port, adminPort] = [await freePort(), await freePort()];
  publicUrl = `http://127.0.0.1:${port}`;
  adminUrl = `http://127.0.0.1:${adminPort}`;
  server = spawn(process.execPath, [BIN, 'serve'], {
    cwd: ROOT,
    env: childEnv({
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: String(adminPort),
      LOG_LEVEL: 'warn',
      ...(process.env.DATABASE_URL
        ? {
            ...databaseEnv(),
            CODE_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
          }
        : {}),
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout!.on('data', (d) => {
    serverOutput += String(d);
  });
  server.stderr!.on('data', (d) => {
    serverOutput += String(d);
  });
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`server exited with ${server.exitCode}:\n${serverOutput}`);
    try {
      // Any answer (401 here) means the admin listener is up; it starts after the public one.
      if ((await fetch(`${adminUrl}/admin/v1/customers/1`)).status === 401) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server did not start:\n${serverOutput}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}, 60_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    const timer = setTimeout(() => server.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('admin commands against a running server', () => {
  // Steps that do not depend on each other run at once: each CLI run is a Node process start.
  test('an operator sets up a merchant, step by step', async () => {
    const created = await cli(['customers', 'create', '--name', 'CLI Games Ltd']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const id = Number(/^customer (\d+) created\n$/.exec(created.stdout)?.[1]);
    expect(id).toBeGreaterThan(0);
    const ID = String(id);

    const [plan, sub, issued, topup] = await Promise.all([
      cli([
        'plan',
        'set',
        ID,
        '--label',
        'basic',
        '--daily-limit',
        '100',
        '--per-request-usd',
        '0.01',
        '--overage',
        'true',
      ]),
      cli(['subscription', 'set', ID, '--required', 'true', '--expires-at', '2099-01-01T00:00:00Z']),
      cli(['keys', 'create', ID, '--mode', 'test', '--scopes', 'redeem,read', '--label', 'cli']),
      cli(['wallet', 'topup', ID, '--mode', 'test', '--usd', '12.5', '--note', 'invoice 7']),
    ]);
    expect(plan).toEqual({
      code: 0,
      stdout: `plan of customer ${id} set: basic: 100 requests/day included, 0.01 USD per request, overage on, active\n`,
      stderr: '',
    });
    expect(sub).toEqual({
      code: 0,
      stdout: `subscription of customer ${id} set: required, expires 2099-01-01T00:00:00Z\n`,
      stderr: '',
    });
    expect(topup).toEqual({
      code: 0,
      stdout: `topped up 12.5 USD (test) for customer ${id}; balance 12.5 USD\n`,
      stderr: '',
    });
    // The key is printed once, alone on its line, for copying.
    expect(issued).toMatchObject({ code: 0, stderr: '' });
    const [intro, key, ...more] = issued.stdout.split('\n');
    expect(more).toEqual(['']);
    expect(key).toMatch(/^rk_test_[A-Za-z0-9]{32}$/);
    const keyId = /^key (key_[A-Za-z0-9]+) /.exec(intro!)?.[1];
    expect(intro).toBe(`key ${keyId} created (prefix ${key!.slice(0, 12)}); it is shown only this once:`);

    const topupJson = await cli(['wallet', 'topup', ID, '--mode', 'test', '--usd', '0.0035', '--json']);
    expect(topupJson.code).toBe(0);
    expect(onlyJson(topupJson)).toEqual({
      ok: true,
      request_id: expect.stringMatching(/^req_/),
      customer_id: id,
      mode: 'test',
      entry_id: expect.any(Number),
      balance_usd: 12.5035,
      replayed: false,
    });

    const [me, shown, text, ledger, liveLedger] = await Promise.all([
      fetch(`${publicUrl}/v1/me`, { headers: { authorization: `Bearer ${key}` } }),
      cli(['customers', 'show', ID, '--json']),
      cli(['customers', 'show', ID]),
      cli(['wallet', 'ledger', ID, '--mode', 'test']),
      cli(['wallet', 'ledger', ID, '--mode', 'live']),
    ]);
    // The key the CLI printed is the merchant's working key.
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({
      customer_id: id,
      mode: 'test',
      plan: 'basic',
      balance_usd: 12.5035,
    });

    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(onlyJson(shown)).toMatchObject({
      ok: true,
      customer: { customer_id: id, name: 'CLI Games Ltd', disabled: false },
      plan: { label: 'basic', daily_limit: 100, per_request_usd: 0.01, overage: true, active: true },
      subscription: { required: true, active: true, expires_at: '2099-01-01T00:00:00Z' },
      keys: [
        {
          key_id: keyId,
          key_prefix: key!.slice(0, 12),
          mode: 'test',
          scopes: ['redeem', 'read'],
          label: 'cli',
        },
      ],
      wallets: { test: { balance_usd: 12.5035, held_usd: 0, spendable_usd: 12.5035 } },
    });
    expect(shown.stdout).not.toContain(key!);

    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`customer ${id}: CLI Games Ltd\n`);
    expect(text.stdout).toContain(
      '  plan:         basic: 100 requests/day included, 0.01 USD per request, overage on, active\n',
    );
    expect(text.stdout).toContain('  subscription: required, active until 2099-01-01T00:00:00Z (');
    expect(text.stdout).toContain('    test: balance 12.5035 USD, held 0, spendable 12.5035\n');
    expect(text.stdout).toContain(
      `    ${keyId}  ${key!.slice(0, 12)}…  test  scopes redeem, read  from any address  no expiry  "cli"\n`,
    );
    expect(text.stdout).not.toContain(key!);

    expect(ledger).toMatchObject({ code: 0, stderr: '' });
    const rows = ledger.stdout.trimEnd().split('\n');
    expect(rows[0]).toBe(`ledger of customer ${id} (test), newest first:`);
    expect(rows[1]).toMatch(/^ {2}id +time +kind +amount_usd +balance_usd +actor +note$/);
    expect(
      rows.slice(2).map((r) =>
        r
          .trim()
          .split(/\s{2,}/)
          .slice(2),
      ),
    ).toEqual([
      ['topup', '0.0035', '12.5035', 'root'],
      ['topup', '12.5', '12.5', 'root', 'invoice 7'],
    ]);
    expect(liveLedger).toEqual({
      code: 0,
      stdout: `ledger of customer ${id} (live), newest first: no entries\n`,
      stderr: '',
    });

    const [revoke, planDelete] = await Promise.all([
      cli(['keys', 'revoke', keyId!]),
      cli(['plan', 'delete', ID]),
    ]);
    expect(revoke).toEqual({ code: 0, stdout: `key ${keyId} revoked\n`, stderr: '' });
    expect(planDelete).toEqual({
      code: 0,
      stdout: `plan of customer ${id} deleted; the customer has no plan\n`,
      stderr: '',
    });
    const revoked = await fetch(`${publicUrl}/v1/me`, { headers: { authorization: `Bearer ${key}` } });
    expect(revoked.status).toBe(401);
    expect((await revoked.json()).error_code).toBe('revoked');

    expect(await cli(['customers', 'disable', ID])).toEqual({
      code: 0,
      stdout: `customer ${id} disabled\n`,
      stderr: '',
    });
    expect(onlyJson(await cli(['customers', 'show', ID, '--json']))).toMatchObject({
      customer: { disabled: true },
      plan: null,
    });
  }, 120_000); // about a dozen process starts; a busy 2-core machine needs the margin

  test('an API error is one line on stderr and exit code 1', async () => {
    const [missing, missingJson, badBody, badKey] = await Promise.all([
      cli(['customers', 'show', '8000000000000']),
      adminRun(['customers', 'show', '8000000000000', '--json']),
      adminRun(['wallet', 'topup', '1', '--mode', 'test', '--usd', '0.0000001']),
      adminRun(['keys', 'revoke', 'key_nothing']),
    ]);
    expect(missing).toEqual({ code: 1, stdout: '', stderr: 'error: not_found: unknown customer\n' });
    // With --json the API's error answer is the one object on stdout; the line still goes to stderr.
    expect(missingJson.code).toBe(1);
    expect(missingJson.stderr).toBe('error: not_found: unknown customer\n');
    expect(onlyJson(missingJson)).toEqual({
      ok: false,
      error_code: 'not_found',
      message: 'unknown customer',
      request_id: expect.stringMatching(/^req_/),
    });
    expect(badBody).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'error: bad_request: usd: must be a positive USD amount with at most 6 decimals, at most 1000000\n',
    });
    expect(badKey).toEqual({ code: 1, stdout: '', stderr: 'error: not_found: unknown key\n' });
  }, 60_000);

  test('a wrong token, no token or no server: one line and exit code 1', async () => {
    const closedPort = await freePort();
    const [wrong, none, down] = await Promise.all([
      cli(['customers', 'show', '1'], { env: { ADMIN_TOKEN: 'wrong-token-0123456789abcdef' } }),
      adminRun(['customers', 'show', '1'], { env: { DATA_DIR: join(dataDir, 'nowhere') } }),
      adminRun(['customers', 'show', '1'], { env: { ADMIN_URL: `http://127.0.0.1:${closedPort}` } }),
    ]);
    expect(wrong).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: unauthorized: missing or wrong admin token\n',
    });
    expect(none).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: no admin token: set ADMIN_TOKEN, or DATA_DIR to the server's data directory (${join(dataDir, 'nowhere', 'admin-token')} does not exist)\n`,
    });
    expect(down).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: cannot reach the admin API at http://127.0.0.1:${closedPort}: ECONNREFUSED\n`,
    });
  }, 60_000);

  test('a wrong command line is one line on stderr and exit code 2; nothing is sent', async () => {
    // Nothing listens here: a command that tried to send would fail with exit code 1 instead.
    const env = { ADMIN_URL: `http://127.0.0.1:${await freePort()}` };
    const [noId, badLimit, unknownOption, unknownCommand, badBool] = await Promise.all([
      cli(['customers', 'show'], { env }),
      adminRun(['plan', 'set', '1', '--label', 'x', '--daily-limit', 'lots', '--per-request-usd', '1'], {
        env,
      }),
      adminRun(['customers', 'create', '--name', 'x', '--colour', 'blue'], { env }),
      adminRun(['customers', 'explode', '1'], { env }),
      adminRun(['subscription', 'set', '1', '--required', 'maybe'], { env }),
    ]);
    expect(noId).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: expected ID, got nothing (usage: redeem-gateway admin customers show ID)\n',
    });
    for (const run of [badLimit, unknownOption, badBool]) {
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr.split('\n')).toHaveLength(2);
    }
    expect(badLimit.stderr).toMatch(/^error: --daily-limit must be a whole number or none \(usage: /);
    expect(unknownOption.stderr).toMatch(/^error: Unknown option '--colour' \(usage: /);
    expect(badBool.stderr).toMatch(/^error: --required must be true or false \(usage: /);
    expect(unknownCommand).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: unknown command "admin customers explode" (try: redeem-gateway admin help)\n',
    });
  }, 60_000);

  test('help lists every command and the environment', async () => {
    const help = await adminRun(['help']);
    expect(help.code).toBe(0);
    for (const line of [
      'customers create',
      'customers show ID',
      'customers disable ID',
      'plan set ID',
      'plan delete ID',
      'subscription set ID',
      'keys create ID',
      'keys revoke KEY_ID',
      'wallet topup ID',
      'wallet ledger ID',
      'stock import ID',
      'jobs show JOB_ID',
      'ADMIN_URL',
      'ADMIN_TOKEN',
      'DATA_DIR',
    ]) {
      expect(help.stdout).toContain(line);
    }
  });
});

describe('what the CLI sends (recording server)', () => {
  let recorder: Server;
  let recorderUrl: string;
  const seen: { method: string; url: string; authorization: string | undefined; body: unknown }[] = [];
  /** The answer for the next requests; a function of the request number. */
  let answer: (n: number, body: { codes?: string[] }) => [number, object | string] = () => [200, {}];

  beforeAll(async () => {
    recorder = createHttpServer((req, res) => {
      let text = '';
      req.on('data', (d) => {
        text += String(d);
      });
      req.on('end', () => {
        const body = text ? JSON.parse(text) : undefined;
        seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
        const [status, payload] = answer(seen.length, body ?? {});
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
        res.end(
          typeof payload === 'string'
            ? payload
            : JSON.stringify({ request_id: `req_recorded${seen.length}`, ...payload }),
        );
      });
    });
    await new Promise<void>((r) => recorder.listen(0, '127.0.0.1', r));
    const address = recorder.address();
    recorderUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(() => new Promise<void>((r) => recorder.close(() => r())));

  const env = () => ({ ADMIN_URL: recorderUrl, ADMIN_TOKEN: 'recorder-token-0123456789' });
  const counts = (n: number, body: { codes?: string[] }): [number, object] => [
    200,
    { ok: true, added: body.codes!.length - 1, duplicates: 1, rejected: 0, n },
  ];

  test('stock import from a file: one code per line, blank lines dropped, the answer printed', async () => {
    seen.length = 0;
    answer = counts;
    const file = join(dataDir, 'codes.txt');
    writeFileSync(file, 'GIFT-AAAA-60\r\n\n  GIFT-BBBB-60  \nGIFT-CCCC-60\n\n');
    const run = await adminRun(
      ['stock', 'import', '42', '--mode', 'live', '--category', '60', '--file', file],
      {
        env: env(),
      },
    );
    expect(run).toEqual({
      code: 0,
      stdout: 'stock import: 2 added, 1 duplicates, 0 rejected\n  n: 1\n',
      stderr: '',
    });
    expect(seen).toEqual([
      {
        method: 'POST',
        url: '/admin/v1/customers/42/stock',
        authorization: 'Bearer recorder-token-0123456789',
        body: { mode: 'live', category: '60', codes: ['GIFT-AAAA-60', 'GIFT-BBBB-60', 'GIFT-CCCC-60'] },
      },
    ]);
  });

  test('stock import from standard input, in batches of 10,000, summed', async () => {
    seen.length = 0;
    answer = counts;
    const codes = Array.from({ length: 20_001 }, (_, i) => `CODE-${String(i).padStart(6, '0')}-60`);
    const run = await adminRun(['stock', 'import', '7', '--mode', 'test', '--category', '60', '--json'], {
      env: env(),
      input: `${codes.join('\n')}\n`,
    });
    expect(run.code).toBe(0);
    expect(onlyJson(run)).toEqual({
      ok: true,
      request_id: 'req_recorded3',
      request_ids: ['req_recorded1', 'req_recorded2', 'req_recorded3'],
      added: 9_999 + 9_999 + 0,
      duplicates: 3,
      rejected: 0,
    });
    expect(seen.map((s) => (s.body as { codes: string[] }).codes.length)).toEqual([10_000, 10_000, 1]);
    expect(seen.flatMap((s) => (s.body as { codes: string[] }).codes)).toEqual(codes);
  });

  test('a failing batch stops the import and says what the earlier ones did', async () => {
    seen.length = 0;
    answer = (n, body) =>
      n === 2
        ? [
            400,
            {
              ok: false,
              error_code: 'bad_request',
              message: 'category: must be one of the catalog categories',
            },
          ]
        : counts(n, body);
    const codes = Array.from({ length: 25_000 }, (_, i) => `CODE-${i}-60`);
    const run = await adminRun(['stock', 'import', '7', '--mode', 'test', '--category', '60'], {
      env: env(),
      input: codes.join('\n'),
    });
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'error: bad_request: category: must be one of the catalog categories (request 2 of 3; the ones before it succeeded: stock import: 9999 added, 1 duplicates, 0 rejected)\n',
    });
    expect(seen).toHaveLength(2);
  });

  test('jobs show prints whatever the job answer holds', async () => {
    seen.length = 0;
    answer = () => [
      200,
      {
        ok: true,
        job: { job_id: 'job_abc', status: 'done', attempts: [{ code_last4: '0060', outcome: 'activated' }] },
      },
    ];
    const run = await adminRun(['jobs', 'show', 'job_abc'], { env: env() });
    expect(run).toEqual({
      code: 0,
      stdout:
        'job:\n  job_id: job_abc\n  status: done\n  attempts: (1)\n    - [0]\n      code_last4: 0060\n      outcome: activated\n',
      stderr: '',
    });
    expect(seen).toEqual([
      {
        method: 'GET',
        url: '/admin/v1/jobs/job_abc',
        authorization: 'Bearer recorder-token-0123456789',
        body: undefined,
      },
    ]);
  });

  test('an answer that is not the admin API is an error, not a crash', async () => {
    answer = () => [502, '<html>Bad Gateway</html>'];
    const run = await adminRun(['customers', 'show', '1'], { env: env() });
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^error: GET .* answered 502 without a JSON object/),
    });
  });
});

test('the admin token never appears in anything the CLI printed', () => {
  const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  expect(token.length).toBeGreaterThanOrEqual(16);
  expect(printed.length).toBeGreaterThan(20);
  for (const text of printed) expect(text).not.toContain(token);
});
