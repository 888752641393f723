// The tail every bench server shares: listen on a free loopback port, print "listening <port>"
// for the parent (bench/processes.ts waitForLine), and on SIGTERM or SIGINT close the app, then
// `close` (a pool, a database), then exit 0.
import type { FastifyInstance } from 'fastify';

export async function serveChild(app: FastifyInstance, close: () => Promise<unknown> = async () => {}) {
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  process.stdout.write(`listening ${new URL(address).port}\n`);
  const stop = () =>
    void app
      .close()
      .then(close)
      .then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
