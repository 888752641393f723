// The process: config → secrets → database (migrations, SQL functions) → context → workers → apps
// → listen; and the graceful stop. Each step lives in src/start/; this file only wires them.
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { type RunningBot, startBot } from './bot/index.ts';
import type { Config } from './config.ts';
import { type Clock, systemClock } from './core/clock.ts';
import { seedDemo } from './core/demo/seed.ts';
import { checkKeyringCoversRows } from './core/sweeper/rotation.ts';
import { configureWebhookResolver } from './core/webhooks/resolver.ts';
import { type DataDirLock, lockDataDir } from './db/data-dir-lock.ts';
import type { Database } from './db/database.ts';
import { buildAdminApp } from './http/admin-app.ts';
import type { ServerContext } from './http/context.ts';
import { announceDraining, type Draining, installDraining } from './http/draining.ts';
import { API_VERSION, buildPublicApp } from './http/public-app.ts';
import { createLogger } from './logger.ts';
import { createMetrics } from './metrics/registry.ts';
import { registerAdminRoutes } from './routes/admin/index.ts';
import { registerPublicRoutes } from './routes/public.ts';
import { type Activators, createActivators } from './start/activators.ts';
import { announce } from './start/banner.ts';
import { openServiceDatabase } from './start/database.ts';
import { loadSecrets, refuseSharedDir } from './start/secrets.ts';
import { startWorkers, type Workers } from './start/workers.ts';

export { DatabaseUnreachableError } from './start/database.ts';

export interface Running {
  ctx: ServerContext;
  publicApp: FastifyInstance;
  adminApp: FastifyInstance;
  publicUrl: string;
  adminUrl: string;
  /**
   * Graceful stop (docs/reference/running.md#graceful-stop): stops accepting, answers new requests on open connections
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
  // What lives in the data directory (the embedded database, generated secrets) is for this user
  // only: a directory made by someone else with looser rights stops the start.
  if (!config.DATABASE_URL || !config.ADMIN_TOKEN || !config.CODE_ENCRYPTION_KEY) refuseSharedDir(dataDir);
  if (!config.DATABASE_URL) refuseSharedDir(join(dataDir, 'pglite'));
  const { adminToken, codeKey } = loadSecrets(config, dataDir);
  configureWebhookResolver(config);
  // One process per embedded database (docs/reference/running.md#the-data-directory-lock): a second one exits naming the holder.
  const dirLock = config.DATABASE_URL ? undefined : lockDataDir(dataDir);
  const db = await openServiceDatabase(config, dataDir, logger).catch((err: unknown) => {
    dirLock?.release();
    throw err;
  });
  let workers: Workers | undefined;
  let apps: FastifyInstance[] = [];
  let activators: Activators | undefined;
  let bot: RunningBot | undefined;
  try {
    // Every stored ciphertext must name a key of the ring, or the start stops naming the key id.
    await checkKeyringCoversRows(db, codeKey);
    // One registry for the process; activator calls are counted through a decorator.
    const metrics = createMetrics({ db });
    activators = createActivators(config, { db, codeKey, logger, metrics });
    const { live, test } = activators;
    const ctx: ServerContext = {
      db,
      config,
      clock,
      logger,
      adminToken,
      codeKey,
      activatorFor: (mode) => (mode === 'live' ? live : test),
      jobs: { wake: () => workers?.wakeJobs() },
      webhooks: { wake: () => workers?.wakeWebhooks() },
      metrics,
    };
    workers = await startWorkers(ctx, config);
    // The chat bot (docs/reference/bot.md), when BOT_TOKEN is set: its updates act through the same core.
    bot = await startBot(ctx);
    ctx.bot = bot?.door;
    const publicApp = await buildPublicApp(ctx, registerPublicRoutes);
    const adminApp = await buildAdminApp(ctx, registerAdminRoutes);
    apps = [publicApp, adminApp];
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
    // Seeded once both listeners are bound: a first start that fails (a port taken) leaves no
    // demo customer behind whose key was never printed; the next start makes it and prints it.
    const demo = db.kind === 'pglite' ? await seedDemo(db, clock, codeKey) : null;
    if (opts.announce)
      announce({
        publicUrl,
        adminUrl,
        demo,
        dataDir,
        tokenFromEnv: Boolean(config.ADMIN_TOKEN),
        db,
        bot: bot ? { username: bot.door.username, updates: bot.door.updates } : null,
      });
    let stopping: Promise<void> | undefined;
    const parts = { apps, draining, workers, activators, bot, db, dirLock, logger };
    return {
      ctx,
      publicApp,
      adminApp,
      publicUrl,
      adminUrl,
      stop() {
        stopping ??= stopGracefully(parts, config.SHUTDOWN_GRACE_MS, config.DRAIN_DELAY_MS);
        return stopping;
      },
    };
  } catch (err) {
    await Promise.allSettled([
      bot?.stop(),
      workers?.stopLoops(),
      ...apps.map((a) => a.close()),
      workers?.stopJobs(0),
      workers?.stopRest(),
    ]);
    await activators?.http?.close();
    await db.close().catch(() => undefined);
    dirLock?.release();
    throw err;
  }
}

/**
 * Health says "draining" at once while everything else is still served for DRAIN_DELAY_MS
 * (docs/reference/running.md#draining), so a load balancer takes the process out first. Then stop accepting (Fastify closes the
 * listening sockets and idle connections); a new request on a connection still open gets the
 * 503 of the draining gate. Requests in flight and running jobs get what is left of
 * the grace; then everything closes, and the embedded database's lock is released last.
 */
async function stopGracefully(
  p: {
    apps: FastifyInstance[];
    draining: Draining[];
    workers: Workers;
    activators: Activators;
    bot: RunningBot | undefined;
    db: Database;
    dirLock: DataDirLock | undefined;
    logger: Logger;
  },
  graceMs: number,
  drainDelayMs: number,
): Promise<void> {
  const started = Date.now();
  const left = () => Math.max(0, graceMs - (Date.now() - started));
  await announceDraining(p.draining, Math.min(drainDelayMs, left()));
  for (const d of p.draining) d.start();
  const closed = Promise.allSettled(p.apps.map((a) => a.close()));
  const [stillRunning] = await Promise.all([
    p.workers.stopJobs(left()),
    p.workers.stopLoops(),
    p.bot?.stop(),
    withDeadline(Promise.all(p.draining.map((d) => d.idle())), left()),
  ]);
  const unanswered = p.draining.reduce((n, d) => n + d.inFlight(), 0);
  if (stillRunning > 0 || unanswered > 0)
    p.logger.warn(
      { jobs: stillRunning, requests: unanswered },
      'grace period over: left to recovery as after a crash',
    );
  // Connections kept alive by clients that send nothing more would hold the close forever.
  for (const a of p.apps) a.server.closeAllConnections();
  await closed;
  await p.workers.stopRest();
  await p.activators.http?.close();
  await p.db.close();
  p.dirLock?.release();
}

/** Waits for `p` for at most `ms`. */
async function withDeadline(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
