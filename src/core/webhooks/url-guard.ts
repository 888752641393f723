// The webhook URL guard (docs/reference/webhooks-and-events.md#the-url-guard): which URLs may be registered, and which addresses
// a delivery may connect to. A webhook is a request the service makes on a caller's behalf, so
// without this guard any key could make it reach loopback, the private network or a cloud
// metadata endpoint (SSRF). Only plain public unicast addresses pass, unless the operator allows
// private targets for development. The cloud metadata endpoints stay refused even then.
import ipaddr from 'ipaddr.js';
import { ApiError } from '../errors.ts';
import { type LookupFn, type ResolvedAddress, webhookLookup } from './resolver.ts';

export type { LookupFn, ResolvedAddress };

export const MAX_WEBHOOK_URL_LENGTH = 2048;
/** An outer bound on an injected lookup; the shared resolver has its own (WEBHOOK_DNS_TIMEOUT_MS). */
export const LOOKUP_TIMEOUT_MS = 5_000;

/**
 * Cloud instance metadata endpoints (AWS IMDS over IPv4 and IPv6, the ECS and EKS credential
 * endpoints, Alibaba Cloud's): refused even when WEBHOOK_ALLOW_PRIVATE_TARGETS=true
 * (docs/reference/webhooks-and-events.md#the-url-guard), since a request there hands out the machine's cloud credentials.
 */
const METADATA_ADDRESSES = new Set(
  [
    '169.254.169.254',
    'fd00:ec2::254',
    '169.254.170.2',
    '169.254.170.23',
    'fd00:ec2::23',
    '100.100.100.200',
  ].map((a) => ipaddr.parse(a).toNormalizedString()),
);

// ipaddr.js's range() names every special range it knows and answers 'unicast' for the rest.
// These are checked as well, whatever the library version: documentation, benchmarking,
// reserved and translation ranges, so a library update that renames or drops a range cannot
// open a hole. IPv6 must also lie in 2000::/3, the only block allocated for global unicast:
// that refuses ::/96 (IPv4-compatible), 64:ff9b::/96 (NAT64), fec0::/10, 5f00::/16 and the
// unallocated rest in one rule.
const BLOCKED_CIDRS = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '2001::/23', // IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID …
  '2001:db8::/32', // documentation
  '2002::/16', // 6to4: embeds an IPv4 address
  '3fff::/20', // documentation (RFC 9637)
].map((c) => ipaddr.parseCIDR(c));
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

// What WEBHOOK_ALLOW_PRIVATE_TARGETS=true lets through: the ranges a developer's own receiver
// sits in. Unspecified, multicast, broadcast, documentation and reserved stay refused.
const PRIVATE_RANGES = new Set(['loopback', 'private', 'linkLocal', 'uniqueLocal', 'carrierGradeNat']);

export type AddressVerdict = 'public' | 'private' | 'blocked';

/** Classifies one IP address (any form ipaddr.js parses; IPv4-mapped IPv6 is judged as IPv4). */
export function classifyAddress(text: string): AddressVerdict {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    const zone = text.indexOf('%'); // a zone index (fe80::1%eth0) is link-local anyway
    addr = ipaddr.process(zone === -1 ? text : text.slice(0, zone));
  } catch {
    return 'blocked';
  }
  if (METADATA_ADDRESSES.has(addr.toNormalizedString())) return 'blocked';
  const range = addr.range();
  if (PRIVATE_RANGES.has(range)) return 'private';
  if (range !== 'unicast') return 'blocked';
  if (addr.kind() === 'ipv6' && !addr.match(GLOBAL_UNICAST_V6)) return 'blocked';
  for (const cidr of BLOCKED_CIDRS) {
    if (cidr[0].kind() === addr.kind() && addr.match(cidr)) return 'blocked';
  }
  return 'public';
}

/** True when a delivery may connect to this address under the given setting. */
export function addressAllowed(address: string, allowPrivate: boolean): boolean {
  const verdict = classifyAddress(address);
  return verdict === 'public' || (verdict === 'private' && allowPrivate);
}

/**
 * The one message of every webhook_url_blocked (docs/reference/webhooks-and-events.md#the-url-guard): telling "does not resolve" from
 * "not public" would let a key map the internal DNS. The reason stays on the error for the
 * delivery log (an operator's view), never in an answer.
 */
export const WEBHOOK_URL_BLOCKED_MESSAGE =
  'url is not an allowed webhook target: it must be a public https endpoint';

export class BlockedTargetError extends ApiError {
  constructor(readonly reason: string) {
    super('webhook_url_blocked', WEBHOOK_URL_BLOCKED_MESSAGE);
  }
}

const blocked = (why: string) => new BlockedTargetError(why);

/**
 * The first two rules of docs/reference/webhooks-and-events.md#the-url-guard, in order: a usable absolute URL without userinfo
 * (else bad_request), then the https scheme (else https_required). Returns the parsed URL.
 */
export function parseWebhookUrl(raw: unknown): URL {
  if (typeof raw !== 'string') throw new ApiError('bad_request', 'url is required and must be a string');
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    throw new ApiError('bad_request', `url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  }
  // The URL parser silently strips surrounding spaces and inner tabs and newlines; a URL that
  // needs that is not the URL the caller meant, so it is refused rather than rewritten.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\x00-\x20\x7f]/.test(raw))
    throw new ApiError('bad_request', 'url must not contain spaces or control characters');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ApiError('bad_request', 'url must be an absolute URL');
  }
  if (url.username !== '' || url.password !== '' || hasUserinfo(raw)) {
    throw new ApiError('bad_request', 'url must not carry a user name or password');
  }
  if (url.protocol !== 'https:') throw new ApiError('https_required', 'url must use https');
  if (url.hostname === '') throw new ApiError('bad_request', 'url must have a host');
  return url;
}

/** An `@` in the authority, even an empty `https://@host` the parser drops. */
function hasUserinfo(raw: string): boolean {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:[/\\]*([^/\\?#]*)/.exec(raw);
  return m !== null && m[1]!.includes('@');
}

/** The host of a parsed URL as an IP literal, or null when it is a name. */
export function ipLiteralOf(url: URL): string | null {
  const host = url.hostname;
  if (host.startsWith('[') && host.endsWith(']')) return host.slice(1, -1);
  // The WHATWG parser has already turned every IPv4 spelling (127.1, 2130706433, 0x7f000001,
  // 0177.0.0.1) into a dotted quad, so a dotted quad is the only IPv4 form left to recognise.
  return ipaddr.IPv4.isValidFourPartDecimal(host) ? host : null;
}

export interface GuardOptions {
  allowPrivate: boolean;
  lookup?: LookupFn;
  lookupTimeoutMs?: number;
  /** Whose lookup (`customer:<id>`): the resolver shares its slots round-robin by this key. */
  lookupKey?: string;
}

/**
 * The third rule: resolves the URL's host now and checks every address it has. Returns the
 * vetted addresses (a delivery connects to these and nothing else); throws webhook_url_blocked.
 */
export async function resolveWebhookTarget(url: URL, opts: GuardOptions): Promise<ResolvedAddress[]> {
  const literal = ipLiteralOf(url);
  if (literal !== null) {
    if (!addressAllowed(literal, opts.allowPrivate)) throw blocked('the address is not public');
    return [{ address: literal, family: literal.includes(':') ? 6 : 4 }];
  }
  const name = url.hostname.replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) {
    if (!opts.allowPrivate) throw blocked('localhost');
    // RFC 6761: localhost names are loopback; no DNS server is asked (the resolver reads no
    // /etc/hosts).
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  }

  let found: ResolvedAddress[];
  try {
    // The shared resolver bounds and cancels its own lookups; an injected one gets an outer bound.
    found = opts.lookup
      ? await withTimeout(opts.lookup(name, opts.lookupKey), opts.lookupTimeoutMs ?? LOOKUP_TIMEOUT_MS)
      : await webhookLookup(name, opts.lookupKey);
  } catch {
    throw blocked('the host name does not resolve');
  }
  if (found.length === 0) throw blocked('the host name does not resolve');
  // One bad address refuses the name: the resolver could hand either one to a later connect.
  if (found.some((a) => !addressAllowed(a.address, opts.allowPrivate))) {
    throw blocked('the host name resolves to an address that is not public');
  }
  return found;
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('lookup timed out')), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
