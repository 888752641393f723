// Name resolution for webhook hosts (docs/reference/webhooks-and-events.md#the-url-guard): off the main thread pool, with a
// deadline, cancelled when it passes, and a cap on lookups at once.
//
// node:dns `lookup` calls getaddrinfo on libuv's thread pool (4 threads by default), which the
// file system, crypto and zlib share; a nameserver that never answers would hold those threads
// for as long as the system resolver waits, and a few webhook registrations could stall
// everything else that needs them. node:dns `Resolver` speaks DNS itself (c-ares, on the event
// loop, no thread), and `cancel()` ends its queries at once. Each lookup gets its own Resolver
// so cancelling one never cancels another. It asks DNS servers only: /etc/hosts is not read
// (`localhost` is refused before any lookup; a development receiver uses an IP literal).
import { Resolver } from 'node:dns/promises';
import type { CoreConfig } from '../context.ts';
import { createFairSemaphore } from '../fair-semaphore.ts';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves a host name to every address it has. `key` names whose lookup it is
 * (`customer:<id>`): the shared resolver gives its slots round-robin by key (docs/reference/webhooks-and-events.md#fair-delivery).
 */
export type LookupFn = (hostname: string, key?: string) => Promise<ResolvedAddress[]>;

export interface WebhookResolverOptions {
  /** DNS servers (`1.2.3.4`, `1.2.3.4:53`, `[::1]:5353`); empty: the system's (/etc/resolv.conf). */
  servers?: readonly string[];
  /** The whole lookup, queueing included, ends by then. Default 5000 ms. */
  timeoutMs?: number;
  /** Lookups in flight at once; more wait their turn (within their deadline). Default 8. */
  concurrency?: number;
  /** Lookups that may wait for a turn; beyond that a lookup fails at once. Default 1000. */
  maxQueued?: number;
}

export interface WebhookResolver {
  lookup: LookupFn;
  /** Lookups in flight now, waiting now, and the most ever in flight at once. */
  stats(): { active: number; queued: number; peakActive: number };
}

export class LookupError extends Error {
  override name = 'LookupError';
  constructor(
    message: string,
    readonly code: 'ENOTFOUND' | 'ETIMEOUT' | 'EBUSY',
  ) {
    super(message);
  }
}

export function createWebhookResolver(opts: WebhookResolverOptions = {}): WebhookResolver {
  const servers = opts.servers ?? [];
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const concurrency = opts.concurrency ?? 8;
  const maxQueued = opts.maxQueued ?? 1_000;
  const slots = createFairSemaphore(concurrency, { maxQueued });

  async function lookup(hostname: string, key = ''): Promise<ResolvedAddress[]> {
    const deadline = AbortSignal.timeout(timeoutMs);
    const release = await slots.acquire(key, deadline);
    if (!release) {
      throw deadline.aborted
        ? new LookupError(`no turn to resolve ${hostname} within ${timeoutMs} ms`, 'ETIMEOUT')
        : new LookupError('too many host name lookups waiting', 'EBUSY');
    }
    // c-ares's own timeout is per try; two tries within the deadline, and the deadline cancels.
    const resolver = new Resolver({ timeout: Math.max(1, Math.floor(timeoutMs / 2)), tries: 2 });
    if (servers.length > 0) resolver.setServers([...servers]);
    const cancel = () => resolver.cancel();
    deadline.addEventListener('abort', cancel, { once: true });
    try {
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
      if (deadline.aborted)
        throw new LookupError(`resolving ${hostname} took over ${timeoutMs} ms`, 'ETIMEOUT');
      const found: ResolvedAddress[] = [];
      if (v4.status === 'fulfilled') for (const address of v4.value) found.push({ address, family: 4 });
      if (v6.status === 'fulfilled') for (const address of v6.value) found.push({ address, family: 6 });
      if (found.length === 0) throw new LookupError(`${hostname} has no address`, 'ENOTFOUND');
      return found;
    } finally {
      deadline.removeEventListener('abort', cancel);
      release();
    }
  }

  return { lookup, stats: slots.stats };
}

let shared: WebhookResolver | undefined;

/**
 * The process's webhook resolver, from WEBHOOK_DNS_SERVERS, WEBHOOK_DNS_TIMEOUT_MS and
 * WEBHOOK_DNS_CONCURRENCY. The server configures it once at start; the registration route and
 * the webhook worker use it (through `webhookLookup`) unless a lookup is injected.
 */
export function configureWebhookResolver(
  config: Pick<CoreConfig, 'WEBHOOK_DNS_SERVERS' | 'WEBHOOK_DNS_TIMEOUT_MS' | 'WEBHOOK_DNS_CONCURRENCY'>,
): WebhookResolver {
  shared = createWebhookResolver({
    servers: config.WEBHOOK_DNS_SERVERS,
    timeoutMs: config.WEBHOOK_DNS_TIMEOUT_MS,
    concurrency: config.WEBHOOK_DNS_CONCURRENCY,
  });
  return shared;
}

/** Resolves with the configured resolver (defaults when none was configured). */
export const webhookLookup: LookupFn = (hostname, key) => {
  shared ??= createWebhookResolver();
  return shared.lookup(hostname, key);
};
