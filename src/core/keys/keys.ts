// API keys: issued once, stored only as a SHA-256 digest, looked up by that digest.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { shardedByCustomer } from '../../db/citus.ts';
import type { Queryable } from '../../db/database.ts';
import type { Clock } from '../clock.ts';
import { sha256Hex } from '../hash.ts';
import { newApiKey, newKeyId } from '../ids.ts';
import type { Mode } from '../vocabulary.ts';

export const SCOPES = ['redeem', 'read'] as const;
export type Scope = (typeof SCOPES)[number];

export const API_KEY_PATTERN = /^rk_(live|test)_[A-Za-z0-9]{32}$/;

export interface KeyRecord {
  id: string;
  customerId: number;
  mode: Mode;
  keyPrefix: string;
  scopes: Scope[];
  allowedIps: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  label: string;
  customerDisabled: boolean;
}

export interface NewKey {
  mode: Mode;
  scopes: Scope[];
  allowedIps: string[];
  expiresAt: Date | null;
  label: string;
}

export async function issueKey(q: Queryable, customerId: number, spec: NewKey, clock: Clock) {
  const key = newApiKey(spec.mode);
  const id = newKeyId();
  const keyPrefix = key.slice(0, 12);
  const digest = sha256Hex(key);
  const made = await q.query<{ seq: string }>(
    `insert into api_keys (id, customer_id, mode, key_sha256, key_prefix, scopes, allowed_ips, expires_at, label, created_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning seq::text`,
    [
      id,
      customerId,
      spec.mode,
      digest,
      keyPrefix,
      spec.scopes,
      spec.allowedIps.map(normaliseAllowEntry),
      spec.expiresAt,
      spec.label,
      clock.now(),
    ],
  );
  // The digest's owner, for the lookup by digest (migration 0116): in the same transaction.
  await q.query('insert into key_directory (key_sha256, customer_id, seq) values ($1, $2, $3::bigint)', [
    digest,
    customerId,
    made.rows[0]?.seq,
  ]);
  return { keyId: id, key, keyPrefix };
}

const KEY_COLUMNS = `k.id, k.customer_id as "customerId", k.mode, k.key_prefix as "keyPrefix", k.scopes,
  k.allowed_ips as "allowedIps", k.expires_at as "expiresAt", k.revoked_at as "revokedAt", k.label,
  c.disabled_at is not null as "customerDisabled"`;

/**
 * The key of a digest. Once per key per process: the key cache keeps what does not change. On
 * Citus in two statements (docs/running/citus.md#keys-to-customers): its customer from
 * key_directory (a reference table, answered where the statement arrives), then its row, which
 * names that customer, on that customer's worker. Elsewhere one statement.
 */
export async function findKeyByDigest(q: Queryable, digest: string): Promise<KeyRecord | null> {
  if (!(await shardedByCustomer(q))) {
    const r = await q.query<KeyRecord>(
      `select ${KEY_COLUMNS} from api_keys k join customers c on c.id = k.customer_id where k.key_sha256 = $1`,
      [digest],
      'key_by_digest',
    );
    return r.rows[0] ?? null;
  }
  const owner = await q.query<{ customerId: number }>(
    'select customer_id as "customerId" from key_directory where key_sha256 = $1',
    [digest],
    'key_owner',
  );
  const customerId = owner.rows[0]?.customerId;
  if (customerId === undefined) return null;
  const r = await q.query<KeyRecord>(
    `select ${KEY_COLUMNS} from api_keys k join customers c on c.id = k.customer_id
      where k.customer_id = $2 and c.id = $2 and k.key_sha256 = $1`,
    [digest, customerId],
    'key_by_digest_routed',
  );
  return r.rows[0] ?? null;
}

/** A key as the operator sees it: its record without the customer fields, plus when it was made. */
export type ListedKey = Omit<KeyRecord, 'customerId' | 'customerDisabled'> & { createdAt: Date };

export async function listKeys(q: Queryable, customerId: number): Promise<ListedKey[]> {
  const r = await q.query<ListedKey>(
    `select id, mode, key_prefix as "keyPrefix", scopes, allowed_ips as "allowedIps", expires_at as "expiresAt",
            revoked_at as "revokedAt", label, created_at as "createdAt"
       from api_keys where customer_id = $1 order by created_at, id`,
    [customerId],
  );
  return r.rows;
}

/** True when `entry` is an IPv4/IPv6 address or CIDR block. */
export function isValidAllowEntry(entry: string): boolean {
  const [addr = '', bits, ...more] = entry.split('/');
  // Only the usual spellings: ipaddr.js also reads "10.1", "0x7f.0.0.1" or "1" (= 0.0.0.1) and
  // zone ids, which an operator never means in an allowlist and would silently allow the wrong host.
  if (more.length > 0 || isIP(addr) === 0 || addr.includes('%')) return false;
  return bits === undefined || ipaddr.isValidCIDR(entry);
}

/** Canonical text of an allowlist entry: a block, IPv4-mapped IPv6 written in its IPv4 form. */
function normaliseAllowEntry(entry: string): string {
  const [addr, bits] = entry.includes('/')
    ? ipaddr.parseCIDR(entry)
    : [ipaddr.parse(entry), ipaddr.parse(entry).kind() === 'ipv4' ? 32 : 128];
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return `${(addr as ipaddr.IPv6).toIPv4Address().toString()}/${bits - 96}`;
  }
  return `${addr.toString()}/${bits}`;
}

function unmap(addr: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
    ? (addr as ipaddr.IPv6).toIPv4Address()
    : addr;
}

/** Whether the client address is inside an allowlist; an empty list allows any address. */
export function ipAllowed(clientIp: string, allowlist: readonly string[]): boolean {
  if (allowlist.length === 0) return true;
  if (!ipaddr.isValid(clientIp)) return false;
  const client = unmap(ipaddr.parse(clientIp));
  return allowlist.some((entry) => {
    const [range, bits] = ipaddr.parseCIDR(entry);
    return range.kind() === client.kind() && client.match(range, bits);
  });
}
