// How much an online backup of the embedded database stalls serving: a gateway on
// PGlite, one merchant; `GET /v1/me` one at a time, its latencies while idle and while
// `GET /admin/v1/backup` runs (several backups in a row). Prints the p50, p99 and worst of each,
// and the ratios; nothing is asserted. `npx tsx bench/backup-stall.ts [backups]`.
import { createFixtures } from './fixtures.ts';
import { startGateway } from './gateway.ts';

const BACKUPS = Number(process.argv[2] ?? 5);

function summary(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { n: s.length, p50: at(0.5), p99: at(0.99), max: s.at(-1)! };
}

const fmt = (x: { n: number; p50: number; p99: number; max: number }) =>
  `n ${x.n}, p50 ${x.p50.toFixed(1)} ms, p99 ${x.p99.toFixed(1)} ms, max ${x.max.toFixed(1)} ms`;

const gw = await startGateway();
try {
  // Many keys taken in turn: each key's read budget (300 per 10 s) is far from reached.
  const keys = await createFixtures({
    adminUrl: gw.adminUrl,
    adminToken: gw.adminToken,
    customers: 40,
    keysPerCustomer: 2,
  });
  let turn = 0;
  const me = async () => {
    const key = keys[turn++ % keys.length];
    const t0 = performance.now();
    const res = await fetch(`${gw.publicUrl}/v1/me`, { headers: { authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`/v1/me answered ${res.status}`);
    return performance.now() - t0;
  };
  for (let i = 0; i < 200; i++) await me(); // warm up
  const loop = async (until: () => boolean) => {
    const out: number[] = [];
    while (!until()) out.push(await me());
    return out;
  };
  const quietEnd = performance.now() + 3000;
  const quiet = await loop(() => performance.now() > quietEnd);

  let done = false;
  const backupMs: number[] = [];
  let bytes = 0;
  const backups = (async () => {
    for (let i = 0; i < BACKUPS; i++) {
      const t0 = performance.now();
      const res = await fetch(`${gw.adminUrl}/admin/v1/backup`, {
        headers: { authorization: `Bearer ${gw.adminToken}` },
      });
      bytes = (await res.arrayBuffer()).byteLength;
      if (res.status !== 200) throw new Error(`backup answered ${res.status}`);
      backupMs.push(performance.now() - t0);
    }
    done = true;
  })();
  const during = await loop(() => done);
  await backups;
  const q = summary(quiet);
  const d = summary(during);
  console.log(`GET /v1/me, quiet:         ${fmt(q)}`);
  console.log(`GET /v1/me, during backup: ${fmt(d)}`);
  console.log(`backup: ${BACKUPS} × ${bytes} bytes, ${summary(backupMs).p50.toFixed(0)} ms each (p50)`);
  console.log(
    `ratios during/quiet: p50 ${(d.p50 / q.p50).toFixed(2)}, p99 ${(d.p99 / q.p99).toFixed(2)}, max ${(d.max / q.max).toFixed(2)}`,
  );
} finally {
  await gw.stop();
  gw.remove();
}
