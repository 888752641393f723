// Starting a gateway child process for a benchmark: a clean environment (no stray setting of the
// caller's shell changes what is measured), free ports, a fresh data directory and secrets.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MALLOC_TUNABLES } from '../src/db/pglite/memory.ts';
import { type Child, freePort, HOST, startChild, waitForHttp } from './processes.ts';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The environment for a gateway child: ours, minus every gateway setting, plus the ones given,
 * and glibc's malloc tuned as `npm start` and the systemd unit tune it (src/db/pglite/memory.ts).
 */
export function gatewayEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GLIBC_TUNABLES: process.env.GLIBC_TUNABLES ?? MALLOC_TUNABLES,
  };
  for (const name of Object.keys(env)) {
    if (
      /^(HOST|PORT|ADMIN_HOST|ADMIN_PORT|ADMIN_TOKEN|ADMIN_URL|DATABASE_URL|DATA_DIR|CODE_ENCRYPTION_KEY|ACTIVATOR|ACTIVATOR_URL|ACTIVATOR_KEY|TRUST_PROXY|LOG_LEVEL|NODE_EXTRA_CA_CERTS)$/.test(
        name,
      ) ||
      name.startsWith('WEBHOOK_') ||
      name.startsWith('SANDBOX_')
    ) {
      delete env[name];
    }
  }
  return { ...env, ...settings };
}

export interface Gateway {
  child: Child;
  publicUrl: string;
  adminUrl: string;
  adminToken: string;
  dataDir: string;
  /** Seconds from spawn to the first 200 from /v1/health. */
  startSeconds: number;
  /** Stops the process (SIGTERM); keeps the data directory (see `remove`). */
  stop(): Promise<void>;
  /** Deletes the data directory (after `stop`). */
  remove(): void;
}

export interface GatewayOptions {
  /** PostgreSQL URL; unset: the embedded PGlite database in a fresh data directory. */
  databaseUrl?: string;
  /** Shared by every process on one PostgreSQL database (it encrypts codes and secrets). */
  codeEncryptionKey?: string;
  adminToken?: string;
  /** Further settings (SANDBOX_DELAY_MS, WEBHOOK_…, NODE_EXTRA_CA_CERTS …). */
  settings?: Record<string, string>;
  /** Extra node flags (--cpu-prof …). */
  nodeArgs?: string[];
  /** A data directory to start on again (a stopped gateway's); default a new one. */
  dataDir?: string;
}

export async function startGateway(o: GatewayOptions = {}): Promise<Gateway> {
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), 'redeem-bench-'));
  const port = await freePort();
  const adminPort = await freePort();
  const adminToken = o.adminToken ?? `adm_bench_${randomBytes(16).toString('hex')}`;
  const settings: Record<string, string> = {
    HOST,
    PORT: String(port),
    ADMIN_HOST: HOST,
    ADMIN_PORT: String(adminPort),
    ADMIN_TOKEN: adminToken,
    DATA_DIR: dataDir,
    CODE_ENCRYPTION_KEY: o.codeEncryptionKey ?? randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    ...o.settings,
  };
  if (o.databaseUrl) settings['DATABASE_URL'] = o.databaseUrl;
  const publicUrl = `http://${HOST}:${port}`;
  const started = Date.now();
  const child = startChild(
    [...(o.nodeArgs ?? []), join(repoRoot, 'bin/redeem-gateway.js'), 'serve'],
    gatewayEnv(settings),
    repoRoot,
  );
  const remove = () => rmSync(dataDir, { recursive: true, force: true });
  try {
    await waitForHttp(child, `${publicUrl}/v1/health`);
  } catch (err) {
    await child.stop();
    remove();
    throw err;
  }
  return {
    child,
    publicUrl,
    adminUrl: `http://${HOST}:${adminPort}`,
    adminToken,
    dataDir,
    startSeconds: (Date.now() - started) / 1000,
    stop: () => child.stop(),
    remove,
  };
}
