// API keys: issued once, stored only as a SHA-256 digest, looked up by that digest.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
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
  await q.query(
    `insert into api_keys (id, customer_id, mode, key_sha256, key_prefix, scopes, allowed_ips, expires_at, label, created_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      id,
      customerId,
      spec.mode,
      sha256Hex(key),
      keyPrefix,
      spec.scopes,
      spec.allowedIps.map(normaliseAllowEntry),
      spec.expiresAt,
      spec.label,
      clock.now(),
    ],
  );
  return { keyId: id, key, keyPrefix };
}

export async function revokeKey(q: Queryable, keyId: string, clock: Clock): Promise<boolean> {
  const r = await q.query('update api_keys set revoked_at = coalesce(revoked_at, $2) where id = $1', [
    keyId,
    clock.now(),
  ]);
  return r.rowCount > 0;
}

export async function findKeyByDigest(q: Queryable, digest: string): Promise<KeyRecord | null> {
  const r = await q.query<KeyRecord>(
    `select k.id, k.customer_id as "customerId", k.mode, k.key_prefix as "keyPrefix", k.scopes,
            k.allowed_ips as "allowedIps", k.expires_at as "expiresAt", k.revoked_at as "revokedAt", k.label,
            c.disabled_at is not null as "customerDisabled"
       from api_keys k join customers c on c.id = k.customer_id
      where k.key_sha256 = $1`,
    [digest],
    'key_by_digest',
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
