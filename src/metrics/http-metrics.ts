// Request counts and latency of one listener, by route pattern and status (docs/reference/running.md#metrics).
import type { FastifyInstance } from 'fastify';
import type { Listener, Metrics } from './registry.ts';

/** The route label of a request no route matched: one value, whatever the URL was. */
export const UNMATCHED_ROUTE = 'unmatched';

// Node's parser accepts some 30 methods; the label keeps the ones an API sees and folds the rest.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);

/**
 * Counts every answered request in an onResponse hook. The route label is the pattern the
 * request matched (`/v1/jobs/:id`), never the URL: ids and query strings would make a series per
 * request and could carry secrets. Requests no route matched share one label value.
 */
export function installHttpMetrics(app: FastifyInstance, metrics: Metrics, listener: Listener): void {
  // Callback form: no promise per request (http/quick-hook.ts).
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? undefined : request.routeOptions.url;
    metrics.observeRequest(
      listener,
      METHODS.has(request.method) ? request.method : 'OTHER',
      route ?? UNMATCHED_ROUTE,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
}
