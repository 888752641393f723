// Path ids the router cannot take, answered as docs/reference/keys-and-modes.md#routing says. The router refuses a path
// parameter longer than its limit (100 characters) or with undecodable percent-encoding with a
// `400` before any hook, so before authentication: a `GET /v1/events/{long id}` without a key was
// a 400 where the rules say 401, and with a key a 400 where any unknown id is `404 not_found`
// (with the quota headers). Such an id is routed as `-` instead (an id no row has), so the route
// answers it as any unknown id after authentication. Every route with a path parameter is found
// by the app's own onRoute hook: a new route needs nothing here.
import type { FastifyInstance } from 'fastify';

/** The router's limit on one path parameter (Fastify's default maxParamLength). */
export const MAX_PARAM_LENGTH = 100;

export interface ParamRouting {
  /** For Fastify's `rewriteUrl`: linear in the URL; a URL without such an id is unchanged. */
  rewriteUrl(url: string): string;
  /** Learns the app's routes with a path parameter (call before routes are added). */
  learnRoutes(app: FastifyInstance): void;
}

export function createParamRouting(): ParamRouting {
  // The static part before a route's first parameter (`/v1/events/` of `/v1/events/:id/redeliver`).
  const prefixes = new Set<string>();
  return {
    rewriteUrl(url) {
      for (const prefix of prefixes) {
        if (!url.startsWith(prefix)) continue;
        let end = url.length;
        for (let i = prefix.length; i < url.length; i++) {
          const c = url.charCodeAt(i);
          if (c === 47 /* / */ || c === 63 /* ? */) {
            end = i;
            break;
          }
        }
        const id = url.slice(prefix.length, end);
        if (id.length <= MAX_PARAM_LENGTH && decodable(id)) return url;
        return `${prefix}-${url.slice(end)}`;
      }
      return url;
    },
    learnRoutes(app) {
      app.addHook('onRoute', (route) => {
        const at = route.url.indexOf('/:');
        if (at !== -1) prefixes.add(route.url.slice(0, at + 1));
      });
    },
  };
}

function decodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}
