// GET /v1/openapi.json (docs/reference/running.md#served-documentation): the OpenAPI 3.1 document of the public API. No key.
import type { FastifyInstance } from 'fastify';
import { openApiJson } from '../openapi/document.ts';

export function registerOpenApiRoutes(app: FastifyInstance) {
  app.get('/v1/openapi.json', async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(openApiJson()),
  );
}
