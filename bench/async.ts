// Async benchmark (npm run bench:async): throughput of async redeems through the job worker, and
// webhook latency from a job's end to an HTTPS receiver. The gateway runs as a child process with
// SANDBOX_DELAY_MS (every sandbox activation waits that long, like a real upstream), so the
// worker's concurrency (4 jobs at once per process, 5 codes at once per job) sets a theoretical
// ceiling: 4 × 5 codes / 0.2 s = 100 codes/s per process. That ceiling is this benchmark's
// baseline; the ratio measured / ceiling is what to compare between runs. See bench/README.md.
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { checkSignature } from '../src/core/webhooks/signing.ts';
import { type Database, openPglite, openPostgres } from '../src/db/database.ts';
import { createFixtures } from './fixtures.ts';
import { type Gateway, startGateway } from './gateway.ts';
import { type JobTiming, readJobTimings } from './job-timings.ts';
import { machineCpu, processCpuSeconds } from './processes.ts';
import { api } from './requests.ts';
import { createTestCa, type Delivery, startWebhookReceiver, type TestCa } from './webhook-receiver.ts';

const HELP = `npm run bench:async -- [options]

Options (defaults in brackets):
  --jobs=N               async redeems in the throughput run [200]
  --codes=N              codes per redeem, 1 to 50 [5]
  --pglite-jobs=N        async redeems on PGlite [same as --jobs]
  --delay=MS             SANDBOX_DELAY_MS: each sandbox activation takes this long [200]
  --sparse=N             then N more jobs one at a time (next after the last one's webhook and a
                         random 0-300 ms pause): webhook latency without load [20]
  --submitters=N         redeem requests in flight at once while submitting [8]
  --customers=N          bench customers, one test key and one webhook each [at least jobs/20]
                         (the burst limit is 30 redeems per key per sliding 10 s)
  --postgres=URL         run on this PostgreSQL database [DATABASE_URL if set]; use a throwaway
                         database: the run migrates it and creates customers, keys and jobs in it
  --processes=LIST       server processes on PostgreSQL, one scenario each [1,2]
  --skip-pglite          do not run on the embedded database
  --timeout=S            give up waiting for the jobs' webhooks after S seconds [300]
  --help
`;

/** The job worker's defaults (src/core/jobs/worker.ts, src/core/redeem/start.ts CODE_CONCURRENCY). */
const JOBS_PER_PROCESS = 4;
const CODES_PER_JOB = 5;

interface Options {
  jobs: number;
  pgliteJobs: number;
  codes: number;
  delayMs: number;
  sparse: number;
  submitters: number;
  customers: number | undefined;
  postgres: string | undefined;
  processes: number[];
  pglite: boolean;
  timeoutS: number;
}

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      jobs: { type: 'string', default: '200' },
      'pglite-jobs': { type: 'string' },
      codes: { type: 'string', default: '5' },
      delay: { type: 'string', default: '200' },
      sparse: { type: 'string', default: '20' },
      submitters: { type: 'string', default: '8' },
      customers: { type: 'string' },
      postgres: { type: 'string' },
      processes: { type: 'string', default: '1,2' },
      'skip-pglite': { type: 'boolean', default: false },
      timeout: { type: 'string', default: '300' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return null;
  const int = (name: string, raw: string, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new Error(`--${name} must be an integer from ${min} to ${max}`);
    return n;
  };
  const postgres = values.postgres ?? (process.env['DATABASE_URL'] || undefined);
  if (postgres !== undefined && !/^postgres(ql)?:\/\//.test(postgres)) {
    throw new Error('--postgres must be a postgres:// URL');
  }
  const jobs = int('jobs', values.jobs, 1);
  return {
    jobs,
    pgliteJobs: values['pglite-jobs'] === undefined ? jobs : int('pglite-jobs', values['pglite-jobs'], 1),
    codes: int('codes', values.codes, 1, 50),
    delayMs: int('delay', values.delay, 0, 9_999_999),
    sparse: int('sparse', values.sparse, 0),
    submitters: int('submitters', values.submitters, 1),
    customers: values.customers === undefined ? undefined : int('customers', values.customers, 1),
    postgres,
    processes: values.processes.split(',').map((p) => int('processes', p.trim(), 1, 16)),
    pglite: !values['skip-pglite'],
    timeoutS: int('timeout', values.timeout, 1),
  };
}

interface Scenario {
  database: 'pglite' | 'postgres';
  processes: number;
  jobs: number;
}

interface Submitted {
  jobId: string;
  keyIndex: number;
  phase: 'load' | 'sparse';
  /** Date.now() when the 202 had arrived. */
  acceptedAt: number;
  acceptMs: number;
}

interface Stats {
  n: number;
  p50: number;
  p95: number;
  max: number;
  mean: number;
}

interface LatencyRow {
  phase: 'load' | 'sparse';
  measure: string;
  stats: Stats;
}

interface Result {
  scenario: Scenario;
  label: string;
  codes: number;
  startSeconds: number;
  fixtureSeconds: number;
  submitSeconds: number;
  acceptMs: Stats;
  retried429: number;
  windowSeconds: number;
  windowToWebhookSeconds: number;
  jobsPerSecond: number;
  codesPerSecond: number;
  ceilingCodesPerSecond: number;
  queueWaitMs: Stats;
  jobRunMs: Stats;
  codeMs: Stats;
  slotUse: number;
  serverCpu: number;
  benchCpu: number;
  cpuMsPerCode: number;
  machineCpu: number;
  problems: string[];
  latencies: LatencyRow[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function stats(values: number[]): Stats {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return { n: 0, p50: Number.NaN, p95: Number.NaN, max: Number.NaN, mean: Number.NaN };
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  const at = (p: number) => v[Math.max(0, Math.ceil((p / 100) * v.length) - 1)]!;
  return {
    n: v.length,
    p50: at(50),
    p95: at(95),
    max: v.at(-1)!,
    mean: v.reduce((a, b) => a + b, 0) / v.length,
  };
}

async function runScenario(o: Options, sc: Scenario, ca: TestCa): Promise<Result> {
  const label = `${sc.database}${sc.processes > 1 ? ` ×${sc.processes} processes` : ''}`;
  const problems: string[] = [];
  const receiver = await startWebhookReceiver(ca);
  const shared = {
    codeEncryptionKey: randomBytes(32).toString('base64'),
    adminToken: `adm_bench_${randomBytes(16).toString('hex')}`,
    settings: {
      SANDBOX_DELAY_MS: String(o.delayMs),
      NODE_EXTRA_CA_CERTS: ca.caFile,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    },
    ...(sc.database === 'postgres' ? { databaseUrl: o.postgres! } : {}),
  };
  const gateways: Gateway[] = [];
  try {
    // The first process migrates; the others start once it answers.
    gateways.push(await startGateway(shared));
    for (let p = 1; p < sc.processes; p++) gateways.push(await startGateway(shared));
    const startSeconds = gateways[0]!.startSeconds;

    // Fixtures: customers with one test key each, and one webhook registration per customer.
    const fixturesStarted = Date.now();
    const customers = o.customers ?? Math.max(10, Math.ceil((sc.jobs + o.sparse) / 20));
    const keys = await createFixtures({
      adminUrl: gateways[0]!.adminUrl,
      adminToken: gateways[0]!.adminToken,
      customers,
      keysPerCustomer: 1,
    });
    const secrets: string[] = [];
    for (const key of keys) {
      const r = await api(`${gateways[0]!.publicUrl}/v1/webhook`, key, 'POST', { url: receiver.url });
      if (r.status !== 200) throw new Error(`POST /v1/webhook: ${r.status} ${JSON.stringify(r.body)}`);
      secrets.push(String(r.body['secret']));
    }
    const fixtureSeconds = (Date.now() - fixturesStarted) / 1000;
    process.stderr.write(
      `${label}: ready in ${startSeconds.toFixed(1)} s; ${keys.length} customers with a key and a webhook ` +
        `in ${fixtureSeconds.toFixed(1)} s\n`,
    );

    // Webhooks by job id, and waiters for the sparse phase.
    const received = new Map<string, Delivery>();
    const waiting = new Map<string, () => void>();
    receiver.onDelivery = (d) => {
      try {
        const envelope = JSON.parse(d.raw.toString('utf8')) as { event?: string; data?: { job_id?: string } };
        const jobId = envelope.data?.job_id;
        if (!jobId) return;
        if (envelope.event !== 'redeem.completed') problems.push(`${jobId}: ${envelope.event}`);
        if (received.has(jobId)) problems.push(`${jobId}: delivered twice`);
        else received.set(jobId, d);
        waiting.get(jobId)?.();
      } catch {
        problems.push('a delivery whose body is not JSON');
      }
    };

    // Unique per run: codes never seen by the sandbox (digits and the letters J, C only, so
    // no sandbox trigger word) and Idempotency-Keys never used.
    const runTag = `${Date.now()}${randomBytes(2).readUInt16BE()}`;
    let retried429 = 0;
    const submit = async (n: number, phase: Submitted['phase']): Promise<Submitted> => {
      const keyIndex = n % keys.length;
      const gateway = gateways[n % gateways.length]!;
      const body = {
        player_id: '5123456789',
        codes: Array.from({ length: o.codes }, (_, k) => `BENCH${runTag}J${n}C${k}`),
        async: true,
        reference: `bench-${n}`,
      };
      for (;;) {
        const t0 = performance.now();
        const r = await api(`${gateway.publicUrl}/v1/redeem`, keys[keyIndex]!, 'POST', body, {
          'idempotency-key': `bench-async-${runTag}-${n}`,
        });
        const acceptedAt = Date.now();
        const acceptMs = performance.now() - t0;
        if (r.status === 202)
          return { jobId: String(r.body['job_id']), keyIndex, phase, acceptedAt, acceptMs };
        if (r.status === 429) {
          retried429 += 1;
          await sleep(1000 * Number(r.body['retry_after_sec'] ?? 1));
          continue;
        }
        throw new Error(`POST /v1/redeem: ${r.status} ${JSON.stringify(r.body)}`);
      }
    };

    // 1. Throughput: submit every job as fast as `submitters` requests in flight allow.
    const pids = gateways.map((g) => g.child.pid);
    const cpu0 = pids.map(processCpuSeconds);
    const machine0 = machineCpu();
    const bench0 = process.cpuUsage();
    const t0 = Date.now();
    const submitted: Submitted[] = new Array(sc.jobs);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(o.submitters, sc.jobs) }, async () => {
        while (next < sc.jobs) {
          const n = next++;
          submitted[n] = await submit(n, 'load');
        }
      }),
    );
    const firstAccepted = Math.min(...submitted.map((s) => s.acceptedAt));
    const lastAccepted = Math.max(...submitted.map((s) => s.acceptedAt));
    process.stderr.write(
      `${label}: ${sc.jobs} jobs accepted in ${((lastAccepted - t0) / 1000).toFixed(1)} s; waiting for webhooks\n`,
    );
    const deadline = Date.now() + o.timeoutS * 1000;
    while (submitted.some((s) => !received.has(s.jobId)) && Date.now() < deadline) await sleep(50);
    const cpu1 = pids.map(processCpuSeconds);
    const machine1 = machineCpu();
    const bench1 = process.cpuUsage(bench0);
    const t1 = Date.now();
    const missing = submitted.filter((s) => !received.has(s.jobId)).length;
    if (missing) problems.push(`${missing} jobs without a webhook after ${o.timeoutS} s`);

    // 2. Webhook latency without load: one job at a time.
    const sparse: Submitted[] = [];
    for (let i = 0; i < o.sparse; i++) {
      await sleep(Math.random() * 300);
      const s = await submit(sc.jobs + i, 'sparse');
      sparse.push(s);
      if (!received.has(s.jobId)) {
        await Promise.race([new Promise<void>((r) => waiting.set(s.jobId, r)), sleep(30_000)]);
        if (!received.has(s.jobId)) problems.push(`sparse job ${s.jobId} without a webhook after 30 s`);
      }
    }

    // Every job through the public API: completed, every code activated; finished_at as the API gives it.
    const all = [...submitted, ...sparse];
    const apiFinished = new Map<string, number>();
    let checked = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (checked < all.length) {
          const s = all[checked++]!;
          const r = await api(`${gateways[0]!.publicUrl}/v1/jobs/${s.jobId}`, keys[s.keyIndex]!, 'GET');
          const result = r.body['result'] as { summary?: { activated?: number } } | null;
          if (
            r.status !== 200 ||
            r.body['status'] !== 'completed' ||
            result?.summary?.activated !== o.codes
          ) {
            problems.push(
              `${s.jobId}: ${r.status} ${String(r.body['status'])} ${JSON.stringify(result?.summary)}`,
            );
          }
          if (typeof r.body['finished_at'] === 'string')
            apiFinished.set(s.jobId, Date.parse(r.body['finished_at']));
        }
      }),
    );

    // Signatures, each with its own customer's secret.
    const byJob = new Map(all.map((s) => [s.jobId, s]));
    let badSignatures = 0;
    for (const [jobId, d] of received) {
      const s = byJob.get(jobId);
      if (!s) continue;
      const verdict = checkSignature(secrets[s.keyIndex]!, d.headers['svc-signature'] as string, d.raw, {
        nowSec: Math.floor(d.receivedAt / 1000),
      });
      if (verdict !== null) badSignatures += 1;
    }
    if (badSignatures) problems.push(`${badSignatures} deliveries with a bad signature`);

    // Millisecond timings from the database (PGlite: once the server has let go of it).
    await Promise.all(gateways.map((g) => g.stop()));
    const db: Database =
      sc.database === 'postgres'
        ? await openPostgres(o.postgres!, { max: 1 })
        : await openPglite(join(gateways[0]!.dataDir, 'pglite'));
    let timings: Map<string, JobTiming>;
    try {
      timings = await readJobTimings(db);
    } finally {
      await db.close();
    }

    const t = (s: Submitted) => timings.get(s.jobId);
    const loadT = submitted.map(t).filter((x): x is JobTiming => x !== undefined);
    const lastFinished = Math.max(...loadT.map((x) => x.finishedAt ?? Number.NaN));
    const lastWebhook = Math.max(...submitted.map((s) => received.get(s.jobId)?.receivedAt ?? Number.NaN));
    const windowSeconds = (lastFinished - firstAccepted) / 1000;
    const jobRun = loadT.map((x) => (x.finishedAt ?? Number.NaN) - (x.startedAt ?? Number.NaN));
    const perJobSeconds = Math.ceil(o.codes / CODES_PER_JOB) * (o.delayMs / 1000);
    const ceilingJobs = (sc.processes * JOBS_PER_PROCESS) / perJobSeconds;
    const cpuSeconds = cpu1.reduce((a, c, i) => a + c - cpu0[i]!, 0);

    const latencies: LatencyRow[] = [];
    for (const [phase, list] of [
      ['load', submitted],
      ['sparse', sparse],
    ] as const) {
      if (list.length === 0) continue;
      const rows = list.map((s) => ({ s, d: received.get(s.jobId), x: t(s) }));
      const measure = (name: string, f: (r: (typeof rows)[number]) => number | null | undefined) =>
        latencies.push({
          phase,
          measure: name,
          stats: stats(rows.map((r) => (r.d && r.x ? (f(r) ?? Number.NaN) : Number.NaN))),
        });
      measure('received − finished_at (database, ms)', (r) => r.d!.receivedAt - r.x!.finishedAt!);
      measure(
        '  event row → first attempt started',
        (r) => (r.x!.attemptStartedAt ?? Number.NaN) - r.x!.eventCreatedAt!,
      );
      measure(
        '  first attempt started → received',
        (r) => r.d!.receivedAt - (r.x!.attemptStartedAt ?? Number.NaN),
      );
      measure(
        'received − finished_at (API, whole s)',
        (r) => r.d!.receivedAt - (apiFinished.get(r.s.jobId) ?? Number.NaN),
      );
      measure('received − envelope created_at (whole s)', (r) => {
        const envelope = JSON.parse(r.d!.raw.toString('utf8')) as { created_at: number };
        return r.d!.receivedAt - envelope.created_at * 1000;
      });
      if (phase === 'sparse') {
        measure('received − 202 received (end to end)', (r) => r.d!.receivedAt - r.s.acceptedAt);
        measure('  of which job run (started → finished)', (r) => r.x!.finishedAt! - r.x!.startedAt!);
      }
    }

    return {
      scenario: sc,
      label,
      codes: o.codes,
      startSeconds,
      fixtureSeconds,
      submitSeconds: (lastAccepted - firstAccepted) / 1000,
      acceptMs: stats(submitted.map((s) => s.acceptMs)),
      retried429,
      windowSeconds,
      windowToWebhookSeconds: (lastWebhook - firstAccepted) / 1000,
      jobsPerSecond: loadT.length / windowSeconds,
      codesPerSecond: (loadT.length * o.codes) / windowSeconds,
      ceilingCodesPerSecond: ceilingJobs * o.codes,
      queueWaitMs: stats(loadT.map((x) => (x.startedAt ?? Number.NaN) - x.createdAt)),
      jobRunMs: stats(jobRun),
      codeMs: stats(loadT.flatMap((x) => x.codeMs)),
      // Share of the worker slots' time (jobs at once × processes × window) spent running a job.
      slotUse: jobRun.reduce((a, b) => a + b, 0) / (windowSeconds * 1000 * JOBS_PER_PROCESS * sc.processes),
      serverCpu: (100 * cpuSeconds) / ((t1 - t0) / 1000),
      benchCpu: (bench1.user + bench1.system) / 10 / (t1 - t0),
      cpuMsPerCode: (1000 * cpuSeconds) / (sc.jobs * o.codes),
      machineCpu: (100 * (machine1.busy - machine0.busy)) / (machine1.total - machine0.total),
      problems,
      latencies,
    };
  } finally {
    await Promise.all(gateways.map((g) => g.stop()));
    for (const g of gateways) g.remove();
    await receiver.close();
  }
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const format = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [format(header), format(widths.map((w) => '-'.repeat(w))), ...rows.map(format)];
}

const f0 = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : '?');
const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '?');

function printResults(o: Options, results: Result[], meta: { loadStart: number[]; loadEnd: number[] }) {
  const throughput = table(
    [
      'database',
      'jobs × codes',
      'window s',
      'jobs/s',
      'codes/s',
      'ceiling codes/s',
      'vs ceiling',
      'queue wait p50/p95 ms',
      'job run p50/p95/mean ms',
      'code p50/p95 ms',
      'slot use',
      'server CPU',
      'bench CPU',
      'CPU ms/code',
      'machine CPU',
    ],
    results.map((r) => [
      r.label,
      `${r.scenario.jobs} × ${r.codes}`,
      r.windowSeconds.toFixed(2),
      f1(r.jobsPerSecond),
      f1(r.codesPerSecond),
      f0(r.ceilingCodesPerSecond),
      (r.codesPerSecond / r.ceilingCodesPerSecond).toFixed(2),
      `${f0(r.queueWaitMs.p50)} / ${f0(r.queueWaitMs.p95)}`,
      `${f0(r.jobRunMs.p50)} / ${f0(r.jobRunMs.p95)} / ${f0(r.jobRunMs.mean)}`,
      `${f0(r.codeMs.p50)} / ${f0(r.codeMs.p95)}`,
      `${(100 * r.slotUse).toFixed(0)}%`,
      `${f0(r.serverCpu)}%`,
      `${f0(r.benchCpu)}%`,
      r.cpuMsPerCode.toFixed(2),
      `${f0(r.machineCpu)}%`,
    ]),
  );
  const latency = table(
    ['database', 'phase', 'measure', 'n', 'p50 ms', 'p95 ms', 'max ms'],
    results.flatMap((r) =>
      r.latencies.map((l) => [
        r.label,
        l.phase,
        l.measure,
        String(l.stats.n),
        f0(l.stats.p50),
        f0(l.stats.p95),
        f0(l.stats.max),
      ]),
    ),
  );
  const out = [
    '',
    `Redeem Gateway async benchmark, ${new Date().toISOString()}`,
    `node ${process.version}, load average ${meta.loadStart.map((n) => n.toFixed(2)).join(' ')} at start, ` +
      `${meta.loadEnd.map((n) => n.toFixed(2)).join(' ')} at end`,
    `SANDBOX_DELAY_MS=${o.delayMs}; worker: ${JOBS_PER_PROCESS} jobs at once per process, ${CODES_PER_JOB} codes at once per job; ` +
      `${o.submitters} redeem requests in flight while submitting`,
    'window: first 202 → last job finished_at (database, ms). ceiling: processes × 4 jobs × codes / ' +
      '(ceil(codes / 5) × delay). slot use: time jobs ran / (window × 4 × processes).',
    'server CPU: the gateway processes, % of one core, from first submit to last webhook ' +
      "(PostgreSQL's own processes not included); bench CPU: this process (submitter and receiver), " +
      '% of one core; CPU ms/code: server CPU time / codes; machine CPU: all processes, % of all cores',
    '',
    ...throughput,
    '',
    ...results.map(
      (r) =>
        `${r.label}: server start ${r.startSeconds.toFixed(1)} s, fixtures ${r.fixtureSeconds.toFixed(1)} s; ` +
        `${r.scenario.jobs} jobs accepted in ${r.submitSeconds.toFixed(2)} s (202 p50 ${f0(r.acceptMs.p50)} ms, ` +
        `p95 ${f0(r.acceptMs.p95)} ms), ${r.retried429} × 429 retried; last webhook ` +
        `${r.windowToWebhookSeconds.toFixed(2)} s after the first 202`,
    ),
    '',
    ...latency,
    '',
    ...results.flatMap((r) => r.problems.slice(0, 20).map((p) => `problem on ${r.label}: ${p}`)),
    '',
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}

async function main() {
  const o = parseOptions(process.argv.slice(2));
  if (!o) {
    process.stdout.write(HELP);
    return;
  }
  const scenarios: Scenario[] = [];
  if (o.pglite) scenarios.push({ database: 'pglite', processes: 1, jobs: o.pgliteJobs });
  if (o.postgres) {
    for (const processes of o.processes) scenarios.push({ database: 'postgres', processes, jobs: o.jobs });
  } else process.stderr.write('postgres: skipped (set DATABASE_URL or --postgres=URL)\n');
  const loadStart = loadavg();
  const ca = createTestCa();
  const results: Result[] = [];
  try {
    for (const sc of scenarios) results.push(await runScenario(o, sc, ca));
  } finally {
    ca.remove();
  }
  printResults(o, results, { loadStart, loadEnd: loadavg() });
  if (results.some((r) => r.problems.length)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
