// Flood benchmark (npm run bench:floods, contract 13.8): a quiet merchant's GET /v1/me latency
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

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const madeUpKey = () => `rk_test_${Array.from(randomBytes(32), (b) => BASE62[b % 62]).join('')}`;

interface Phase {
  name: string;
  victimP50: number;
  victimP99: number;
  victimRps: number;
  floodRps: number;
  floodStatuses: string;
}

const statuses = (r: autocannon.Result) =>
  Object.entries(r.statusCodeStats)
    .map(([s, v]) => `${s}×${v.count}`)
    .join(' ');

async function victim(url: string, key: string, duration: number) {
  return autocannon({
    url: `${url}/v1/me`,
    connections: 2,
    duration,
    headers: { authorization: `Bearer ${key}` },
  });
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
    victimP50: v.latency.p50,
    victimP99: v.latency.p99,
    victimRps: v.requests.average,
    floodRps: f?.requests.average ?? 0,
    floodStatuses: f ? statuses(f) : '',
  };
}

async function runGateway(
  label: string,
  settings: Record<string, string>,
  o: { duration: number; flood: number; postgres?: string },
) {
  const gw = await startGateway({ settings, ...(o.postgres ? { databaseUrl: o.postgres } : {}) });
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
    '| phase | victim p50 ms | victim p99 ms | p50 vs quiet | victim req/s | flood req/s | flood answers |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const base = r.name.split(':')[0]!;
    if (r.name.endsWith('quiet')) quiet.set(base, r.victimP50);
    const ratio = r.victimP50 / Math.max(quiet.get(base) ?? r.victimP50, 0.5);
    console.log(
      `| ${r.name} | ${r.victimP50} | ${r.victimP99} | ${ratio.toFixed(2)}× | ${r.victimRps.toFixed(0)} | ${r.floodRps.toFixed(0)} | ${r.floodStatuses} |`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
