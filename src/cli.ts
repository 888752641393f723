// The `redeem-gateway` command: serve, migrate, admin …, upstream-sim, bot-sim

import { ConfigError, loadConfig } from './config.ts';

// The database and server modules load only for the commands that need them, so `admin …`
// commands (a thin HTTP client) start quickly.

const HELP = `redeem-gateway <command> [options]

Commands:
  serve                 run the public API, the admin API and the workers (npm start)
  migrate               apply pending database migrations and exit
  db distribute         on a Citus coordinator, distribute a database migrated before Citus,
                        online (redeem-gateway db help)
  admin <what> …        operator commands, a client of the admin API (redeem-gateway admin help)
  backup --out FILE     copy the embedded database (through the admin API while the server runs)
  restore --from FILE --data-dir DIR
                        fill a new, empty data directory from a backup
  encryption new-key    prepend a new key to the embedded database's key file (then rotate)
  upstream-sim          run the upstream protocol simulator (redeem-gateway upstream-sim --help)
  bot-sim               a local stand-in for Telegram's Bot API and a chat in the terminal
                        (redeem-gateway bot-sim --help)

Environment (defaults in brackets):
  HOST, PORT                    public API listener [127.0.0.1, 8080]
  ADMIN_HOST, ADMIN_PORT        admin API listener [127.0.0.1, 8081]
  ADMIN_TOKEN                   the operator root's token, 32+ characters [generated into DATA_DIR/admin-token]
  ADMIN_HOSTNAMES               extra Host names the admin listener answers, comma-separated [unset]
  ADMIN_LOCKOUT_AFTER           failed admin authentications per address in 60 s before a lockout [10]
  DATABASE_URL                  postgres://… for PostgreSQL [unset: embedded PGlite in DATA_DIR]
  DATABASE_POOL_MODE            session | transaction (DATABASE_URL is PgBouncer in transaction mode) [session]
  DATABASE_DIRECT_URL           PostgreSQL itself, for migrations and LISTEN behind a pooler [DATABASE_URL]
  DATA_DIR                      embedded database, generated token and key [./data]
  CODE_ENCRYPTION_KEY           32 bytes, base64; several comma-separated: the first encrypts
                                [generated into DATA_DIR; required with PostgreSQL]
  ACTIVATOR                     sandbox | http, for live keys [sandbox]
  ACTIVATOR_URL, ACTIVATOR_KEY  the upstream, for ACTIVATOR=http
  ACTIVATOR_TIMEOUT_MS          deadline of one upstream call [10000]
  ACTIVATOR_CONCURRENCY         upstream calls in flight at once [16]
  TRUST_PROXY                   proxy addresses/CIDRs whose X-Forwarded-For is believed [unset]
  WEBHOOK_RETRY_DELAYS          seconds between webhook attempts [10,60,300]
  WEBHOOK_ALLOW_PRIVATE_TARGETS allow private webhook targets, development only [false]
  LOG_LEVEL                     fatal … trace, silent [info]
  REQUEST_TIMEOUT_MS            a request not received by then is 408 [30000]
  ACTIVATOR_ALLOW_INSECURE      allow ACTIVATOR_URL http:// off loopback [false]
  ADMIN_ALLOW_REMOTE            allow an ADMIN_HOST that is not loopback [false]
  WEBHOOK_DNS_SERVERS           DNS servers for webhook hosts [the system's]
  WEBHOOK_DNS_TIMEOUT_MS        deadline of one webhook host lookup [5000]
  WEBHOOK_DNS_CONCURRENCY       webhook host lookups at once [8]
  READ_RATE_LIMIT               reads per key per sliding 10 s [300]
  READ_BUDGET_SETTLE_MS         on PostgreSQL: how often reads settle across processes [1000]
  WEBHOOK_RATE_LIMIT            webhook registrations per customer and mode a minute [10]
  REDELIVER_RATE_LIMIT          webhook redeliveries per customer and mode a minute [10]
  UNKNOWN_KEY_RATE_LIMIT        unknown keys per client address per 10 s [50]
  UNKNOWN_KEY_TRACKED_ADDRESSES client addresses remembered for that limit [10000]
  REQUEST_LOG_RETENTION_DAYS    days the log of refused and failed requests keeps a row [7]
  REQUEST_LOG_DAILY_CAP         its rows per customer and UTC day [10000]
  REQUEST_LOG_UNIDENTIFIED_DAILY_CAP  its rows per UTC day for callers without a known key [20000]
  REQUEST_LOG_FLUSH_MS          how often its buffered rows are written [1000]
  ENCRYPTION_ROTATION_BATCH     rows a key rotation rewrites per transaction [100]
  ENCRYPTION_ROTATION_PAUSE_MS  pause between a rotation's batches [20]
  DATABASE_POOL_MAX             PostgreSQL connections [10]
  DATABASE_TIMEOUT_MS           wait for a connection; 503 when the database is away [5000]
  DATABASE_STATEMENT_TIMEOUT_MS statement_timeout, 0 for none [5000]
  DATABASE_IDLE_TX_TIMEOUT_MS   idle_in_transaction_session_timeout, 0 for none [10000]
  SHUTDOWN_GRACE_MS             on SIGTERM/SIGINT, time to finish requests and jobs [25000]
  DRAIN_DELAY_MS                on a stop, health says draining and all else is served this long first [0]
  JOB_CONCURRENCY               async jobs run at once per process [4]
  WEBHOOK_CONCURRENCY           webhook attempts sent at once per process (4 of one customer) [10]
  CODE_CONCURRENCY              codes of one job sent at once [5]
  WORKER_POLL_MS                job and webhook workers look for work this often when not woken [250]
  ADMIN_URL                     admin API address for "admin" commands [http://ADMIN_HOST:ADMIN_PORT]
`;

/** A signal this soon after the first is the same one delivered twice (see 'serve'). */
const SIGNAL_ECHO_MS = 1000;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve': {
      const config = loadConfig();
      const { startServer } = await import('./server.ts');
      const running = await startServer(config, { announce: true });
      // Graceful stop (docs/reference/running.md#graceful-stop): drain, let jobs finish within SHUTDOWN_GRACE_MS, exit 0.
      // A second signal while draining stops at once (what was running is left to recovery).
      let stoppingSince = 0;
      const stop = (signal: string) => {
        if (stoppingSince) {
          // Ctrl-C under `npm start` arrives twice: from the terminal (to the whole process
          // group) and forwarded by npm. That echo is not an operator's second signal.
          if (Date.now() - stoppingSince < SIGNAL_ECHO_MS) return;
          running.ctx.logger.warn({ signal }, 'second signal: stopping now');
          process.exit(1);
        }
        stoppingSince = Date.now();
        running.ctx.logger.info({ signal, graceMs: config.SHUTDOWN_GRACE_MS }, 'stopping gracefully');
        running.stop().then(
          () => {
            running.ctx.logger.info('stopped');
            process.exit(0);
          },
          (err: unknown) => {
            running.ctx.logger.error({ err }, 'graceful stop failed');
            process.exit(1);
          },
        );
      };
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
      return;
    }
    case 'migrate': {
      const { runMigrate } = await import('./cli/db.ts');
      await runMigrate(loadConfig(), (line) => process.stdout.write(`${line}\n`));
      return;
    }
    case 'db': {
      const { runDb } = await import('./cli/db.ts');
      await runDb(
        rest,
        process.env,
        (m) => new CliError(m),
        (line) => process.stdout.write(`${line}\n`),
      );
      return;
    }
    case 'encryption': {
      const { runEncryption } = await import('./cli/encryption.ts');
      process.stdout.write(runEncryption(rest, loadConfig(), (m) => new CliError(m)));
      return;
    }
    case 'admin': {
      const { runAdmin } = await import('./cli/admin.ts');
      await runAdmin(rest);
      return;
    }
    case 'backup':
    case 'restore': {
      const { runBackup, runRestore } = await import('./cli/backup.ts');
      await (command === 'backup' ? runBackup(rest) : runRestore(rest));
      return;
    }
    case 'upstream-sim': {
      const { runUpstreamSim } = await import('./cli/upstream-sim.ts');
      await runUpstreamSim(rest);
      return;
    }
    case 'bot-sim': {
      const { runBotSim } = await import('./cli/bot-sim.ts');
      await runBotSim(rest);
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
      : (err as Error)?.name === 'DatabaseUnreachableError'
        ? `error: ${(err as Error).message}`
        : `error: ${(err as Error)?.message ?? String(err)}`;
  process.stderr.write(`${message}\n`);
  process.exitCode = 1;
});
