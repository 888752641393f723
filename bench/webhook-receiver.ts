// The benchmark's webhook receiver: HTTPS on 127.0.0.1 with a certificate from a throwaway CA
// (made with openssl at run time by the test helper's createTestCa), answering 200 at once and
// recording when each delivery's body had fully arrived. Signatures are checked after the run,
// when the caller knows which customer's secret signed which job's event.
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { TestCa } from '../test/helpers/https-receiver.ts';

export { createTestCa, type TestCa } from '../test/helpers/https-receiver.ts';

export interface Delivery {
  /** Date.now() when the whole body had arrived: the same clock the server stamps rows with. */
  receivedAt: number;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

export interface WebhookReceiver {
  url: string;
  deliveries: Delivery[];
  /** Called for every delivery, after it is recorded. */
  onDelivery: ((d: Delivery) => void) | null;
  close(): Promise<void>;
}

export async function startWebhookReceiver(ca: TestCa): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const receiver: WebhookReceiver = {
    url: '',
    deliveries,
    onDelivery: null,
    close: async () => undefined,
  };
  const server = createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const d = { receivedAt: Date.now(), headers: req.headers, raw: Buffer.concat(chunks) };
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
      deliveries.push(d);
      receiver.onDelivery?.(d);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  receiver.url = `https://127.0.0.1:${port}/hook`;
  receiver.close = () =>
    new Promise<void>((done) => {
      server.closeAllConnections();
      server.close(() => done());
    });
  return receiver;
}
