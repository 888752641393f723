// The process: config → database → migrations → apps + workers → listen; graceful stop.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { createHttpActivator } from './activators/http.ts';
import { createSandboxActivator } from './activators/sandbox.ts';
import type { Config } from './config.ts';
import { createCustomer, setPlan } from './core/accounts.ts';
import { type Clock, systemClock } from './core/clock.ts';
import { SWEEP_MS } from './core/instance.ts';
import { type JobWorker, startJobWorker } from './core/job-worker.ts';
import { issueKey } from './core/keys.ts';
import { checkQuarantined } from './core/quarantine.ts';
import { purgeExpiredKeys, recoverOrphanedJobs } from './core/recovery.ts';
import { appendLedger } from './core/wallet.ts';
import { startWebhookWorker, type WebhookWorker } from './core/webhooks/delivery.ts';
import { type Database, openDatabase } from './db/database.ts';
import { migrate } from './db/migrate.ts';
import { buildAdminApp } from './http/admin-app.ts';
import type { AppContext } from './http/context.ts';
import { buildPublicApp } from './http/public-app.ts';
import { createLogger } from './logger.ts';

export const ADMIN_TOKEN_FILE = 'admin-token';
export const ENCRYPTION_KEY_FILE = 'code-encryption.key';

/** Reads a secret file of the data directory, creating it (mode 0600) on first use. */
export function readOrCreateSecret(dataDir: string, file: string, create: () => string): string {
  const path = join(dataDir, file);
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const value = create();
  writeFileSync(path, `${value}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return value;
}

export interface Running {
  ctx: AppContext;
  publicApp: FastifyInstance;
  adminApp: FastifyInstance;
  publicUrl: string;
  adminUrl: string;
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

  const db = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: join(dataDir, 'pglite') });
  let publicApp: FastifyInstance | undefined;
  let adminApp: FastifyInstance | undefined;
  let webhookWorker: WebhookWorker | undefined;
  let worker: JobWorker | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  try {
    const applied = await migrate(db);
    if (applied.length) logger.info({ applied }, 'migrations applied');
    const sandbox = createSandboxActivator({
      db,
      codeKey,
      clock,
      slowMs: config.SANDBOX_SLOW_MS,
      delayMs: config.SANDBOX_DELAY_MS,
    });
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
    const ctx: AppContext = {
      db,
      config,
      clock,
      logger,
      adminToken,
      codeKey,
      activatorFor: (mode) => (mode === 'live' && http ? http : sandbox),
      jobs: { wake: () => worker?.wake() },
    };
    const demo = db.kind === 'pglite' ? await seedDemo(db, clock) : null;

    // Jobs whose process stopped: on the embedded database only this process runs, so every
    // running job is orphaned and is settled before the first request is answered.
    await recoverOrphanedJobs(ctx, { all: db.kind === 'pglite' });
    sweeper = setInterval(() => {
      recoverOrphanedJobs(ctx, { all: false }).catch((err) => logger.error({ err }, 'job sweep failed'));
      purgeExpiredKeys(db, clock.now()).catch((err) => logger.error({ err }, 'idempotency key purge failed'));
      checkQuarantined(ctx).catch((err) => logger.error({ err }, 'quarantine check failed'));
    }, SWEEP_MS);
    sweeper.unref();
    webhookWorker = startWebhookWorker(ctx);
    worker = startJobWorker(ctx, { onJobEnded: () => webhookWorker?.wake() });

    publicApp = await buildPublicApp(ctx);
    adminApp = await buildAdminApp(ctx);
    const publicUrl = await publicApp.listen({ host: config.HOST, port: config.PORT });
    const adminUrl = await adminApp.listen({ host: config.ADMIN_HOST, port: config.ADMIN_PORT });
    if (opts.announce)
      announce({ publicUrl, adminUrl, demo, dataDir, tokenFromEnv: Boolean(config.ADMIN_TOKEN), db });

    const running: Running = {
      ctx,
      publicApp,
      adminApp,
      publicUrl,
      adminUrl,
      async stop() {
        clearInterval(sweeper);
        await Promise.allSettled([publicApp!.close(), adminApp!.close()]);
        await worker?.stop();
        await webhookWorker?.stop();
        await http?.close();
        await db.close();
      },
    };
    return running;
  } catch (err) {
    clearInterval(sweeper);
    await Promise.allSettled([publicApp?.close(), adminApp?.close(), worker?.stop(), webhookWorker?.stop()]);
    await db.close().catch(() => undefined);
    throw err;
  }
}

/** On a new embedded database: a demo customer with a plan, a funded test wallet and a test key. */
async function seedDemo(db: Database, clock: Clock): Promise<{ customerId: number; key: string } | null> {
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
  ];
  if (a.demo) {
    lines.push(
      '',
      `A demo customer (id ${a.demo.customerId}) was created with this test key, shown only now:`,
      `  ${a.demo.key}`,
      'Try it:',
      `  curl -s ${a.publicUrl}/v1/me -H 'Authorization: Bearer ${a.demo.key}'`,
      `  curl -s ${a.publicUrl}/v1/redeem -H 'Authorization: Bearer ${a.demo.key}' -H 'Idempotency-Key: demo-1' -H 'Content-Type: application/json' -d '{"player_id":"5123456789","codes":["DEMO-CODE-0001-60"]}'`,
    );
  } else if (a.db.kind === 'pglite') {
    lines.push(
      '',
      'The demo key was printed when this database was created. A new one:',
      '  npm run cli -- admin keys create 1 --mode test',
    );
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}
