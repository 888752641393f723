// A real HTTPS webhook receiver for delivery tests: a throwaway CA made with openssl at test
// time signs a certificate for localhost, 127.0.0.1 and this machine's host name; the server
// records the raw body bytes and headers of every request, answers from a scripted sequence of
// statuses, and verifies each signature over the exact bytes received with signing.ts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkSignature, type VerifyFailure } from '../../src/core/webhooks/signing.ts';

/** A name no resolver knows, in the certificate: reachable only through an injected lookup. */
export const TEST_HOST_NAME = 'webhook-receiver.test';

export interface TestCa {
  dir: string;
  /** The CA certificate file, for NODE_EXTRA_CA_CERTS. */
  caFile: string;
  ca: string;
  key: string;
  cert: string;
  remove(): void;
}

/** A CA and a server certificate with SAN DNS:localhost, DNS:<hostname>, DNS:webhook-receiver.test, IP:127.0.0.1. */
export function createTestCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'rg-ca-'));
  const p = (f: string) => join(dir, f);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', p('ca.key'));
  ssl(
    'req',
    '-x509',
    '-new',
    '-key',
    p('ca.key'),
    '-sha256',
    '-days',
    '2',
    '-subj',
    '/CN=redeem-gateway test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-out',
    p('ca.pem'),
  );
  ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', p('server.key'));
  ssl('req', '-new', '-key', p('server.key'), '-subj', '/CN=localhost', '-out', p('server.csr'));
  writeFileSync(
    p('server.ext'),
    [
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=DNS:localhost,DNS:${hostname()},DNS:${TEST_HOST_NAME},IP:127.0.0.1`,
    ].join('\n'),
  );
  ssl(
    'x509',
    '-req',
    '-in',
    p('server.csr'),
    '-CA',
    p('ca.pem'),
    '-CAkey',
    p('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-sha256',
    '-extfile',
    p('server.ext'),
    '-out',
    p('server.pem'),
  );
  return {
    dir,
    caFile: p('ca.pem'),
    ca: readFileSync(p('ca.pem'), 'utf8'),
    key: readFileSync(p('server.key'), 'utf8'),
    cert: readFileSync(p('server.pem'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  raw: Buffer;
  /** The status this receiver answered. */
  answered: number;
  /** The signature check against the receiver's secret at receipt (null = valid). */
  verdict: VerifyFailure | null;
  receivedAt: number;
}

/** A scripted answer: a status, or a status with headers (a redirect's Location). */
export type ScriptedAnswer = number | { status: number; headers?: Record<string, string> };

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** The secret signatures are checked against (set after registering). */
  secret: string;
  /** The receiver's clock for the signature's age check, in Unix seconds (default: real time). */
  nowSec: () => number;
  /** Answers for the next requests, in order; when empty, `fallback`. */
  script: ScriptedAnswer[];
  fallback: ScriptedAnswer;
  /** Requests to one path. */
  at(path: string): ReceivedRequest[];
  /** Waits until `count` requests to `path` have arrived (fails after `timeoutMs`). */
  waitFor(count: number, opts?: { path?: string; timeoutMs?: number }): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(ca: TestCa, opts: { host?: string } = {}): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const receiver = {
    requests,
    secret: '',
    script: [] as ScriptedAnswer[],
    fallback: 200 as ScriptedAnswer,
    nowSec: () => Math.floor(Date.now() / 1000),
  } as Receiver;
  const server: Server = createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const next = receiver.script.shift() ?? receiver.fallback;
      const answer = typeof next === 'number' ? { status: next, headers: {} } : next;
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        raw,
        answered: answer.status,
        verdict: checkSignature(receiver.secret, req.headers['svc-signature'] as string | undefined, raw, {
          nowSec: receiver.nowSec(),
        }),
        receivedAt: Date.now(),
      });
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
      res.end('received');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  receiver.port = port;
  receiver.url = `https://${opts.host ?? '127.0.0.1'}:${port}/hook`;
  receiver.at = (path) => requests.filter((r) => r.path === path);
  receiver.waitFor = async (count, o = {}) => {
    const deadline = Date.now() + (o.timeoutMs ?? 20_000);
    const matching = () => (o.path ? receiver.at(o.path) : requests);
    while (matching().length < count) {
      if (Date.now() > deadline) {
        throw new Error(
          `receiver got ${matching().length} of ${count} requests${o.path ? ` to ${o.path}` : ''}`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return matching();
  };
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}
