// Event-log benchmark (npm run bench:events, docs/reference/webhooks-and-events.md#the-event-log, docs/reference/limits.md#read-budget): one
// merchant with 50,000 webhook events (2 % failed, the rest delivered). Measured, one request at a
// time: GET /v1/events (a page of 20, unfiltered) against GET /v1/events?state=failed (the same
// page size, filtered); then another merchant's GET /v1/stock latency, quiet and while the first
// merchant's key lists its failed events at its whole read budget (30 a second from 6
// connections). The gateway runs as a child process (PGlite, or PostgreSQL with --postgres: a
// new, empty database). Ratios only, against the same run: nothing is asserted.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { type Database, openPglite, openPostgres } from '../src/db/database.ts';
import { refuseUsedDatabase } from './database.ts';
import { createFixtures } from './fixtures.ts';
import { type Gateway, startGateway } from './gateway.ts';

const HELP = `npm run bench:events -- [options]

Options (defaults in brackets):
  --events=N          events of the listing merchant [50000]
  --requests=N        requests per list measurement [200]
  --duration=S        seconds of each /v1/stock phase [8]
  --postgres=URL      run on this new, empty PostgreSQL database instead of PGlite
  --help
`;

const BENCH_KEY = randomBytes(32).toString('base64');

async function latencies(url: string, key: string, n: number, pauseMs = 0) {
  const ms: number[] = [];
  const answers = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    const took = performance.now() - started;
    ms.push(took);
    answers.set(res.status, (answers.get(res.status) ?? 0) + 1);
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, Math.max(0, pauseMs - took)));
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => Math.round(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]! * 10) / 10;
  return { p50: at(0.5), p99: at(0.99), answers: [...answers].map(([s, c]) => `${s}×${c}`).join(' ') };
}

/** The listing merchant's events, written straight into the gateway's database (stopped, for PGlite). */
async function fillEvents(db: Database, customerId: number, jobId: string, n: number) {
  await db.query(
    `insert into webhook_events (id, customer_id, mode, job_id, event, created_at, state, attempts, next_attempt_at, finished_at)
     select 'evt_bench' || lpad(i::text, 20, '0'), $1, 'test', $2, 'redeem.completed',
            now() - make_interval(secs => $3 - i), case when i % 50 = 0 then 'dropped' else 'delivered' end,
            case when i % 50 = 0 then 4 else 1 end, now(), now()
       from generate_series(1, $3) i`,
    [customerId, jobId, n],
  );
  await db.query('analyze webhook_events');
}

async function main() {
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: '50000' },
      requests: { type: 'string', default: '200' },
      duration: { type: 'string', default: '8' },
      postgres: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void process.stdout.write(HELP);
  const o = {
    events: Number(values.events),
    requests: Number(values.requests),
    duration: Number(values.duration),
  };
  if (values.postgres) await refuseUsedDatabase(values.postgres);
  const start = (dataDir?: string) =>
    startGateway({
      codeEncryptionKey: BENCH_KEY,
      ...(values.postgres ? { databaseUrl: values.postgres } : {}),
      ...(dataDir ? { dataDir } : {}),
    });
  let gw: Gateway = await start();
  try {
    const [lister, victim] = await createFixtures({
      adminUrl: gw.adminUrl,
      adminToken: gw.adminToken,
      customers: 2,
      keysPerCustomer: 1,
    });
    const auth = (key: string) => ({ authorization: `Bearer ${key}` });
    const me = (await (await fetch(`${gw.publicUrl}/v1/me`, { headers: auth(lister!) })).json()) as {
      customer_id: number;
    };
    const job = await fetch(`${gw.publicUrl}/v1/redeem`, {
      method: 'POST',
      headers: { ...auth(lister!), 'content-type': 'application/json', 'idempotency-key': 'bench-events' },
      body: JSON.stringify({ player_id: '5123456789', codes: ['BENCH-EVENTS-1'], async: true }),
    });
    const { job_id: jobId } = (await job.json()) as { job_id: string };
    const filled = performance.now();
    if (values.postgres) {
      const db = await openPostgres(values.postgres, { max: 1 });
      await fillEvents(db, me.customer_id, jobId, o.events).finally(() => db.close());
    } else {
      await gw.stop();
      const db = await openPglite(join(gw.dataDir, 'pglite'));
      await fillEvents(db, me.customer_id, jobId, o.events).finally(() => db.close());
      gw = await start(gw.dataDir);
    }
    process.stderr.write(
      `${o.events} events written in ${((performance.now() - filled) / 1000).toFixed(1)} s\n`,
    );

    const list = `${gw.publicUrl}/v1/events?limit=20`;
    const failed = `${gw.publicUrl}/v1/events?limit=20&state=failed`;
    // Warm both plans and caches, then measure in turn (the machine drifts).
    await latencies(list, lister!, 20);
    await latencies(failed, lister!, 20);
    // Within the read budget: a pause between requests keeps a run of 200 under 300 per 10 s.
    const unfiltered = await latencies(list, lister!, o.requests / 2, 35);
    const filtered = await latencies(failed, lister!, o.requests / 2, 35);
    const unfiltered2 = await latencies(list, lister!, o.requests / 2, 35);
    const filtered2 = await latencies(failed, lister!, o.requests / 2, 35);

    const stockUrl = `${gw.publicUrl}/v1/stock`;
    const victimRuns = Math.round(o.duration * 20);
    const quiet = await latencies(stockUrl, victim!, victimRuns, 50);
    const [loaded, flood] = await Promise.all([
      latencies(stockUrl, victim!, victimRuns, 50),
      autocannon({
        url: failed,
        connections: 6,
        overallRate: 30,
        duration: o.duration,
        headers: auth(lister!),
      }),
    ]);
    const floodAnswers = Object.entries(flood.statusCodeStats)
      .map(([s, v]) => `${s}×${v.count}`)
      .join(' ');
    console.log(`database: ${values.postgres ? 'PostgreSQL' : 'PGlite'}; ${o.events} events of one merchant`);
    console.log('| measurement | p50 ms | p99 ms | answers | ratio |');
    console.log('|---|---|---|---|---|');
    const row = (name: string, r: { p50: number; p99: number; answers: string }, ratio: string) =>
      console.log(`| ${name} | ${r.p50} | ${r.p99} | ${r.answers} | ${ratio} |`);
    row('GET /v1/events (unfiltered), run 1', unfiltered, '1');
    row(
      'GET /v1/events?state=failed, run 1',
      filtered,
      `${(filtered.p50 / unfiltered.p50).toFixed(2)}× (p50)`,
    );
    row('GET /v1/events (unfiltered), run 2', unfiltered2, '1');
    row(
      'GET /v1/events?state=failed, run 2',
      filtered2,
      `${(filtered2.p50 / unfiltered2.p50).toFixed(2)}× (p50)`,
    );
    row("other merchant's GET /v1/stock, quiet", quiet, '1');
    row(
      `other merchant's GET /v1/stock, while state=failed is listed at ${flood.requests.average.toFixed(0)}/s (${floodAnswers})`,
      loaded,
      `${(loaded.p50 / quiet.p50).toFixed(2)}× (p50), ${(loaded.p99 / quiet.p99).toFixed(2)}× (p99)`,
    );
  } finally {
    await gw.stop();
    gw.remove();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
