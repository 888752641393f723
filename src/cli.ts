// The `redeem-gateway` command: serve, migrate, admin …, upstream-sim

import { join, resolve } from 'node:path';
import { ConfigError, loadConfig } from './config.ts';

// The database and server modules load only for the commands that need them, so `admin …`
// commands (a thin HTTP client) start quickly.

const HELP = `redeem-gateway <command> [options]

Commands:
  serve                 run the public API, the admin API and the workers (npm start)
  migrate               apply pending database migrations and exit
  admin <what> …        operator commands, a client of the admin API (redeem-gateway admin help)
  upstream-sim          run the upstream protocol simulator (redeem-gateway upstream-sim --help)

Environment (defaults in brackets):
  HOST, PORT                    public API listener [127.0.0.1, 8080]
  ADMIN_HOST, ADMIN_PORT        admin API listener [127.0.0.1, 8081]
  ADMIN_TOKEN                   operator token [generated into DATA_DIR/admin-token]
  DATABASE_URL                  postgres://… for PostgreSQL [unset: embedded PGlite in DATA_DIR]
  DATA_DIR                      embedded database, generated token and key [./data]
  CODE_ENCRYPTION_KEY           32 bytes, base64 [generated into DATA_DIR; required with PostgreSQL]
  ACTIVATOR                     sandbox | http, for live keys [sandbox]
  ACTIVATOR_URL, ACTIVATOR_KEY  the upstream, for ACTIVATOR=http
  ACTIVATOR_TIMEOUT_MS          deadline of one upstream call [10000]
  ACTIVATOR_CONCURRENCY         upstream calls in flight at once [16]
  TRUST_PROXY                   proxy addresses/CIDRs whose X-Forwarded-For is believed [unset]
  WEBHOOK_RETRY_DELAYS          seconds between webhook attempts [10,60,300]
  WEBHOOK_ALLOW_PRIVATE_TARGETS allow private webhook targets, development only [false]
  LOG_LEVEL                     fatal … trace, silent [info]
  ADMIN_URL                     admin API address for "admin" commands [http://ADMIN_HOST:ADMIN_PORT]
`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve': {
      const config = loadConfig();
      const { startServer } = await import('./server.ts');
      const running = await startServer(config, { announce: true });
      const stop = async (signal: string) => {
        running.ctx.logger.info({ signal }, 'stopping');
        await running.stop();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop('SIGINT'));
      process.once('SIGTERM', () => void stop('SIGTERM'));
      return;
    }
    case 'migrate': {
      const config = loadConfig();
      const { openDatabase } = await import('./db/database.ts');
      const { migrate } = await import('./db/migrate.ts');
      const db = await openDatabase({
        databaseUrl: config.DATABASE_URL,
        dataDir: join(resolve(config.DATA_DIR), 'pglite'),
      });
      try {
        const applied = await migrate(db);
        process.stdout.write(
          applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n',
        );
      } finally {
        await db.close();
      }
      return;
    }
    case 'admin': {
      const { runAdmin } = await import('./cli/admin.ts');
      await runAdmin(rest);
      return;
    }
    case 'upstream-sim': {
      const { runUpstreamSim } = await import('./cli/upstream-sim.ts');
      await runUpstreamSim(rest);
      return;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(HELP);
      return;
    default:
      throw new CliError(`unknown command "${command}" (try: redeem-gateway help)`);
  }
}

export class CliError extends Error {
  override name = 'CliError';
}

main(process.argv.slice(2)).catch((err: unknown) => {
  const message =
    err instanceof ConfigError || err instanceof CliError
      ? err.message
      : `error: ${(err as Error)?.message ?? String(err)}`;
  process.stderr.write(`${message}\n`);
  process.exitCode = 1;
});
