// Request log benchmark (npm run bench:request-log): what writing the request log costs
// another tenant while a flood of refusals is being logged. A quiet merchant reads GET /v1/me as
// fast as `--victims` connections go (its read budget out of reach: READ_RATE_LIMIT 9,999,999),
// alone and then under a flood of refusals: made-up well-formed keys (401, then 429 from the
// unknown-key limit: the rate the limits allow) or no key at all (401 without a lookup: no limit
// applies). Each flood runs on a gateway with the log at its default caps and on one where the
// log keeps one row a day per subject (REQUEST_LOG_*_CAP=1: every further refusal is dropped in
// the process before the buffer, so it writes nothing), so the table shows what the writes cost.
// After each flood the gateway's own counters (GET /metrics) say how many rows were written and
// dropped, to show the cap holds. Each gateway is a child process (PGlite, or PostgreSQL with
// --postgres); autocannon runs here. Compare ratios, not raw numbers. Nothing is asserted.
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createFixtures } from './fixtures.ts';
import { startGateway } from './gateway.ts';

const HELP = `npm run bench:request-log -- [options]

Options (defaults in brackets):
  --duration=S        seconds per phase [8]
  --flood=N           connections of the flooding client [32]
  --victims=N         connections of the quiet merchant [4]
  --cap=N             both daily caps of the log-on gateway [the defaults: 10,000 and 20,000]
                      (a cap above what a phase sends measures the writes for the whole phase)
  --floods=LIST       unknown-key,no-key [both]
  --postgres=URL      run on this throwaway PostgreSQL database instead of PGlite
  --help
`;

const BENCH_KEY = randomBytes(32).toString('base64');
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const madeUpKey = () => `rk_test_${Array.from(randomBytes(32), (b) => BASE62[b % 62]).join('')}`;

type Flood = 'unknown-key' | 'no-key';
const FLOODS: Flood[] = ['unknown-key', 'no-key'];

interface Row {
  name: string;
  victimRps: number;
  victimP99: number;
  victimStatuses: string;
  floodRps: number;
  floodStatuses: string;
  written: number;
  droppedCap: number;
  droppedFull: number;
  droppedFailed: number;
}

const statuses = (r: autocannon.Result) =>
  Object.entries(r.statusCodeStats)
    .map(([s, v]) => `${s}×${v.count}`)
    .join(' ');

function floodOptions(kind: Flood, url: string, connections: number): autocannon.Options {
  if (kind === 'no-key') return { url: `${url}/v1/me`, connections };
  return {
    url,
    connections,
    requests: [
      {
        method: 'GET',
        path: '/v1/me',
        setupRequest: (req) => ({ ...req, headers: { authorization: `Bearer ${madeUpKey()}` } }),
      },
    ],
  };
}

/** The request log's counters of a gateway, from its Prometheus text. */
async function logCounters(adminUrl: string, token: string) {
  const text = await (
    await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } })
  ).text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    written: value(/^redeem_gateway_request_log_rows_written_total (\d+)/m),
    cap: value(/^redeem_gateway_request_log_rows_dropped_total\{reason="cap"\} (\d+)/m),
    full: value(/^redeem_gateway_request_log_rows_dropped_total\{reason="buffer_full"\} (\d+)/m),
    failed: value(/^redeem_gateway_request_log_rows_dropped_total\{reason="write_failed"\} (\d+)/m),
  };
}

async function runGateway(
  kind: Flood,
  log: 'on' | 'off',
  o: { duration: number; flood: number; victims: number; postgres?: string; cap?: string },
): Promise<Row[]> {
  const settings: Record<string, string> = { READ_RATE_LIMIT: '9999999' };
  const cap = log === 'off' ? '1' : o.cap;
  if (cap) {
    settings.REQUEST_LOG_DAILY_CAP = cap;
    settings.REQUEST_LOG_UNIDENTIFIED_DAILY_CAP = cap;
  }
  const gw = await startGateway({
    settings,
    codeEncryptionKey: BENCH_KEY,
    ...(o.postgres ? { databaseUrl: o.postgres } : {}),
  });
  try {
    const [victimKey] = await createFixtures({
      adminUrl: gw.adminUrl,
      adminToken: gw.adminToken,
      customers: 1,
      keysPerCustomer: 1,
    });
    const victim = () =>
      autocannon({
        url: `${gw.publicUrl}/v1/me`,
        connections: o.victims,
        duration: o.duration,
        headers: { authorization: `Bearer ${victimKey}` },
      });
    const rows: Row[] = [];
    const label = `${kind} flood, log ${log === 'on' ? 'at its caps' : 'capped at 1'}`;
    for (const phase of ['quiet', 'flood'] as const) {
      const [v, f] = await Promise.all([
        victim(),
        phase === 'flood'
          ? autocannon({ ...floodOptions(kind, gw.publicUrl, o.flood), duration: o.duration })
          : Promise.resolve(undefined),
      ]);
      // The last batch is written within REQUEST_LOG_FLUSH_MS.
      await new Promise((r) => setTimeout(r, 1500));
      const c = await logCounters(gw.adminUrl, gw.adminToken);
      rows.push({
        name: `${label}: ${phase}`,
        victimRps: v.requests.average,
        victimP99: v.latency.p99,
        victimStatuses: statuses(v),
        floodRps: f?.requests.average ?? 0,
        floodStatuses: f ? statuses(f) : '',
        written: c.written,
        droppedCap: c.cap,
        droppedFull: c.full,
        droppedFailed: c.failed,
      });
    }
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
      victims: { type: 'string', default: '4' },
      postgres: { type: 'string' },
      cap: { type: 'string' },
      floods: { type: 'string', default: FLOODS.join(',') },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  const o = {
    duration: Number(values.duration),
    flood: Number(values.flood),
    victims: Number(values.victims),
    postgres: values.postgres,
    cap: values.cap,
  };
  const floods = values.floods.split(',').filter((f): f is Flood => (FLOODS as string[]).includes(f));
  const load = loadavg().map((l) => l.toFixed(2));
  const rows: Row[] = [];
  for (const kind of floods)
    for (const log of ['on', 'off'] as const) rows.push(...(await runGateway(kind, log, o)));
  console.log(
    `database: ${o.postgres ? 'PostgreSQL' : 'PGlite'}; caps ${o.cap ?? 'default'}; ${o.duration} s a phase; flood ${o.flood} connections, victim ${o.victims}; load average at start ${load.join(' ')}, at end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    '| phase | victim req/s | vs quiet | vs log capped at 1 | victim p99 ms | victim answers | flood req/s | flood answers | rows written | dropped: cap | buffer full | write failed |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const quiet = rows.find((q) => q.name === r.name.replace(/flood$/, 'quiet'))!;
    const off = rows.find((q) => q.name === r.name.replace('at its caps', 'capped at 1'));
    const vsOff = off && off !== r ? `${(r.victimRps / off.victimRps).toFixed(2)}×` : '';
    console.log(
      `| ${r.name} | ${r.victimRps.toFixed(0)} | ${(r.victimRps / quiet.victimRps).toFixed(2)}× | ${vsOff} | ${r.victimP99} | ${r.victimStatuses} | ${r.floodRps.toFixed(0)} | ${r.floodStatuses} | ${r.written} | ${r.droppedCap} | ${r.droppedFull} | ${r.droppedFailed} |`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
