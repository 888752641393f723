// The baseline: a plain Fastify 5 hello-world, run as its own process like the gateway, so both
// are measured from the same load generator over the same loopback. Prints "listening <port>".
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`listening ${new URL(address).port}\n`);
const stop = () => void app.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
