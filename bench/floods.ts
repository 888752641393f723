// Flood benchmark (npm run bench:floods, docs/reference/limits.md#unknown-key-floods): a quiet merchant's GET /v1/me latency
// alone, then while another merchant's key floods the read endpoints, then while one client
// address floods made-up keys. Each flood runs twice: with the tenant limits at their defaults,
// and with them out of reach (READ_RATE_LIMIT and UNKNOWN_KEY_RATE_LIMIT at 9,999,999), so the
// table shows what the limits save. The gateway runs as a child process (PGlite, or PostgreSQL
// with --postgres); autocannon runs here. Latency ratios are against the quiet run of the same
// gateway: compare ratios, not raw numbers. Not a test: nothing is asserted.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createFixtures } from './fixtures.ts';
import { startGateway } from './gateway.ts';

const HELP = `npm run bench:floods -- [options]

Options (defaults in brackets):
  --duration=S        seconds per phase [8]
  --flood=N           connections of the flooding client [32]
  --postgres=URL      run on this throwaway PostgreSQL database instead of PGlite
  --help
`;

const BENCH_KEY = randomBytes(32).toString('base64');
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const madeUpKey = () => `rk_test_${Array.from(randomBytes(32), (b) => BASE62[b % 62]).join('')}`;

interface Phase {
  name: string;
  victimP50: number;
  victimP99: number;
  victimRps: number;
  victimStatuses: string;
  floodRps: number;
  floodStatuses: string;
}

const statuses = (r: autocannon.Result) =>
  Object.entries(r.statusCodeStats)
    .map(([s, v]) => `${s}×${v.count}`)
    .join(' ');

// The quiet merchant reads 20 times a second, one request at a time: well within its own budget
// (300 per 10 s). Measured here (not by autocannon) so its rate is exactly that.
async function victim(url: string, key: string, duration: number) {
  const latencies: number[] = [];
  const answers = new Map<number, number>();
  const deadline = Date.now() + duration * 1000;
  while (Date.now() < deadline) {
    const started = performance.now();
    const res = await fetch(`${url}/v1/me`, { headers: { authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    const ms = performance.now() - started;
    latencies.push(ms);
    answers.set(res.status, (answers.get(res.status) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, Math.max(0, 50 - ms)));
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 10) / 10;
  return {
    p50: at(0.5),
    p99: at(0.99),
    rps: latencies.length / duration,
    statuses: [...answers].map(([s, n]) => `${s}×${n}`).join(' '),
  };
}

async function phase(
  name: string,
  url: string,
  victimKey: string,
  duration: number,
  flood?: autocannon.Options,
): Promise<Phase> {
  const [v, f] = await Promise.all([
    victim(url, victimKey, duration),
    flood ? autocannon({ ...flood, duration }) : Promise.resolve(undefined),
  ]);
  return {
    name,
    victimP50: v.p50,
    victimP99: v.p99,
    victimRps: v.rps,
    victimStatuses: v.statuses,
    floodRps: f?.requests.average ?? 0,
    floodStatuses: f ? statuses(f) : '',
  };
}

async function runGateway(
  label: string,
  settings: Record<string, string>,
  o: { duration: number; flood: number; postgres?: string },
) {
  // One key for both gateways: on one PostgreSQL database the second must read the first's rows.
  const gw = await startGateway({
    settings,
    codeEncryptionKey: BENCH_KEY,
    ...(o.postgres ? { databaseUrl: o.postgres } : {}),
  });
  try {
    const [victimKey, flooderKey] = await createFixtures({
      adminUrl: gw.adminUrl,
      adminToken: gw.adminToken,
      customers: 2,
      keysPerCustomer: 1,
    });
    const rows: Phase[] = [];
    rows.push(await phase(`${label}: quiet`, gw.publicUrl, victimKey!, o.duration));
    rows.push(
      await phase(`${label}: read flood`, gw.publicUrl, victimKey!, o.duration, {
        url: `${gw.publicUrl}/v1/me`,
        connections: o.flood,
        headers: { authorization: `Bearer ${flooderKey}` },
      }),
    );
    rows.push(
      await phase(`${label}: unknown-key flood`, gw.publicUrl, victimKey!, o.duration, {
        url: gw.publicUrl,
        connections: o.flood,
        requests: [
          {
            method: 'GET',
            path: '/v1/me',
            setupRequest: (req) => ({ ...req, headers: { authorization: `Bearer ${madeUpKey()}` } }),
          },
        ],
      }),
    );
    return rows;
  } finally {
    await gw.stop();
    gw.remove();
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '8' },
      flood: { type: 'string', default: '32' },
      postgres: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  const o = { duration: Number(values.duration), flood: Number(values.flood), postgres: values.postgres };
  const rows = [
    ...(await runGateway('limits on', {}, o)),
    ...(await runGateway('limits off', { READ_RATE_LIMIT: '9999999', UNKNOWN_KEY_RATE_LIMIT: '9999999' }, o)),
  ];
  const quiet = new Map<string, number>();
  console.log(
    `database: ${o.postgres ? 'PostgreSQL' : 'PGlite'}; ${o.duration} s a phase; flood ${o.flood} connections`,
  );
  console.log(
    '| phase | victim p50 ms | victim p99 ms | p50 vs quiet | victim req/s | victim answers | flood req/s | flood answers |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const base = r.name.split(':')[0]!;
    if (r.name.endsWith('quiet')) quiet.set(base, r.victimP50);
    const ratio = r.victimP50 / Math.max(quiet.get(base) ?? r.victimP50, 0.5);
    console.log(
      `| ${r.name} | ${r.victimP50} | ${r.victimP99} | ${ratio.toFixed(2)}× | ${r.victimRps.toFixed(0)} | ${r.victimStatuses} | ${r.floodRps.toFixed(0)} | ${r.floodStatuses} |`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
