// The baseline: a plain Fastify 5 hello-world, run as its own process like the gateway, so both
// are measured from the same load generator over the same loopback. Prints "listening <port>".
import Fastify from 'fastify';
import { serveChild } from './serve-child.ts';

const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
await serveChild(app);
