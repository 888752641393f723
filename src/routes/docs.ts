// GET /docs (docs/reference/running.md#served-documentation): the HTML reference of the public API, rendered on the server
// from the OpenAPI document, with its stylesheet. No key. The Content-Security-Policy allows
// nothing but the service's own stylesheet: no script, no font, no outside address.
import type { FastifyInstance } from 'fastify';
import { openApiDocument } from '../openapi/document.ts';
import { DOCS_CSS_PATH } from '../openapi/operations.ts';
import { DOCS_CSS, renderReference } from '../openapi/render-html.ts';

export const DOCS_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function registerDocsRoutes(app: FastifyInstance) {
  let page: string | undefined;
  app.get('/docs', async (_request, reply) => {
    page ??= renderReference(openApiDocument());
    return reply
      .header('Content-Security-Policy', DOCS_CSP)
      .header('X-Content-Type-Options', 'nosniff')
      .type('text/html; charset=utf-8')
      .send(page);
  });
  app.get(DOCS_CSS_PATH, async (_request, reply) =>
    reply
      .header('Content-Security-Policy', DOCS_CSP)
      .header('X-Content-Type-Options', 'nosniff')
      .type('text/css; charset=utf-8')
      .send(DOCS_CSS),
  );
}
