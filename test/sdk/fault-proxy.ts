// A local HTTP proxy between the SDK and a real server process, for the retry tests: it records
// every request (method, path, Idempotency-Key) and every answer, and can refuse a connection
// before forwarding, answer a gateway 502 itself, or forward a request and then kill the
// connection instead of passing the server's answer on (the server did the work; the client
// never hears of it). Forwarding uses the global fetch, so the drift guard of helpers/process.ts
// checks the server's real answers.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault = 'refuse' | 'bad-gateway' | 'drop-response';

export interface Exchange {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  at: number;
  /** The server's answer (absent when the proxy refused or answered itself). */
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  fault?: Fault;
}

export interface FaultProxy {
  url: string;
  log: Exchange[];
  /** Applies `fault` to the next `count` requests matching `method path` (path prefix). */
  inject(fault: Fault, count: number, match?: { method?: string; path?: string }): void;
  /** Forwards to another server from now on (a restarted process on a new port). */
  setUpstream(url: string): void;
  close(): Promise<void>;
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startFaultProxy(initialUpstream: string): Promise<FaultProxy> {
  let upstream = initialUpstream;
  const log: Exchange[] = [];
  const faults: { fault: Fault; left: number; method?: string; path?: string }[] = [];
  const server: Server = createServer(async (req, res) => {
    const body = await readAll(req);
    const path = req.url ?? '/';
    const entry: Exchange = {
      method: req.method ?? 'GET',
      path,
      idempotencyKey: req.headers['idempotency-key'] as string | undefined,
      at: Date.now(),
    };
    log.push(entry);
    const f = faults.find(
      (x) => x.left > 0 && (!x.method || x.method === entry.method) && (!x.path || path.startsWith(x.path)),
    );
    if (f) {
      f.left -= 1;
      entry.fault = f.fault;
    }
    if (entry.fault === 'refuse') return void req.socket.destroy();
    if (entry.fault === 'bad-gateway') {
      res.writeHead(502, { 'content-type': 'text/html' });
      return void res.end('<html><body>502 Bad Gateway</body></html>');
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)) headers[k] = v;
    }
    let answer: Response;
    try {
      answer = await fetch(`${upstream}${path}`, {
        method: entry.method,
        headers,
        ...(body.length && entry.method !== 'GET' ? { body: new Uint8Array(body) } : {}),
      });
    } catch {
      return void req.socket.destroy();
    }
    const text = await answer.text();
    entry.status = answer.status;
    entry.headers = Object.fromEntries(answer.headers);
    entry.body = text;
    if (entry.fault === 'drop-response') return void req.socket.destroy();
    const out: Record<string, string> = {};
    for (const [k, v] of answer.headers)
      if (
        !['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(k)
      )
        out[k] = v;
    res.writeHead(answer.status, out);
    res.end(text);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    setUpstream(url) {
      upstream = url;
    },
    inject(fault, count, match = {}) {
      faults.push({ fault, left: count, ...match });
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
