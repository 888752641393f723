// POST /v1/webhook (docs/reference/webhooks-and-events.md#the-url-guard): validation in the documented order, the SSRF guard on
// every spelling of a non-public host, registration and replacement, scopes; and the guard's
// address classification and resolver step on their own.
import { createHmac } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { decryptSecret } from '../../src/core/crypto/code-crypto.ts';
import { SIGNATURE_NOTE } from '../../src/core/webhooks/registration.ts';
import { configureWebhookResolver, type WebhookResolver } from '../../src/core/webhooks/resolver.ts';
import { checkSignature, signatureHeader, verifySignature } from '../../src/core/webhooks/signing.ts';
import {
  classifyAddress,
  type LookupFn,
  parseWebhookUrl,
  resolveWebhookTarget,
  WEBHOOK_URL_BLOCKED_MESSAGE,
} from '../../src/core/webhooks/url-guard.ts';
import { bearer, createMerchant, createTestApp, issueTestKey, type TestApp } from '../helpers/app.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
let open: TestApp; // WEBHOOK_ALLOW_PRIVATE_TARGETS=true
// The webhook resolver asks this server only (WEBHOOK_DNS_SERVERS): names of `records` answer,
// `hang…` names are never answered, anything else is NXDOMAIN. Tests need no outside DNS.
let dns: TestDnsServer;
let resolver: WebhookResolver;
const DNS_TIMEOUT_MS = 4_000;
const DNS_CONCURRENCY = 2;
beforeAll(async () => {
  dns = await startDnsServer({
    records: {
      'loop.test': ['127.0.0.1'],
      'public.test': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
      'rebind.test': ['93.184.216.34', '10.0.0.5'],
      'meta.test': ['169.254.169.254'],
      'meta6.test': ['fd00:ec2::254'],
      'linklocal.test': ['169.254.1.1'],
    },
    silent: (name) => name.startsWith('hang'),
  });
  resolver = configureWebhookResolver({
    WEBHOOK_DNS_SERVERS: [dns.address],
    WEBHOOK_DNS_TIMEOUT_MS: DNS_TIMEOUT_MS,
    WEBHOOK_DNS_CONCURRENCY: DNS_CONCURRENCY,
  });
  [t, open] = await Promise.all([
    // Many registrations per merchant here: out of reach of the limit of docs/reference/limits.md#per-customer-limits.
    createTestApp({ jobWorker: false, env: { WEBHOOK_RATE_LIMIT: '100000' } }),
    createTestApp({
      jobWorker: false,
      env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RATE_LIMIT: '100000' },
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([t?.close(), open?.close(), dns?.close()]);
});

const register = (app: TestApp, key: string, payload: unknown) =>
  app.api.inject({
    method: 'POST',
    url: '/v1/webhook',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });

async function expectError(app: TestApp, key: string, payload: unknown, status: number, code: string) {
  const res = await register(app, key, payload);
  expect({ status: res.statusCode, body: res.json() }).toEqual({
    status,
    body: {
      ok: false,
      error_code: code,
      message: expect.any(String),
      request_id: res.headers['x-request-id'],
    },
  });
  expect(res.headers['svc-cost']).toBe('0');
  return res;
}

const BLOCKED: [string, string][] = [
  ['https://localhost/hook', 'webhook_url_blocked'],
  ['https://LOCALHOST./hook', 'webhook_url_blocked'],
  ['https://foo.localhost/hook', 'webhook_url_blocked'],
  ['https://a.b.localhost:8443/hook', 'webhook_url_blocked'],
  ['https://127.0.0.1/hook', 'webhook_url_blocked'],
  ['https://127.1/hook', 'webhook_url_blocked'],
  ['https://127.0.0.1./hook', 'webhook_url_blocked'],
  ['https://2130706433/hook', 'webhook_url_blocked'],
  ['https://0x7f000001/hook', 'webhook_url_blocked'],
  ['https://0x7f.0.0.1/hook', 'webhook_url_blocked'],
  ['https://0177.0.0.1/hook', 'webhook_url_blocked'],
  ['https://017700000001/hook', 'webhook_url_blocked'],
  ['https://[::1]/hook', 'webhook_url_blocked'],
  ['https://[0:0:0:0:0:0:0:1]/hook', 'webhook_url_blocked'],
  ['https://[::ffff:127.0.0.1]/hook', 'webhook_url_blocked'],
  ['https://[::ffff:7f00:1]/hook', 'webhook_url_blocked'],
  ['https://[::ffff:10.0.0.1]/hook', 'webhook_url_blocked'],
  ['https://[::127.0.0.1]/hook', 'webhook_url_blocked'], // IPv4-compatible (deprecated)
  ['https://10.0.0.1/hook', 'webhook_url_blocked'],
  ['https://172.16.0.1/hook', 'webhook_url_blocked'],
  ['https://172.31.255.254/hook', 'webhook_url_blocked'],
  ['https://192.168.1.1/hook', 'webhook_url_blocked'],
  ['https://169.254.169.254/latest/meta-data/', 'webhook_url_blocked'],
  ['https://100.64.0.1/hook', 'webhook_url_blocked'],
  ['https://100.127.255.254/hook', 'webhook_url_blocked'],
  ['https://0.0.0.0/hook', 'webhook_url_blocked'],
  ['https://0/hook', 'webhook_url_blocked'],
  ['https://224.0.0.1/hook', 'webhook_url_blocked'],
  ['https://239.255.255.250/hook', 'webhook_url_blocked'],
  ['https://255.255.255.255/hook', 'webhook_url_blocked'],
  ['https://240.0.0.1/hook', 'webhook_url_blocked'],
  ['https://192.0.2.1/hook', 'webhook_url_blocked'],
  ['https://198.51.100.7/hook', 'webhook_url_blocked'],
  ['https://203.0.113.9/hook', 'webhook_url_blocked'],
  ['https://198.18.0.1/hook', 'webhook_url_blocked'],
  ['https://192.0.0.8/hook', 'webhook_url_blocked'],
  ['https://[fc00::1]/hook', 'webhook_url_blocked'],
  ['https://[fd12:3456::1]/hook', 'webhook_url_blocked'],
  ['https://[fe80::1]/hook', 'webhook_url_blocked'],
  ['https://[fec0::1]/hook', 'webhook_url_blocked'],
  ['https://[ff02::1]/hook', 'webhook_url_blocked'],
  ['https://[::]/hook', 'webhook_url_blocked'],
  ['https://[2001:db8::1]/hook', 'webhook_url_blocked'],
  ['https://[3fff::1]/hook', 'webhook_url_blocked'],
  ['https://[2002:7f00:1::1]/hook', 'webhook_url_blocked'], // 6to4 around 127.0.0.1
  ['https://[2001::7f00:1]/hook', 'webhook_url_blocked'], // Teredo
  ['https://[64:ff9b::7f00:1]/hook', 'webhook_url_blocked'], // NAT64 around 127.0.0.1
  ['https://[2001:2::1]/hook', 'webhook_url_blocked'], // benchmarking
  ['https://does-not-exist.invalid/hook', 'webhook_url_blocked'],
  ['https://loop.test/hook', 'webhook_url_blocked'], // a name that resolves to loopback
  ['https://rebind.test/hook', 'webhook_url_blocked'], // one private address among public ones
  ['https://meta.test/hook', 'webhook_url_blocked'],
  ['https://[fd00:ec2::254]/hook', 'webhook_url_blocked'],
  ['http://localhost/hook', 'https_required'],
  ['http://example.com/hook', 'https_required'],
  ['ftp://example.com/hook', 'https_required'],
  ['javascript:alert(1)', 'https_required'],
  ['https://user@example.com/hook', 'bad_request'],
  ['https://user:pw@example.com/hook', 'bad_request'],
  ['https://@example.com/hook', 'bad_request'],
  ['https://user@x.invalid/', 'bad_request'],
  ['http://user:pw@127.0.0.1/', 'bad_request'],
  ['/hook', 'bad_request'],
  ['example.com/hook', 'bad_request'],
  ['https://', 'bad_request'],
  [' https://example.com/hook', 'bad_request'],
  [`https://example.com/${'a'.repeat(2048)}`, 'bad_request'],
];

describe('POST /v1/webhook refusals', () => {
  let shared: Awaited<ReturnType<typeof merchant>>;
  beforeAll(async () => {
    shared = await merchant();
  });

  test.each(BLOCKED)('%s → %s', async (url, code) => {
    await expectError(t, shared.key, { url }, 400, code);
  });

  test('none of the refusals stored anything', async () => {
    expect(await storedWebhook(shared.customerId)).toBeNull();
  });

  test('every webhook_url_blocked carries the same message (no map of the internal DNS)', async () => {
    const m = await merchant();
    const messages = new Set<string>();
    for (const [url, code] of BLOCKED) {
      if (code !== 'webhook_url_blocked') continue;
      messages.add((await register(t, m.key, { url })).json().message);
    }
    for (const url of ['https://hang-one.test/', 'https://nxdomain.test/', 'https://loop.test/']) {
      messages.add((await register(t, m.key, { url })).json().message);
    }
    expect([...messages]).toEqual([WEBHOOK_URL_BLOCKED_MESSAGE]);
  });

  test('body shape: missing url, not a string, unknown fields, not an object, bad JSON', async () => {
    const m = await merchant();
    await expectError(t, m.key, {}, 400, 'bad_request');
    await expectError(t, m.key, { url: 42 }, 400, 'bad_request');
    await expectError(t, m.key, { url: null }, 400, 'bad_request');
    await expectError(t, m.key, { url: ['https://8.8.8.8/'] }, 400, 'bad_request');
    await expectError(t, m.key, { url: 'https://8.8.8.8/hook', events: ['x'] }, 400, 'bad_request');
    await expectError(t, m.key, ['https://8.8.8.8/hook'], 400, 'bad_request');
    await expectError(t, m.key, '{"url": ', 400, 'bad_request');
    await expectError(t, m.key, '', 400, 'bad_request');
    // Nothing was registered by any of them.
    expect(await storedWebhook(m.customerId)).toBeNull();
  });

  test('authentication and scope: no key 401, read-only key 403 scope_denied, nothing stored', async () => {
    const res = await t.api.inject({
      method: 'POST',
      url: '/v1/webhook',
      payload: { url: 'https://8.8.8.8/' },
    });
    expect(res.statusCode).toBe(401);
    expect(res.json().error_code).toBe('unauthorized');
    const m = await merchant();
    const readOnly = await issueTestKey(t, m.customerId, { scopes: ['read'] });
    await expectError(t, readOnly.key, { url: 'https://8.8.8.8/hook' }, 403, 'scope_denied');
    expect(await storedWebhook(m.customerId)).toBeNull();
  });

  test('GET /v1/webhook does not exist: 405', async () => {
    const m = await merchant();
    const res = await t.api.inject({ method: 'GET', url: '/v1/webhook', headers: bearer(m.key) });
    expect(res.statusCode).toBe(405);
    expect(res.json().error_code).toBe('method_not_allowed');
  });
});

describe('POST /v1/webhook registration', () => {
  test('a public IP literal is registered: 200 with url, a whsec_ secret and a note; the secret is encrypted at rest', async () => {
    const m = await merchant();
    const res = await register(t, m.key, { url: 'https://8.8.8.8/hook?x=1' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      url: 'https://8.8.8.8/hook?x=1',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9]{32}$/),
      note: SIGNATURE_NOTE,
    });
    expect(res.headers['svc-cost']).toBe('0');
    expect(res.headers['svc-quota-used']).toBe('0');
    const row = await storedWebhook(m.customerId);
    expect(row).toMatchObject({ mode: 'test', url: 'https://8.8.8.8/hook?x=1' });
    expect(row!.secret_encrypted).not.toContain(body.secret);
    expect(
      decryptSecret(t.ctx.codeKey, row!.secret_encrypted, { customerId: m.customerId, mode: 'test' }),
    ).toBe(body.secret);
    // The secret never reaches the logs.
    expect(t.logs.join('')).not.toContain(body.secret);
  });

  test('public IPv6 and IPv4-mapped public literals are accepted', async () => {
    const m = await merchant();
    for (const url of [
      'https://[2606:4700:4700::1111]/hook',
      'https://[::ffff:8.8.4.4]/hook',
      'https://1.1.1.1:8443/',
    ]) {
      const res = await register(t, m.key, { url });
      expect(res.statusCode, url).toBe(200);
      expect(res.json().url).toBe(url);
    }
  });

  test('re-registering replaces url and secret together; one row per customer and mode', async () => {
    const m = await merchant();
    const first = (await register(t, m.key, { url: 'https://8.8.8.8/one' })).json();
    const second = (await register(t, m.key, { url: 'https://8.8.4.4/two' })).json();
    expect(second.secret).not.toBe(first.secret);
    expect(second.url).toBe('https://8.8.4.4/two');
    const rows = await t.ctx.db.query<{ mode: string; url: string; secret_encrypted: string }>(
      'select mode, url, secret_encrypted from webhooks where customer_id = $1',
      [m.customerId],
    );
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]!.url).toBe('https://8.8.4.4/two');
    expect(
      decryptSecret(t.ctx.codeKey, rows.rows[0]!.secret_encrypted, {
        customerId: m.customerId,
        mode: 'test',
      }),
    ).toBe(second.secret);
    // A refused re-registration leaves the old one in place.
    await expectError(t, m.key, { url: 'https://10.0.0.1/' }, 400, 'webhook_url_blocked');
    expect((await storedWebhook(m.customerId))!.url).toBe('https://8.8.4.4/two');
  });

  test('live and test keys each have their own registration', async () => {
    const m = await merchant();
    const live = await issueTestKey(t, m.customerId, { mode: 'live' });
    await register(t, m.key, { url: 'https://8.8.8.8/test' });
    await register(t, live.key, { url: 'https://8.8.8.8/live' });
    const rows = await t.ctx.db.query<{ mode: string; url: string }>(
      'select mode, url from webhooks where customer_id = $1 order by mode',
      [m.customerId],
    );
    expect(rows.rows).toEqual([
      { mode: 'live', url: 'https://8.8.8.8/live' },
      { mode: 'test', url: 'https://8.8.8.8/test' },
    ]);
  });

  test('WEBHOOK_ALLOW_PRIVATE_TARGETS=true: loopback and private targets are accepted, the rest still refused', async () => {
    const m = await createMerchant(open);
    for (const url of [
      'https://127.0.0.1:8443/hook',
      'https://localhost:9999/hook',
      'https://10.1.2.3/hook',
      'https://[::1]:4000/',
    ]) {
      const res = await register(open, m.key, { url });
      expect(res.statusCode, url).toBe(200);
    }
    // A name, resolved by the configured DNS server, to a loopback or link-local address.
    for (const url of [
      'https://loop.test/',
      'https://linklocal.test/',
      'https://169.254.1.1/',
      'https://[fd00:ec2::1]/',
    ])
      expect((await register(open, m.key, { url })).statusCode, url).toBe(200);
    await expectError(open, m.key, { url: 'http://127.0.0.1/hook' }, 400, 'https_required');
    for (const url of [
      'https://0.0.0.0/',
      'https://224.0.0.1/',
      'https://192.0.2.1/',
      'https://does-not-exist.invalid/',
    ]) {
      await expectError(open, m.key, { url }, 400, 'webhook_url_blocked');
    }
  });

  test('a public name, resolved by the configured DNS server, is registered', async () => {
    const m = await merchant();
    const before = dns.queries.length;
    const res = await register(t, m.key, { url: 'https://public.test/hook' });
    expect(res.statusCode).toBe(200);
    expect(dns.queries.slice(before).map((q) => q.name)).toContain('public.test');
  });

  test('the cloud metadata addresses are refused even when private targets are allowed', async () => {
    const m = await createMerchant(open);
    for (const url of [
      'https://169.254.169.254/latest/meta-data/',
      'https://[fd00:ec2::254]/',
      'https://[::ffff:169.254.169.254]/',
      'https://[::ffff:a9fe:a9fe]/',
      'https://2852039166/', // 169.254.169.254 as one number
      'https://0xa9.0xfe.0xa9.0xfe/',
      'https://meta.test/',
      'https://meta6.test/',
    ]) {
      await expectError(open, m.key, { url }, 400, 'webhook_url_blocked');
    }
    const row = await open.ctx.db.query('select 1 from webhooks where customer_id = $1', [m.customerId]);
    expect(row.rowCount).toBe(0);
    // At each delivery attempt too: the same guard runs on the addresses a name has then.
    const now =
      (address: string): LookupFn =>
      async () => [{ address, family: address.includes(':') ? 6 : 4 }];
    for (const address of ['169.254.169.254', 'fd00:ec2::254', '::ffff:169.254.169.254']) {
      await expect(
        resolveWebhookTarget(parseWebhookUrl('https://receiver.test/'), {
          allowPrivate: true,
          lookup: now(address),
        }),
        address,
      ).rejects.toMatchObject({ code: 'webhook_url_blocked', message: WEBHOOK_URL_BLOCKED_MESSAGE });
    }
    await expect(
      resolveWebhookTarget(parseWebhookUrl('https://receiver.test/'), {
        allowPrivate: true,
        lookup: now('10.0.0.7'),
      }),
    ).resolves.toEqual([{ address: '10.0.0.7', family: 4 }]);
  });
});

describe('a DNS server that never answers (WEBHOOK_DNS_TIMEOUT_MS, WEBHOOK_DNS_CONCURRENCY)', () => {
  test('delays no redeem, no database query and no thread-pool work; lookups are capped and all refused', async () => {
    const m = await merchant();
    const events: string[] = [];
    const hanging = Array.from({ length: 6 }, (_, i) =>
      register(t, m.key, { url: `https://hang${i}.test/hook` }).then((res) => {
        events.push('webhook');
        return res;
      }),
    );
    // While those wait on the silent server: sync redeems, health checks (database), and work on
    // libuv's thread pool (getaddrinfo, file reads), more of it than the pool has threads.
    const others = [
      ...Array.from({ length: 6 }, () =>
        redeem(t, m.key, { player_id: '5123456789', codes: [uniqueCode()] }).then((res) => {
          expect(res.statusCode).toBe(200);
          events.push('redeem');
        }),
      ),
      ...Array.from({ length: 4 }, () =>
        t.api.inject({ method: 'GET', url: '/v1/health' }).then((res) => {
          expect(res.statusCode).toBe(200);
          events.push('health');
        }),
      ),
      ...Array.from({ length: 8 }, () => lookup('localhost').then(() => events.push('thread-pool'))),
      ...Array.from({ length: 8 }, () =>
        readFile(import.meta.filename).then(() => events.push('thread-pool')),
      ),
    ];
    await Promise.all(others);
    const answers = await Promise.all(hanging);
    // Everything else finished before the first registration was answered.
    expect(events.indexOf('webhook')).toBe(others.length);
    for (const res of answers) {
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        error_code: 'webhook_url_blocked',
        message: WEBHOOK_URL_BLOCKED_MESSAGE,
      });
    }
    // The silent server was asked (the resolver uses the configured server, not the system's),
    // by at most DNS_CONCURRENCY lookups at once (peakActive). How many of the queued lookups got
    // a slot before their own deadline depends on how far apart the registrations arrived, so
    // the count asked is not asserted beyond the first DNS_CONCURRENCY.
    const asked = new Set(dns.queries.map((q) => q.name).filter((n) => /^hang\d\.test$/.test(n)));
    expect(asked.size).toBeGreaterThanOrEqual(DNS_CONCURRENCY);
    expect(resolver.stats()).toEqual({ active: 0, queued: 0, peakActive: DNS_CONCURRENCY });
    expect(await storedWebhook(m.customerId)).toBeNull();
  });
});

describe('url guard internals', () => {
  test('address classification', () => {
    const cases: [string, string][] = [
      ['8.8.8.8', 'public'],
      ['1.1.1.1', 'public'],
      ['2606:4700:4700::1111', 'public'],
      ['::ffff:8.8.8.8', 'public'],
      ['127.0.0.1', 'private'],
      ['::1', 'private'],
      ['::ffff:127.0.0.1', 'private'],
      ['10.0.0.1', 'private'],
      ['100.64.0.1', 'private'],
      ['fd00::1', 'private'],
      ['fe80::1%eth0', 'private'],
      ['0.0.0.0', 'blocked'],
      ['::', 'blocked'],
      ['255.255.255.255', 'blocked'],
      ['224.0.0.1', 'blocked'],
      ['ff02::1', 'blocked'],
      ['192.0.2.1', 'blocked'],
      ['2001:db8::1', 'blocked'],
      ['2002:a00:1::', 'blocked'],
      ['64:ff9b::a00:1', 'blocked'],
      ['::a00:1', 'blocked'],
      ['::ffff:0:a00:1', 'blocked'],
      ['100::1', 'blocked'],
      ['4000::1', 'blocked'],
      ['not an address', 'blocked'],
    ];
    expect(cases.map(([a]) => [a, classifyAddress(a)])).toEqual(cases);
  });

  test('the resolver step (injected lookup): every address of a name must be public; none at all is refused; vetted addresses are returned', async () => {
    const table: Record<string, string[]> = {
      'public.test': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
      'rebind.test': ['93.184.216.34', '10.0.0.5'],
      'metadata.test': ['169.254.169.254'],
      'mapped.test': ['::ffff:127.0.0.1'],
      'empty.test': [],
    };
    const fake: LookupFn = async (name) => {
      const found = table[name];
      if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    const check = (url: string, allowPrivate = false) =>
      resolveWebhookTarget(parseWebhookUrl(url), { allowPrivate, lookup: fake });
    await expect(check('https://public.test/x')).resolves.toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
    ]);
    for (const url of [
      'https://rebind.test/',
      'https://metadata.test/',
      'https://mapped.test/',
      'https://empty.test/',
      'https://nowhere.test/',
    ]) {
      await expect(check(url), url).rejects.toMatchObject({ code: 'webhook_url_blocked' });
    }
    await expect(check('https://rebind.test/', true)).resolves.toHaveLength(2);
    // A resolver that hangs counts as not resolving.
    const hang: LookupFn = () => new Promise(() => undefined);
    await expect(
      resolveWebhookTarget(parseWebhookUrl('https://slow.test/'), {
        allowPrivate: false,
        lookup: hang,
        lookupTimeoutMs: 50,
      }),
    ).rejects.toMatchObject({ code: 'webhook_url_blocked' });
  });
});

describe('signatures', () => {
  const secret = 'whsec_0123456789abcdefghijABCDEFGHIJ';
  const body = Buffer.from('{"id":"evt_1","event":"redeem.completed","created_at":1,"data":{"ok":true}}');
  const now = 1_790_000_000;

  test('known answer: HMAC-SHA256 keyed with the whole secret string over "<t>." + body', () => {
    const expected = createHmac('sha256', secret).update(`${now}.`).update(body).digest('hex');
    expect(signatureHeader(secret, body, now)).toBe(`t=${now},v1=${expected}`);
  });

  test('verification: valid, other secret, altered body, stale, non-digit t, missing v1, garbage', () => {
    const header = signatureHeader(secret, body, now);
    expect(verifySignature(secret, header, body, { nowSec: now + 299 })).toBe(true);
    expect(checkSignature('whsec_other', header, body, { nowSec: now })).toBe('mismatch');
    expect(checkSignature(secret, header, Buffer.from(`${body} `), { nowSec: now })).toBe('mismatch');
    expect(checkSignature(secret, header, body, { nowSec: now + 301 })).toBe('too_old');
    expect(checkSignature(secret, header, body, { nowSec: now - 301 })).toBe('too_old');
    expect(checkSignature(secret, header.replace(`t=${now}`, `t=${now}.0`), body, { nowSec: now })).toBe(
      'bad_timestamp',
    );
    expect(checkSignature(secret, header.replace(`t=${now}`, 't=-1'), body, { nowSec: now })).toBe(
      'bad_timestamp',
    );
    expect(checkSignature(secret, `t=${now}`, body, { nowSec: now })).toBe('missing_v1');
    expect(checkSignature(secret, undefined, body, { nowSec: now })).toBe('malformed');
    expect(checkSignature(secret, 'garbage', body, { nowSec: now })).toBe('malformed');
    // Several v1 values: any one matching is enough (Stripe's rule).
    expect(verifySignature(secret, `${header},v1=${'0'.repeat(64)}`, body, { nowSec: now })).toBe(true);
  });
});

async function merchant() {
  return createMerchant(t);
}

async function storedWebhook(customerId: number) {
  const r = await t.ctx.db.query<{ mode: string; url: string; secret_encrypted: string }>(
    'select mode, url, secret_encrypted from webhooks where customer_id = $1',
    [customerId],
  );
  return r.rows[0] ?? null;
}
