// The admin CLI against a test app's admin listener, in process: `listenAdmin` opens the listener
// on a free port and answers its URL; `runAdminCli` runs `redeem-gateway admin …` and answers its
// exit code and what it printed. Every test that runs the CLI in process goes through here; the
// tests that need the process itself (exit codes, the token file) spawn `redeem-gateway`.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { adminMain } from '../../src/cli/admin.ts';
import { ADMIN_TOKEN } from './app.ts';

export async function listenAdmin(admin: FastifyInstance): Promise<string> {
  await admin.listen({ host: '127.0.0.1', port: 0 });
  return adminUrlOf(admin);
}

/** The URL of an admin listener that is already listening. */
export function adminUrlOf(admin: FastifyInstance): string {
  const addr = admin.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

export interface AdminCliOptions {
  /** ADMIN_TOKEN; the test apps' token unless given. `null` leaves it unset (the CLI then reads DATA_DIR). */
  token?: string | null;
  /** More environment, over ADMIN_URL and ADMIN_TOKEN (DATA_DIR, or another ADMIN_URL). */
  env?: Record<string, string>;
  /** What the CLI reads on stdin; nothing unless given. */
  input?: string;
}

export interface AdminCliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runAdminCli(
  url: string,
  args: string[],
  opts: AdminCliOptions = {},
): Promise<AdminCliRun> {
  const token = opts.token === undefined ? ADMIN_TOKEN : opts.token;
  const out: string[] = [];
  const err: string[] = [];
  const code = await adminMain(args, {
    env: { ADMIN_URL: url, ...(token === null ? {} : { ADMIN_TOKEN: token }), ...opts.env },
    stdout: (s) => out.push(s),
    stderr: (s) => err.push(s),
    stdin: Readable.from(opts.input === undefined ? [] : [opts.input]),
  });
  return { code, stdout: out.join(''), stderr: err.join('') };
}
