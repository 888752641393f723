// The SDK as a merchant installs it: `npm pack` builds it (tsc: ESM and declarations) into a
// tarball with no dependencies; the tarball installs into an empty project, type-checks there
// under a DOM-only TypeScript setup (no Node types), and runs against a real API listener.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'rg-sdk-pack-'));
let t: TestApp;
let base: string;

beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
  await t.api.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.api.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t?.close();
  rmSync(work, { recursive: true, force: true });
});

const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });

test('npm pack → install the tarball → type-check and import it', { timeout: 120_000 }, async () => {
  const packDir = join(work, 'pack');
  run('npm', ['pack', '--pack-destination', packDir.replace(/pack$/, ''), '--silent'], join(ROOT, 'sdk'));
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'))!;
  expect(tarball).toMatch(/^redeem-gateway-sdk-\d+\.\d+\.\d+\.tgz$/);
  const listing = run('tar', ['-tzf', join(work, tarball)], work)
    .split('\n')
    .filter(Boolean)
    .sort();
  expect(listing).toEqual(
    expect.arrayContaining([
      'package/README.md',
      'package/dist/index.js',
      'package/dist/index.d.ts',
      'package/package.json',
    ]),
  );
  expect(listing.some((f) => f.startsWith('package/src/'))).toBe(false);

  const app = join(work, 'app');
  run('mkdir', ['-p', app], work);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'merchant-app', private: true, type: 'module' }),
  );
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', join(work, tarball)], app);
  const installed = JSON.parse(
    readFileSync(join(app, 'node_modules/@redeem-gateway/sdk/package.json'), 'utf8'),
  );
  expect(installed.dependencies ?? {}).toEqual({});
  expect(readdirSync(join(app, 'node_modules')).filter((d) => !d.startsWith('.'))).toEqual([
    '@redeem-gateway',
  ]);

  // Type-checks in a project that has only the DOM library, as a browser or edge function would.
  writeFileSync(
    join(app, 'check.ts'),
    `import { RedeemGateway, RedeemGatewayError, JobInterruptedError, webhooks, type Account, type WebhookEvent } from '@redeem-gateway/sdk';
const client = new RedeemGateway({ apiKey: 'rk_test_x', baseUrl: 'http://127.0.0.1:1' });
export async function f(): Promise<string> {
  const me: Account = await client.me();
  const r = await client.redeem({ player_id: '5123456789', codes: ['A1B2'] });
  const e: WebhookEvent = await webhooks.verify('{}', 't=1,v1=00', 'whsec_x');
  const status: string = r.codes[0]!.status;
  try { await client.waitForJob('job_x'); } catch (err) {
    if (err instanceof JobInterruptedError) return err.codes.map((c) => c.disposition).join();
    if (err instanceof RedeemGatewayError) return err.errorCode + err.status + err.requestId + err.retryable;
  }
  return me.mode + e.event + status;
}
`,
  );
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2022', 'DOM'],
        types: [],
        strict: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
      },
      files: ['check.ts'],
    }),
  );
  run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], app);

  // Runs: a call against a real listener, and a sign/verify round trip.
  const m = await createMerchant(t);
  writeFileSync(
    join(app, 'run.mjs'),
    `import { RedeemGateway, webhooks } from '@redeem-gateway/sdk';
const client = new RedeemGateway({ apiKey: process.argv[2], baseUrl: process.argv[3] });
const me = await client.me();
const body = JSON.stringify({ id: 'evt_1', event: 'redeem.completed', created_at: 1, data: {} });
const now = Math.floor(Date.now() / 1000);
const event = await webhooks.verify(body, await webhooks.sign(body, 'whsec_abc', now), 'whsec_abc');
console.log(JSON.stringify({ mode: me.mode, customer: me.customer_id, event: event.event }));
`,
  );
  // Not execFileSync: the listener answering it runs in this process.
  const { stdout } = await promisify(execFile)(process.execPath, ['run.mjs', m.key, base], { cwd: app });
  const out = JSON.parse(stdout);
  expect(out).toEqual({ mode: 'test', customer: m.customerId, event: 'redeem.completed' });

  // Without a global Web Crypto (Node 18 without the flag), node:crypto's webcrypto is used.
  writeFileSync(
    join(app, 'no-global-crypto.mjs'),
    `Object.defineProperty(globalThis, 'crypto', { value: undefined, configurable: true });
if (globalThis.crypto !== undefined) throw new Error('global crypto still there');
const { webhooks } = await import('@redeem-gateway/sdk');
const body = '{"id":"evt_2","event":"redeem.failed","created_at":1,"data":{}}';
const now = Math.floor(Date.now() / 1000);
const header = await webhooks.sign(body, 'whsec_abc', now);
const event = await webhooks.verify(body, header, 'whsec_abc');
const refused = await webhooks.verify(body, header, 'whsec_other').catch((e) => e.reason);
console.log(JSON.stringify({ event: event.event, refused }));
`,
  );
  const noGlobal = await promisify(execFile)(process.execPath, ['no-global-crypto.mjs'], { cwd: app });
  expect(JSON.parse(noGlobal.stdout)).toEqual({ event: 'redeem.failed', refused: 'signature_mismatch' });
});
