// The admin CLI against a test app's admin listener, in process: `listenAdmin` opens the listener
// on a free port and answers its URL; `runAdminCli` runs `redeem-gateway admin …` with no stdin
// and answers its exit code and what it printed.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { adminMain } from '../../src/cli/admin.ts';
import { ADMIN_TOKEN } from './app.ts';

export async function listenAdmin(admin: FastifyInstance): Promise<string> {
  await admin.listen({ host: '127.0.0.1', port: 0 });
  const addr = admin.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

export async function runAdminCli(url: string, args: string[], token = ADMIN_TOKEN) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await adminMain(args, {
    env: { ADMIN_URL: url, ADMIN_TOKEN: token },
    stdout: (s) => out.push(s),
    stderr: (s) => err.push(s),
    stdin: Readable.from([]),
  });
  return { code, stdout: out.join(''), stderr: err.join('') };
}
