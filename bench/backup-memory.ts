// What an online backup of the embedded database costs the serving process in memory: a gateway
// on PGlite, its database filled with stock (encrypted codes), then several `GET /admin/v1/backup`
// in a row. The gateway's resident memory is sampled every 20 ms: before, the peak during each
// backup, and after it (once it has settled for a few seconds). Nothing is asserted.
// `npm run bench:backup-memory -- [imports] [backups]` (each import: 10,000 codes).
import { createFixtures } from './fixtures.ts';
import { startGateway } from './gateway.ts';
import { residentMb } from './processes.ts';

const IMPORTS = Number(process.argv[2] ?? 10);
const BACKUPS = Number(process.argv[3] ?? 3);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const gw = await startGateway();
try {
  const [key] = await createFixtures({
    adminUrl: gw.adminUrl,
    adminToken: gw.adminToken,
    customers: 1,
    keysPerCustomer: 1,
  });
  void key;
  const admin = { authorization: `Bearer ${gw.adminToken}`, 'content-type': 'application/json' };
  const customers = (await (await fetch(`${gw.adminUrl}/admin/v1/customers`, { headers: admin })).json()) as {
    customers: { customer_id: number }[];
  };
  const id = customers.customers[0]!.customer_id;
  for (let i = 0; i < IMPORTS; i++) {
    const codes = Array.from(
      { length: 10_000 },
      (_, n) => `MEM${i}X${n}X${Math.random().toString(36).slice(2, 14)}`,
    );
    const res = await fetch(`${gw.adminUrl}/admin/v1/customers/${id}/stock`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ mode: 'test', category: '60', codes }),
    });
    if (res.status !== 200) throw new Error(`stock import: ${res.status} ${await res.text()}`);
  }
  await sleep(5000);
  const pid = gw.child.pid;
  console.log(`database filled: ${IMPORTS * 10_000} codes; gateway ${residentMb(pid).toFixed(0)} MB`);
  for (let b = 0; b < BACKUPS; b++) {
    const before = residentMb(pid);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, residentMb(pid));
    }, 20);
    const t0 = performance.now();
    const res = await fetch(`${gw.adminUrl}/admin/v1/backup`, { headers: admin });
    const bytes = (await res.arrayBuffer()).byteLength;
    const seconds = (performance.now() - t0) / 1000;
    await sleep(5000);
    clearInterval(sampler);
    const after = residentMb(pid);
    console.log(
      `backup ${b + 1}: ${res.status}, ${(bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(1)} s; ` +
        `gateway before ${before.toFixed(0)} MB, peak ${peak.toFixed(0)} MB (+${(peak - before).toFixed(0)}), ` +
        `5 s after ${after.toFixed(0)} MB (${after - before >= 0 ? '+' : ''}${(after - before).toFixed(0)})`,
    );
  }
} finally {
  await gw.stop();
  gw.remove();
}
