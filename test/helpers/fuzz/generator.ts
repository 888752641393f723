// The fuzzer's request stream: half public API requests (from the OpenAPI document), nearly half
// admin API requests (from the admin app's route table), and the rest anything else (unknown
// paths, odd methods, the console's pages). The same seed gives the same requests.
import { adminCase, adminPathIds, fuzzedAdminRoutes } from './admin-requests.ts';
import { adminAuth, isStranger, publicAuth } from './credentials.ts';
import { publicCase } from './public-requests.ts';
import { chance, pick, seeded } from './random.ts';
import type { FuzzCase, FuzzWorld, Listener } from './types.ts';
import { urlValue } from './values.ts';

/** The next request of a seeded stream. */
export function caseGenerator(w: FuzzWorld, seed: number): () => FuzzCase {
  const r = seeded(seed);
  let updateId = 500_000_000 + (seed % 1000) * 100_000;
  const adminRoutes = fuzzedAdminRoutes(w);
  const pathIds = adminPathIds(w);

  return () => {
    const roll = r();
    if (roll < 0.5) return publicCase(r, w, () => updateId++);
    if (roll < 0.95) return adminCase(r, w, adminRoutes, pathIds);
    // Anything else: unknown paths, odd methods, the console's pages.
    const listener: Listener = chance(r, 0.5) ? 'public' : 'admin';
    const method = pick(r, ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PURGE']);
    const url = pick(r, [
      '/',
      '/v1',
      '/v1/',
      '/admin/v1/',
      '/console/',
      `/v1/${urlValue(r, [])}`,
      '/admin/v1/customers/1/..%2f..%2fx',
      '/%2e%2e/',
    ]);
    const headers = listener === 'admin' ? adminAuth(r, w) : publicAuth(r, w, {});
    return { listener, method, url, headers, stranger: isStranger(w, headers) };
  };
}
