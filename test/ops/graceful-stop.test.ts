// Graceful stop (docs/reference/running.md#graceful-stop) of a real server process: SIGTERM while slow sync redeems are in
// flight and async jobs run. Every request in flight gets its normal answer, a new request on a
// kept-alive connection gets a 503, no new connection is accepted, running jobs
// finish their codes, queued jobs stay queued, and the process exits 0.
// Also: PostgreSQL unreachable at start is one clear line and exit code 1.
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { openPglite, openPostgres } from '../../src/db/database.ts';
import { createProcessMerchant, freePort, serverProcesses, TEST_CODE_KEY } from '../helpers/process.ts';
import { uniqueCode } from '../helpers/redeem.ts';

const servers = serverProcesses();
const PLAYER = '5123456789';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** Reads HTTP/1.1 responses off one socket, in order (bodies have Content-Length). */
function responses(socket: Socket): { next(): Promise<RawResponse>; closed: Promise<void> } {
  let buffer = Buffer.alloc(0);
  let wake: (() => void) | null = null;
  let ended = false;
  socket.on('data', (d: Buffer) => {
    buffer = Buffer.concat([buffer, d]);
    wake?.();
  });
  const closed = new Promise<void>((r) =>
    socket.on('close', () => {
      ended = true;
      wake?.();
      r();
    }),
  );
  return {
    closed,
    async next() {
      for (;;) {
        const head = buffer.indexOf('\r\n\r\n');
        if (head >= 0) {
          const lines = buffer.subarray(0, head).toString('latin1').split('\r\n');
          const headers: Record<string, string> = {};
          for (const line of lines.slice(1)) {
            const i = line.indexOf(':');
            headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
          }
          const length = Number(headers['content-length'] ?? 0);
          if (buffer.length >= head + 4 + length) {
            const body = buffer.subarray(head + 4, head + 4 + length).toString('utf8');
            buffer = buffer.subarray(head + 4 + length);
            return { status: Number(lines[0]!.split(' ')[1]), headers, body: JSON.parse(body) };
          }
        }
        if (ended) throw new Error('connection closed before a whole response');
        await new Promise<void>((r) => {
          wake = r;
        });
        wake = null;
      }
    },
  };
}

test('SIGTERM: in-flight requests answered, new ones 503, running jobs finish, queued stay, exit 0', async () => {
  const dataDir = servers.dataDir();
  const server = await servers.start(dataDir, {
    SANDBOX_SLOW_MS: '4000',
    SANDBOX_DELAY_MS: '300',
    SHUTDOWN_GRACE_MS: '20000',
    JOB_CONCURRENCY: '2',
    CODE_CONCURRENCY: '2',
  });
  const { key } = await createProcessMerchant(server, { daily_limit: null, per_request_usd: '0.001' });
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  // Four async jobs of 30 codes (15 rounds of 300 ms each): two run, two wait their turn.
  const jobs: string[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await fetch(`${server.url}/v1/redeem`, {
      method: 'POST',
      headers: { ...auth, 'idempotency-key': `job-${i}` },
      body: JSON.stringify({
        player_id: PLAYER,
        codes: Array.from({ length: 30 }, () => uniqueCode('STOP')),
        async: true,
      }),
    });
    expect(res.status).toBe(202);
    jobs.push(((await res.json()) as { job_id: string }).job_id);
  }
  for (;;) {
    const views = await Promise.all(
      jobs.map(async (id) => {
        const r = await fetch(`${server.url}/v1/jobs/${id}`, { headers: auth });
        return ((await r.json()) as { status: string }).status;
      }),
    );
    if (views.filter((s) => s === 'running').length === 2) break;
    await sleep(20);
  }

  // Slow sync redeems in flight: three on their own connections, one on a raw kept-alive socket.
  const slowBody = () => JSON.stringify({ player_id: PLAYER, codes: [uniqueCode('SLOW'), uniqueCode('OK')] });
  const inFlight = Array.from({ length: 3 }, (_, i) =>
    fetch(`${server.url}/v1/redeem`, {
      method: 'POST',
      headers: { ...auth, 'idempotency-key': `slow-${i}` },
      body: slowBody(),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> })),
  );
  const port = Number(new URL(server.url).port);
  const socket = connect(port, '127.0.0.1');
  const reader = responses(socket);
  const body = slowBody();
  socket.write(
    `POST /v1/redeem HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
      `Idempotency-Key: slow-raw\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  // The SLOW code is answered after 4 s: a second in, every request is being worked on.
  await sleep(1000);
  const exited = new Promise<number | null>((r) => server.child.once('exit', (code) => r(code)));
  server.child.kill('SIGTERM');
  await sleep(200);

  // A new request on the kept-alive connection: a 503, with body and headers.
  socket.write(`GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`);
  // A new connection is not accepted any more.
  await expect(fetch(`${server.url}/v1/health`)).rejects.toThrow();

  const first = await reader.next();
  expect(first.status).toBe(200);
  expect(first.body).toMatchObject({ ok: true, summary: { activated: 2 } });
  const refused = await reader.next();
  expect(refused.status).toBe(503);
  expect(refused.body).toEqual({
    ok: false,
    error_code: 'unavailable',
    message: 'the server is shutting down; retry shortly',
    request_id: refused.headers['x-request-id'],
  });
  expect(refused.headers['retry-after']).toBe('1');
  expect(refused.headers['svc-version']).toBe('1.0.0');
  expect(refused.headers['svc-cost']).toBe('0');
  expect(refused.headers['svc-idempotent-replay']).toBe('false');
  expect(refused.headers.connection).toBe('close');
  expect(refused.headers['cache-control']).toBe('no-store');
  await reader.closed;

  for (const r of await Promise.all(inFlight)) {
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, summary: { activated: 2 }, billed_requests: 2 });
  }
  expect(await exited).toBe(0);

  // After the exit: the jobs that were running finished every code; the others never started.
  const db = process.env.DATABASE_URL
    ? await openPostgres(process.env.DATABASE_URL, { max: 1 })
    : await openPglite(join(dataDir, 'pglite'));
  try {
    const rows = await db.query<{ id: string; status: string; done: number }>(
      `select j.id, j.status, (select count(*)::int from job_codes c where c.customer_id = j.customer_id and c.job_id = j.id and c.state = 'done') as done
         from jobs j where j.id = any($1)`,
      [jobs],
    );
    const byStatus = rows.rows.reduce<Record<string, number>>((acc, r) => {
      acc[r.status] = (acc[r.status] ?? 0) + 1;
      return acc;
    }, {});
    expect(byStatus).toEqual({ completed: 2, queued: 2 });
    for (const r of rows.rows) expect(r.done).toBe(r.status === 'completed' ? 30 : 0);
    // No sync redeem was cut short either: every job of this run is completed or still queued.
    const others = await db.query<{ n: number }>(
      `select count(*)::int as n from jobs where status not in ('completed', 'queued')`,
    );
    expect(others.rows[0]!.n).toBe(0);
  } finally {
    await db.close();
  }
  expect(server.output()).not.toMatch(/"level":(50|60)/);
}, 60_000);

test('PostgreSQL unreachable at start: one clear line, exit code 1, no password shown', async () => {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, '..', '..', 'bin', 'redeem-gateway.js'), 'serve'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: `postgres://gateway:s3cret-pw@127.0.0.1:${port}/gateway`,
        CODE_ENCRYPTION_KEY: TEST_CODE_KEY,
        PORT: String(await freePort()),
        ADMIN_PORT: String(await freePort()),
        ADMIN_TOKEN: 'unreachable-test-admin-token-0123',
        DATA_DIR: servers.dataDir(),
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += String(d);
  });
  child.stderr.on('data', (d) => {
    stderr += String(d);
  });
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  expect(code).toBe(1);
  expect(stdout).toBe('');
  expect(stderr).not.toContain('s3cret');
  expect(stderr).toBe(
    `error: database unreachable at start (connect ECONNREFUSED 127.0.0.1:${port}); check DATABASE_URL and that PostgreSQL is up\n`,
  );
});
