// The digests of every API key, kept in memory, so the unknown-key limit (docs/reference/limits.md#unknown-key-floods) never
// refuses a valid key: an address over its limit still has a request with an existing key looked
// up, and one with an unknown key refused, without a lookup per request.
//
// Kept current across processes by reading, at most once per `intervalMs`, the keys made since
// an earlier read (the `seq` column, migration 0080); a request whose digest is not known waits
// for a read that started after it arrived, so a key issued a moment ago by another process is
// found. A flood of unknown keys therefore costs each process at most one small statement per
// interval, whatever the number of requests or addresses. A key row commits some time after its
// `seq` is taken, so each read goes back over the keys of the last `overlapMs`, counted from the
// first read (a key insert that takes longer than that to commit, or one under way during the
// first read, is learnt when the key is first looked up from an address under its limit).
//
// Memory: 16 hex characters (64 bits) of each digest; a rare collision only costs a lookup.
import type { Queryable } from '../../db/database.ts';

export interface KnownKeyDigests {
  /** Whether a key with this SHA-256 digest exists, as of a read that began after this call. */
  exists(digest: string): Promise<boolean>;
  /** A key found by a lookup: known from now on. */
  learn(digest: string): void;
  /** Keys held in memory (tests). */
  size(): number;
}

export function createKnownKeyDigests(
  db: Queryable,
  opts: {
    /** Least time between two reads (default 1 s). */
    intervalMs?: number;
    /** How far back each read goes over keys already read (default 60 s). */
    overlapMs?: number;
  } = {},
): KnownKeyDigests {
  const intervalMs = opts.intervalMs ?? 1000;
  const overlapMs = opts.overlapMs ?? 60_000;
  const digests = new Set<string>();
  /** The highest `seq` each read saw, with when it started (monotonic ms). */
  const marks: { at: number; seq: number }[] = [];
  let lastStart = Number.NEGATIVE_INFINITY;
  let running: Promise<void> | null = null;
  let next: Promise<void> | null = null;

  const short = (digest: string) => digest.slice(0, 16);

  async function read(): Promise<void> {
    const now = performance.now();
    lastStart = now;
    // Reads that started at least `overlapMs` ago decide where this one begins.
    while (marks.length > 1 && marks[1]!.at <= now - overlapMs) marks.shift();
    const from = marks[0]?.seq ?? 0;
    const r = await db.query<{ digest: string; seq: number }>(
      `select left(key_sha256, 16) as digest, seq::float8 as seq from key_directory where seq > $1`,
      [from],
    );
    let top = marks.at(-1)?.seq ?? 0;
    for (const row of r.rows) {
      digests.add(row.digest);
      if (row.seq > top) top = row.seq;
    }
    marks.push({ at: now, seq: top });
  }

  /** A read that starts after this call: the next one, queued behind any read under way. */
  function freshRead(): Promise<void> {
    if (next) return next;
    const after = running ?? Promise.resolve();
    next = after
      .catch(() => undefined)
      .then(async () => {
        const wait = lastStart + intervalMs - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const mine = read();
        running = mine;
        next = null;
        try {
          await mine;
        } finally {
          if (running === mine) running = null;
        }
      });
    return next;
  }

  return {
    async exists(digest) {
      if (digests.has(short(digest))) return true;
      await freshRead();
      return digests.has(short(digest));
    },
    learn(digest) {
      digests.add(short(digest));
    },
    size: () => digests.size,
  };
}
