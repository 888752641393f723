// A request's path as logs and the request log keep it. A client may put anything in a path: a
// key (`/v1/jobs/rk_live_…`), a code, a webhook secret, and may percent-encode it so that a
// pattern looking for `rk_live_` misses it (`/v1/rk%5Flive%5F…`). So the path is read the way the
// router reads it (percent-decoded), and each segment is kept only when it is a word one of our
// routes names or an id of ours; any other segment shows its last 4 characters, as a code does in
// every log. The query string is not part of it (its values are redacted where it is logged).
// One pass per segment: the cost is linear in the path's length whatever its shape.

/** Words of our routes' static segments, filled by the apps as they register routes. */
const routeWords = new Set<string>(['v1', 'admin', 'docs', 'health', 'metrics', 'openapi.json']);

/** Ids of ours that name a row, never a secret: kept in full so an operator can look them up. */
const OUR_ID = /^(req|job|evt|key|aud|op|tup)_[0-9A-Za-z]{1,64}$/;
/** A number shorter than a code (a customer id in an admin path). */
const SHORT_NUMBER = /^\d{1,9}$/;
const MASK = '…';

/** Remembers the static words of a route's URL (`/v1/jobs/:id` → v1, jobs). */
export function rememberRouteWords(url: string): void {
  for (const part of url.split('/'))
    if (part && !part.includes(':') && !part.includes('*')) routeWords.add(part);
}

/** `%XX` sequences decoded one by one; a malformed one is kept as it is (never a throw). */
function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
  }
}

function maskSegment(raw: string): string {
  const segment = decodeSegment(raw);
  if (segment === '' || routeWords.has(segment) || OUR_ID.test(segment) || SHORT_NUMBER.test(segment))
    return segment;
  // A key anywhere in the segment: its mode's prefix only (the rest beside it is caller text).
  const key = /rk_(live|test)_/.exec(segment);
  if (key) return `${key[0]}${MASK}`;
  return segment.length <= 4 ? segment : `${MASK}${segment.slice(-4)}`;
}

/**
 * The path of `url` as it may be logged: no query string or fragment, every segment decoded and
 * kept only when a route names it or it is an id of ours (else its last 4 characters), a key
 * shown as its `rk_live_` or `rk_test_` prefix; at most `limit` characters.
 */
export function loggedPath(url: string, limit = 200): string {
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  const out: string[] = [];
  let length = 0;
  for (const segment of path.split('/')) {
    const kept = maskSegment(segment.slice(0, limit * 3));
    out.push(kept);
    length += kept.length + 1;
    if (length > limit) break;
  }
  return out.join('/').slice(0, limit);
}
