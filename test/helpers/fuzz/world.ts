// The fuzzer's world: what its requests refer to, created through the admin and public APIs as an
// operator and a merchant would (customers with plans and wallets, keys of every kind, operators,
// a few jobs).
import { request } from 'undici';
import type { FuzzWorld } from './types.ts';

async function call(url: string, token: string, method: string, path: string, body?: unknown) {
  const res = await request(`${url}${path}`, {
    method: method as 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'idempotency-key': `world-${Math.random().toString(36).slice(2)}`,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * Creates what the fuzzer's requests refer to, through the admin and public APIs as an operator
 * and a merchant would: a customer with a plan, a wallet, keys of every kind and a few jobs; a
 * spare customer the admin requests may disable, revoke and top up; a viewer and a revoked operator.
 */
export async function prepareWorld(o: {
  publicUrl: string;
  adminUrl: string;
  rootToken: string;
  adminRoutes: string[];
  botSecret?: string | null;
}): Promise<FuzzWorld> {
  const a = (method: string, path: string, body?: unknown) =>
    call(o.adminUrl, o.rootToken, method, path, body);
  const customer = Number((await a('POST', '/admin/v1/customers', { name: 'fuzz merchant' })).customer_id);
  const spare = Number((await a('POST', '/admin/v1/customers', { name: 'fuzz spare' })).customer_id);
  for (const id of [customer, spare]) {
    await a('PUT', `/admin/v1/customers/${id}/plan`, {
      label: 'fuzz',
      daily_limit: null,
      per_request_usd: '0',
      overage: true,
      active: true,
    });
    for (const mode of ['test', 'live'])
      await a('POST', `/admin/v1/customers/${id}/wallet/topup`, { mode, usd: '1000', note: 'fuzz' });
  }
  const key = async (id: number, spec: Record<string, unknown>) =>
    a('POST', `/admin/v1/customers/${id}/keys`, spec) as Promise<{ key: string; key_id: string }>;
  const live = await key(customer, { mode: 'live' });
  const test = await key(customer, { mode: 'test' });
  const readOnly = await key(customer, { mode: 'test', scopes: ['read'] });
  const ipLimited = await key(customer, { mode: 'test', allowed_ips: ['203.0.113.7'] });
  const revoked = await key(customer, { mode: 'test' });
  await a('POST', `/admin/v1/keys/${revoked.key_id}/revoke`, {});
  const spareKeys = [await key(spare, { mode: 'test' }), await key(spare, { mode: 'live' })];
  const viewer = await a('POST', '/admin/v1/operators', { name: 'fuzz-viewer', role: 'viewer' });
  const gone = await a('POST', '/admin/v1/operators', { name: 'fuzz-gone', role: 'admin' });
  await a('POST', `/admin/v1/operators/${gone.operator_id ?? gone.id}/revoke`, {});
  const jobIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await call(o.publicUrl, test.key, 'POST', '/v1/redeem', {
      player_id: '5123456789',
      codes: [`OK-FUZZ${Date.now().toString(36)}${i}`.toUpperCase()],
      async: true,
    }).catch(() => null);
    if (res && typeof res.job_id === 'string') jobIds.push(res.job_id);
  }
  return {
    publicUrl: o.publicUrl,
    adminUrl: o.adminUrl,
    adminRoutes: o.adminRoutes,
    keys: {
      live: live.key,
      test: test.key,
      readOnly: readOnly.key,
      ipLimited: ipLimited.key,
      revoked: revoked.key,
    },
    admin: { root: o.rootToken, viewer: String(viewer.token), revoked: String(gone.token) },
    botSecret: o.botSecret ?? null,
    ids: {
      customer,
      spareCustomer: spare,
      keyIds: spareKeys.map((k) => k.key_id),
      jobIds: jobIds.length ? jobIds : ['job_0000000000000000000000'],
      operatorIds: [String(gone.operator_id ?? gone.id)],
    },
  };
}
