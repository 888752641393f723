// Key rotation under load, with a kill in the middle (docs/reference/operators-and-audit.md#encryption-key-rotation), on real server processes:
//   1. key 1 alone: stock imported, a webhook registered, codes redeemed (rows under key 1);
//   2. keys "2,1": a rotation starts while redeems and stock imports run, and the process is
//      killed (SIGKILL) in the middle of it;
//   3. keys "2,1" again: the rotation resumes by itself and ends with every row under key 2;
//   4. key 1 alone is refused at start, naming key 2's id; key 2 alone starts, every stock code
//      left redeems, old codes are still refused as duplicates, and webhook deliveries verify.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { keyId } from '../../src/core/crypto/code-crypto.ts';
import { createTestCa, type Receiver, startReceiver, type TestCa } from '../helpers/https-receiver.ts';
import {
  adminHttp,
  createProcessMerchant,
  type ServerProcess,
  serverProcesses,
  startServerProcess,
  waitUntil,
} from '../helpers/process.ts';

const processes = serverProcesses();
let ca: TestCa;
let receiver: Receiver;
beforeAll(async () => {
  ca = createTestCa();
  receiver = await startReceiver(ca);
});
afterAll(async () => {
  await receiver.close();
  ca.remove();
});

const K1 = randomBytes(32);
const K2 = randomBytes(32);
const b64 = (k: Buffer) => k.toString('base64');
const RUN = Date.now().toString(36).toUpperCase();
const codes = (from: number, n: number) => Array.from({ length: n }, (_, i) => `ROT${RUN}X${from + i}`);

interface Status {
  current_key_id: string;
  rows_by_key_id: Record<string, number>;
  rotation: string;
  rows_rewritten: number;
}
const status = (s: ServerProcess) => adminHttp<Status>(s, 'GET', '/admin/v1/encryption');
const importCodes = (s: ServerProcess, customerId: number, list: string[]) =>
  adminHttp<{ added: number; duplicates: number }>(s, 'POST', `/admin/v1/customers/${customerId}/stock`, {
    mode: 'test',
    category: '60',
    codes: list,
  });

async function redeemStock(s: ServerProcess, key: string, count: number, async = false) {
  const res = await fetch(`${s.url}/v1/redeem`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'idempotency-key': `rot-${randomBytes(8).toString('hex')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ player_id: '5123456789', packs: { '60': count }, async }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('a rotation under load, killed in the middle, resumes; afterwards key 2 alone serves everything', async () => {
  const dir = processes.dataDir();
  const env = {
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    NODE_EXTRA_CA_CERTS: ca.caFile,
    ENCRYPTION_ROTATION_BATCH: '10',
    ENCRYPTION_ROTATION_PAUSE_MS: '100',
    WORKER_POLL_MS: '50',
  };
  // 1. Key 1 alone.
  const a = await processes.start(dir, { ...env, CODE_ENCRYPTION_KEY: b64(K1) });
  const m = await createProcessMerchant(a, { daily_limit: null, per_request_usd: '0' });
  expect(await importCodes(a, m.customerId, codes(0, 400))).toMatchObject({ added: 400, duplicates: 0 });
  const reg = await fetch(`${a.url}/v1/webhook`, {
    method: 'POST',
    headers: { authorization: `Bearer ${m.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url }),
  });
  expect(reg.status).toBe(200);
  receiver.secret = ((await reg.json()) as { secret: string }).secret;
  for (let i = 0; i < 3; i++) expect((await redeemStock(a, m.key, 2)).status).toBe(200);
  await a.kill('SIGTERM');

  // 2. Keys "2,1": rotate under load, kill in the middle.
  const ring = `${b64(K2)},${b64(K1)}`;
  const b = await processes.start(dir, { ...env, CODE_ENCRYPTION_KEY: ring });
  const before = await status(b);
  expect(before.current_key_id).toBe(keyId(K2));
  expect(Object.keys(before.rows_by_key_id)).toEqual([keyId(K1)]);
  const total = before.rows_by_key_id[keyId(K1)]!;
  const rotate = await fetch(`${b.adminUrl}/admin/v1/encryption/rotate`, {
    method: 'POST',
    headers: { authorization: 'Bearer process-test-admin-token-0123456789' },
  });
  expect(rotate.status).toBe(202);
  let load = true;
  let redeemed = 0;
  let imported = 0;
  const loads = [
    (async () => {
      while (load) {
        const r = await redeemStock(b, m.key, 1);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        redeemed++;
        await new Promise((r) => setTimeout(r, 400));
      }
    })(),
    (async () => {
      for (let n = 0; load; n++) {
        // Five codes stored under key 1 (or already rewritten) and five new ones.
        const r = await importCodes(b, m.customerId, [...codes(n * 5, 5), ...codes(10_000 + n * 5, 5)]);
        expect(r).toMatchObject({ added: 5, duplicates: 5 });
        imported += 5;
        await new Promise((r) => setTimeout(r, 300));
      }
    })(),
  ];
  const mid = await waitUntil('the rotation to be under way', async () => {
    const s = await status(b);
    return s.rows_rewritten >= 60 ? s : undefined;
  });
  load = false;
  await Promise.all(loads);
  await b.kill('SIGKILL');
  expect(mid.rotation).toBe('running');
  expect(mid.rows_rewritten).toBeLessThan(total);
  expect(redeemed).toBeGreaterThan(0);
  expect(imported).toBeGreaterThan(0);

  // 3. The same keyring again: the rotation resumes and ends.
  const c = await processes.start(dir, { ...env, CODE_ENCRYPTION_KEY: ring });
  const done = await waitUntil(
    'the rotation to end',
    async () => {
      const s = await status(c);
      return s.rotation === 'idle' ? s : undefined;
    },
    90_000,
  );
  expect(Object.keys(done.rows_by_key_id)).toEqual([keyId(K2)]);
  await c.kill('SIGTERM');

  // 4. Key 1 alone cannot read the rows: the start stops, naming key 2's id.
  await expect(
    startServerProcess({ dataDir: dir, env: { ...env, CODE_ENCRYPTION_KEY: b64(K1) } }),
  ).rejects.toThrow(`lacks key id ${keyId(K2)}`);
  const d = await processes.start(dir, { ...env, CODE_ENCRYPTION_KEY: b64(K2) });
  // Old codes are still duplicates.
  expect(await importCodes(d, m.customerId, codes(0, 10))).toMatchObject({ added: 0, duplicates: 10 });
  // Every stock code left redeems (async jobs of up to 50 codes, each delivered and signed).
  const stock = await fetch(`${d.url}/v1/stock`, { headers: { authorization: `Bearer ${m.key}` } });
  const available = ((await stock.json()) as { total_available: number }).total_available;
  expect(available).toBe(400 + imported - 6 - redeemed);
  const jobs: string[] = [];
  for (let left = available; left > 0; left -= 50) {
    const r = await redeemStock(d, m.key, Math.min(50, left), true);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    jobs.push(r.body['job_id'] as string);
  }
  let activated = 0;
  for (const id of jobs) {
    const job = await waitUntil(
      `job ${id}`,
      async () => {
        const res = await fetch(`${d.url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${m.key}` } });
        const body = (await res.json()) as { status: string; result: { summary: { activated: number } } };
        return body.status === 'completed' ? body : undefined;
      },
      60_000,
    );
    activated += job.result.summary.activated;
  }
  expect(activated).toBe(available);
  const delivered = await receiver.waitFor(jobs.length, { timeoutMs: 30_000 });
  for (const r of delivered) expect(r.verdict).toBeNull();
}, 240_000);
