// The process: config → database → migrations → apps + workers → listen; graceful stop.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { createHttpActivator } from './activators/http.ts';
import { createSandboxActivator } from './activators/sandbox.ts';
import type { Config } from './config.ts';
import { createCustomer, setPlan } from './core/accounts/accounts.ts';
import { type BackgroundLoop, startBackgroundLoop } from './core/background-loop.ts';
import { checkQuarantined } from './core/billing/quarantine.ts';
import { appendLedger } from './core/billing/wallet.ts';
import { type Clock, systemClock } from './core/clock.ts';
import type { AppContext } from './core/context.ts';
import { randomBase62 } from './core/ids.ts';
import { INSTANCE_ID, SWEEP_MS } from './core/instance.ts';
import { recoverOrphanedJobs } from './core/jobs/recovery.ts';
import { type JobWorker, startJobWorker } from './core/jobs/worker.ts';
import { issueKey } from './core/keys/keys.ts';
import { purgeExpiredKeys } from './core/redeem/idempotency-keys.ts';
import { CATEGORIES } from './core/stock/catalog.ts';
import { importStock } from './core/stock/stock.ts';
import { sweepRetention } from './core/sweeper/retention.ts';
import { startWebhookWorker, type WebhookWorker } from './core/webhooks/delivery.ts';
import { configureWebhookResolver } from './core/webhooks/resolver.ts';
import {
  type Database,
  describeConnectionError,
  isConnectionError,
  openDatabase,
  withoutDeadlines,
} from './db/database.ts';
import { type Listener, processApplicationName, startListener } from './db/listener.ts';
import { migrate } from './db/migrate.ts';
import { buildAdminApp } from './http/admin-app.ts';
import type { ServerContext } from './http/context.ts';
import { type Draining, installDraining } from './http/draining.ts';
import { API_VERSION, buildPublicApp } from './http/public-app.ts';
import { createLogger } from './logger.ts';
import { instrumentActivator } from './metrics/activator-metrics.ts';
import { createMetrics } from './metrics/registry.ts';
import { registerAdminRoutes } from './routes/admin/index.ts';
import { registerPublicRoutes } from './routes/public.ts';

export const ADMIN_TOKEN_FILE = 'admin-token';
export const ENCRYPTION_KEY_FILE = 'code-encryption.key';

/**
 * Creates a directory of the data directory readable by this user only (0700, contract 12.7):
 * it holds the embedded database, the admin token and the code encryption key. An existing
 * directory is left as the operator made it.
 */
export function ensurePrivateDir(dir: string): void {
  if (existsSync(dir)) return;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700); // whatever the umask
}

/** Reads a secret file of the data directory, creating it (mode 0600) on first use. */
export function readOrCreateSecret(dataDir: string, file: string, create: () => string): string {
  const path = join(dataDir, file);
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  ensurePrivateDir(dataDir);
  const value = create();
  writeFileSync(path, `${value}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return value;
}

/**
 * The sweeper's passes, run together every SWEEP_MS by one background loop. Another periodic
 * task is one more entry here. A pass that fails is logged and retried at the next sweep; while
 * the database is away the whole sweep backs off.
 */
export interface SweepPass {
  name: string;
  run(ctx: AppContext): Promise<unknown>;
}

export const SWEEP_PASSES: SweepPass[] = [
  // Jobs whose process stopped (their lease ran out): settled as interrupted.
  { name: 'job recovery', run: (ctx) => recoverOrphanedJobs(ctx, { all: false }) },
  { name: 'idempotency key purge', run: (ctx) => purgeExpiredKeys(ctx.db, ctx.clock.now()) },
  { name: 'quarantine check', run: (ctx) => checkQuarantined(ctx) },
  // Code ciphertexts of old finished jobs, old webhook events (contract 12.2).
  {
    name: 'retention',
    run: (ctx) => sweepRetention(ctx.db, ctx.clock, ctx.config.RETENTION_DAYS),
  },
];

/** One sweep: every pass at once; throws (so the loop backs off) when the database is away. */
export async function sweepOnce(ctx: AppContext, passes: readonly SweepPass[] = SWEEP_PASSES): Promise<void> {
  const results = await Promise.allSettled(passes.map((p) => p.run(ctx)));
  let lost: unknown;
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') return;
    if (isConnectionError(r.reason)) lost ??= r.reason;
    else ctx.logger.error({ err: r.reason, pass: passes[i]!.name }, `sweep pass "${passes[i]!.name}" failed`);
  });
  if (lost) throw lost;
}

export class DatabaseUnreachableError extends Error {
  override name = 'DatabaseUnreachableError';
}

export interface Running {
  ctx: ServerContext;
  publicApp: FastifyInstance;
  adminApp: FastifyInstance;
  publicUrl: string;
  adminUrl: string;
  /**
   * Graceful stop (contract 12.4): stops accepting, answers new requests on open connections
   * with 503 unavailable, lets requests in flight and running jobs finish for up to
   * SHUTDOWN_GRACE_MS, then closes everything. Calling it again returns the same promise.
   */
  stop(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
  /** Print the demo key and curl line when a new embedded database is seeded (npm start). */
  announce?: boolean;
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<Running> {
  const logger = opts.logger ?? createLogger(config.LOG_LEVEL);
  const clock = opts.clock ?? systemClock;
  const dataDir = resolve(config.DATA_DIR);
  const adminToken =
    config.ADMIN_TOKEN ??
    readOrCreateSecret(dataDir, ADMIN_TOKEN_FILE, () => `adm_${randomBytes(24).toString('base64url')}`);

  const codeKey = Buffer.from(
    config.CODE_ENCRYPTION_KEY ??
      readOrCreateSecret(dataDir, ENCRYPTION_KEY_FILE, () => randomBytes(32).toString('base64')),
    'base64',
  );
  if (codeKey.length !== 32)
    throw new Error(`${join(dataDir, ENCRYPTION_KEY_FILE)} must hold 32 bytes of base64`);

  if (!config.DATABASE_URL) ensurePrivateDir(join(dataDir, 'pglite'));
  configureWebhookResolver(config);
  // PostgreSQL unreachable at start: one clear line and a non-zero exit (the supervisor restarts
  // the process); once running, losing the database never stops it (contract 12.3).
  let lastConnectionLog = 0;
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: join(dataDir, 'pglite'),
    postgres: {
      max: config.DATABASE_POOL_MAX,
      connectTimeoutMs: config.DATABASE_TIMEOUT_MS,
      statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
      idleInTransactionTimeoutMs: config.DATABASE_IDLE_TX_TIMEOUT_MS,
      // Names this process's writes in its wake-up notifications (src/db/listener.ts).
      applicationName: processApplicationName(INSTANCE_ID),
      onConnectionError(err) {
        // Every pooled connection dies at once in a failover: one line a second is enough.
        if (Date.now() - lastConnectionLog < 1000) return;
        lastConnectionLog = Date.now();
        logger.warn({ err }, 'database connection lost');
      },
    },
  }).catch((err: unknown) => {
    if (config.DATABASE_URL && isConnectionError(err))
      throw new DatabaseUnreachableError(
        `database unreachable at start (${describeConnectionError(err)}); check DATABASE_URL and that PostgreSQL is up`,
        { cause: err },
      );
    throw err;
  });
  let publicApp: FastifyInstance | undefined;
  let adminApp: FastifyInstance | undefined;
  let webhookWorker: WebhookWorker | undefined;
  let worker: JobWorker | undefined;
  let sweeper: BackgroundLoop | undefined;
  let listener: Listener | undefined;
  try {
    // A migration may build an index on a large table or wait for another process's lock.
    const applied = await migrate(withoutDeadlines(db));
    if (applied.length) logger.info({ applied }, 'migrations applied');
    const sandbox = createSandboxActivator({
      db,
      codeKey,
      clock,
      slowMs: config.SANDBOX_SLOW_MS,
      delayMs: config.SANDBOX_DELAY_MS,
    });
    if (config.ACTIVATOR === 'sandbox' && config.DATABASE_URL)
      logger.warn(
        'ACTIVATOR=sandbox on PostgreSQL: live keys are served by the sandbox, which activates nothing for real; set ACTIVATOR=http for production',
      );
    // Live keys only: test keys always use the sandbox (contract section 9).
    const http =
      config.ACTIVATOR === 'http'
        ? createHttpActivator({
            url: config.ACTIVATOR_URL!,
            key: config.ACTIVATOR_KEY,
            timeoutMs: config.ACTIVATOR_TIMEOUT_MS,
            concurrency: config.ACTIVATOR_CONCURRENCY,
            logger,
          })
        : undefined;
    // One registry for the process; activator calls are counted through a decorator.
    const metrics = createMetrics({ db });
    const test = instrumentActivator(metrics, sandbox);
    const live = http ? instrumentActivator(metrics, http) : test;
    const ctx: ServerContext = {
      db,
      config,
      clock,
      logger,
      adminToken,
      codeKey,
      activatorFor: (mode) => (mode === 'live' ? live : test),
      jobs: { wake: () => worker?.wake() },
      metrics,
    };
    const demo = db.kind === 'pglite' ? await seedDemo(db, clock, codeKey) : null;

    // Jobs whose process stopped: on the embedded database only this process runs, so every
    // running job is orphaned and is settled before the first request is answered.
    await recoverOrphanedJobs(ctx, { all: db.kind === 'pglite' });
    sweeper = startBackgroundLoop({
      name: 'sweeper',
      intervalMs: SWEEP_MS,
      initialDelayMs: SWEEP_MS,
      logger,
      pass: () => sweepOnce(ctx),
    });
    webhookWorker = startWebhookWorker(ctx, { pollMs: config.WORKER_POLL_MS });
    worker = startJobWorker(ctx, {
      concurrency: config.JOB_CONCURRENCY,
      codeConcurrency: config.CODE_CONCURRENCY,
      pollMs: config.WORKER_POLL_MS,
      onJobEnded: () => webhookWorker?.wake(),
    });
    // Woken by every process's writes (PostgreSQL; on the embedded database this process is the
    // only one, and it wakes its own workers).
    if (db.kind === 'postgres' && config.DATABASE_URL)
      listener = startListener({
        url: config.DATABASE_URL,
        channels: {
          redeem_job_queued: () => worker?.wake(),
          redeem_webhook_event: () => webhookWorker?.wake(),
        },
        logger,
        connectTimeoutMs: config.DATABASE_TIMEOUT_MS,
        // This process wakes its own workers when it writes; only the others' writes matter here.
        ignoreFrom: processApplicationName(INSTANCE_ID),
      });

    publicApp = await buildPublicApp(ctx, registerPublicRoutes);
    adminApp = await buildAdminApp(ctx, registerAdminRoutes);
    const draining: Draining[] = [
      installDraining(publicApp.server, {
        'SVC-Version': API_VERSION,
        'SVC-Cost': '0',
        'SVC-Idempotent-Replay': 'false',
      }),
      installDraining(adminApp.server),
    ];
    const publicUrl = await publicApp.listen({ host: config.HOST, port: config.PORT });
    const adminUrl = await adminApp.listen({ host: config.ADMIN_HOST, port: config.ADMIN_PORT });
    if (opts.announce)
      announce({ publicUrl, adminUrl, demo, dataDir, tokenFromEnv: Boolean(config.ADMIN_TOKEN), db });

    const apps = [publicApp, adminApp];
    let stopping: Promise<void> | undefined;
    const stop = async () => {
      const started = Date.now();
      const left = () => Math.max(0, config.SHUTDOWN_GRACE_MS - (Date.now() - started));
      // Stop accepting (Fastify closes the listening sockets and idle connections); a new request
      // on a connection still open gets the contract's 503 from the draining gate.
      for (const d of draining) d.start();
      const closed = Promise.allSettled(apps.map((a) => a.close()));
      const [stillRunning] = await Promise.all([
        worker!.stop(left()),
        sweeper!.stop(),
        withDeadline(Promise.all(draining.map((d) => d.idle())), left()),
      ]);
      const unanswered = draining.reduce((n, d) => n + d.inFlight(), 0);
      if (stillRunning > 0 || unanswered > 0)
        logger.warn(
          { jobs: stillRunning, requests: unanswered },
          'grace period over: left to recovery as after a crash',
        );
      // Connections kept alive by clients that send nothing more would hold the close forever.
      for (const a of apps) a.server.closeAllConnections();
      await closed;
      await listener?.stop();
      await webhookWorker!.stop();
      await http?.close();
      await db.close();
    };
    const running: Running = {
      ctx,
      publicApp,
      adminApp,
      publicUrl,
      adminUrl,
      stop() {
        stopping ??= stop();
        return stopping;
      },
    };
    return running;
  } catch (err) {
    await Promise.allSettled([
      sweeper?.stop(),
      publicApp?.close(),
      adminApp?.close(),
      worker?.stop(0),
      webhookWorker?.stop(),
      listener?.stop(),
    ]);
    await db.close().catch(() => undefined);
    throw err;
  }
}

/** Waits for `p` for at most `ms`. */
async function withDeadline(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

/** Test-mode stock codes the demo customer gets in each catalog category (packs and uc work at once). */
export const DEMO_STOCK_PER_CATEGORY = 5;

/** A random code part without a sandbox marker (USED, FAIL, …), so every demo code activates. */
function demoSuffix(): string {
  for (;;) {
    const suffix = randomBase62(12);
    if (!/USED|INVALID|FAIL|TIMEOUT|SLOW/i.test(suffix)) return suffix;
  }
}

/**
 * On a new embedded database: a demo customer with a plan, a funded test wallet, a test key and a
 * few test-mode stock codes in each category (random, so the sandbox has never seen them).
 */
async function seedDemo(
  db: Database,
  clock: Clock,
  codeKey: Buffer,
): Promise<{ customerId: number; key: string } | null> {
  return db.transaction(async (tx) => {
    const existing = await tx.query('select 1 from customers limit 1');
    if (existing.rows.length > 0) return null;
    const customerId = await createCustomer(tx, 'Demo merchant', clock);
    await setPlan(
      tx,
      customerId,
      { label: 'demo', dailyLimit: 100, perRequestMicros: 10_000, overage: true, active: true },
      clock,
    );
    await appendLedger(
      tx,
      { customerId, mode: 'test', amountMicros: 10_000_000, kind: 'topup', note: 'demo credit' },
      clock,
    );
    for (const category of CATEGORIES) {
      const codes = Array.from({ length: DEMO_STOCK_PER_CATEGORY }, () => `DEMO-${category}-${demoSuffix()}`);
      await importStock(tx, codeKey, { customerId, mode: 'test', category, codes }, clock);
    }
    const { key } = await issueKey(
      tx,
      customerId,
      { mode: 'test', scopes: ['redeem', 'read'], allowedIps: [], expiresAt: null, label: 'demo' },
      clock,
    );
    return { customerId, key };
  });
}

function announce(a: {
  publicUrl: string;
  adminUrl: string;
  demo: { customerId: number; key: string } | null;
  dataDir: string;
  tokenFromEnv: boolean;
  db: Database;
}) {
  const lines = [
    '',
    `Redeem Gateway is running (${a.db.kind === 'pglite' ? `embedded database in ${a.dataDir}` : 'PostgreSQL'}).`,
    `  public API: ${a.publicUrl}`,
    `  admin API:  ${a.adminUrl} (token: ${a.tokenFromEnv ? 'ADMIN_TOKEN' : join(a.dataDir, ADMIN_TOKEN_FILE)})`,
    `  console:    ${a.adminUrl}/console (sign in with the admin token; metrics at ${a.adminUrl}/metrics)`,
  ];
  if (a.demo) {
    lines.push(
      '',
      `A demo customer (id ${a.demo.customerId}) was created with this test key, shown only now:`,
      `  ${a.demo.key}`,
      'Try it:',
      `  curl -s ${a.publicUrl}/v1/me -H 'Authorization: Bearer ${a.demo.key}'`,
      `  curl -s ${a.publicUrl}/v1/redeem -H 'Authorization: Bearer ${a.demo.key}' -H 'Idempotency-Key: demo-1' -H 'Content-Type: application/json' -d '{"player_id":"5123456789","codes":["DEMO-CODE-0001-60"]}'`,
      `It has ${DEMO_STOCK_PER_CATEGORY} test stock codes in each category: try {"packs":{"660":2}} or {"uc":385} instead of codes.`,
      `API reference: ${a.publicUrl}/docs (OpenAPI: ${a.publicUrl}/v1/openapi.json)`,
    );
  } else if (a.db.kind === 'pglite') {
    lines.push(
      '',
      'The demo key was printed when this database was created. A new one:',
      // The admin address and data directory this server uses, so the command reaches it as is.
      `  ADMIN_URL=${a.adminUrl} DATA_DIR=${a.dataDir} npm run cli -- admin keys create 1 --mode test`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}
