// Writes docs/running/configuration.md from the configuration schema (src/config.ts):
//   npm run docs:config
// The names are the variables the schema reads, the defaults are what it makes of an empty
// environment, and each rule is the schema's own refusal of a bad value; only the meaning of each
// variable is written here. A variable the schema reads that has no meaning here (or a meaning
// for a variable it no longer reads) stops the script, and test/docs/config-doc.test.ts fails when the
// committed page differs from what this prints.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config.ts';

export const CONFIG_DOC_PATH = join(import.meta.dirname, '..', 'docs', 'running', 'configuration.md');

interface Setting {
  /** What it is for, in a line or two (Markdown). */
  meaning: string;
  /** The default when the schema has none of its own (an unset optional value). */
  unset?: string;
  /** A value that is refused, to show the rule (default: a text no rule accepts). */
  bad?: string;
}

/** The settings by section, in the order the page lists them. */
const SECTIONS: [string, Record<string, Setting>][] = [
  [
    'Listeners and the operator',
    {
      HOST: { meaning: 'Address the public API listens on.' },
      PORT: { meaning: 'Port of the public API.' },
      ADMIN_HOST: {
        meaning:
          'Address the admin API (and the console and `/metrics`) listens on. Anything but loopback is refused unless `ADMIN_ALLOW_REMOTE=true`.',
        bad: '192.0.2.10',
      },
      ADMIN_PORT: { meaning: 'Port of the admin API.' },
      ADMIN_ALLOW_REMOTE: { meaning: 'Allow an `ADMIN_HOST` that is not a loopback address.' },
      ADMIN_TOKEN: {
        meaning:
          'The token of the operator `root` (role `admin`). Make one with `openssl rand -base64 32`. When unset, one is generated into `DATA_DIR/admin-token` (mode 0600) on the first start and read from there after.',
        unset: 'generated into `DATA_DIR/admin-token`',
        bad: 'short',
      },
      ADMIN_HOSTNAMES: {
        meaning:
          "Comma-separated extra `Host` names the admin listener answers (a TLS proxy's name). Any other `Host` than its own addresses gets `421 misdirected_request`.",
        unset: 'none',
      },
      ADMIN_LOCKOUT_AFTER: {
        meaning:
          'Failed admin authentications (token or console sign-in) from one address within 60 s after which that address gets `429 rate_limited` for 60 s, a right token included. Keep the default; `npm run bench:fuzz` raises it so its wrong tokens reach the door instead of the lockout.',
      },
      TRUST_PROXY: {
        meaning:
          'Comma-separated proxy addresses or CIDRs whose `X-Forwarded-For` (and `X-Forwarded-Proto`) is believed, on both listeners.',
        unset: 'none: the TCP peer is the client',
      },
      REQUEST_TIMEOUT_MS: {
        meaning: 'A request (headers and body) not fully received by then is answered `408 request_timeout`.',
      },
    },
  ],
  [
    'Database',
    {
      DATABASE_URL: {
        meaning:
          'PostgreSQL (`postgres://user:password@host:5432/db`). Unset: the embedded database (PGlite) in `DATA_DIR/pglite`, for trying and single-node trials.',
        unset: 'embedded database in `DATA_DIR`',
      },
      DATABASE_DIRECT_URL: {
        meaning:
          'PostgreSQL itself, for migrations and the `LISTEN` connection, when `DATABASE_URL` points at a pooler.',
        unset: '`DATABASE_URL`',
      },
      DATABASE_POOL_MODE: {
        meaning:
          '`transaction` when `DATABASE_URL` is PgBouncer in transaction mode (then `DATABASE_DIRECT_URL` is required); see [PostgreSQL](postgresql.md).',
      },
      DATABASE_POOL_MAX: { meaning: 'PostgreSQL connections one process keeps.' },
      DATABASE_TIMEOUT_MS: {
        meaning:
          'Longest wait for a PostgreSQL connection; a request that needs the database while it is away answers `503 unavailable` within it.',
      },
      DATABASE_STATEMENT_TIMEOUT_MS: {
        meaning:
          "PostgreSQL's `statement_timeout` for every connection (`0`: none). Migrations run without it.",
      },
      DATABASE_IDLE_TX_TIMEOUT_MS: {
        meaning: "PostgreSQL's `idle_in_transaction_session_timeout` (`0`: none).",
      },
      DATA_DIR: {
        meaning:
          'Directory of the embedded database, the generated admin token and the generated encryption key. Created with mode 0700; a pre-made one that others can read or write stops the start.',
      },
    },
  ],
  [
    'Encryption',
    {
      CODE_ENCRYPTION_KEY: {
        meaning:
          'A keyring: one or more 32-byte base64 keys, comma-separated; the first encrypts, every one decrypts (see [Rotating encryption keys](security.md#rotating-encryption-keys)). Make one with `openssl rand -base64 32`. Required with `DATABASE_URL`; on the embedded database one is generated into `DATA_DIR/code-encryption.key`.',
        unset: 'generated into `DATA_DIR` (embedded only)',
      },
      ENCRYPTION_ROTATION_BATCH: { meaning: 'Rows a key rotation rewrites per transaction.' },
      ENCRYPTION_ROTATION_PAUSE_MS: { meaning: "Pause between a key rotation's batches." },
    },
  ],
  [
    'The upstream (live keys)',
    {
      ACTIVATOR: {
        meaning:
          'What activates codes of **live** keys: `sandbox` (nothing real; a warning at start on PostgreSQL) or `http`, the upstream of [the upstream protocol](../upstream-protocol.md). Test keys always use the sandbox.',
      },
      ACTIVATOR_URL: { meaning: 'The upstream, required with `ACTIVATOR=http`.', unset: 'none' },
      ACTIVATOR_KEY: { meaning: 'The key sent to the upstream.', unset: 'none' },
      ACTIVATOR_ALLOW_INSECURE: {
        meaning:
          'Allow an `http://` `ACTIVATOR_URL` to a host that is not loopback (codes would cross in clear).',
      },
      ACTIVATOR_TIMEOUT_MS: { meaning: 'Deadline of one upstream call.' },
      ACTIVATOR_CONCURRENCY: {
        meaning:
          'Upstream calls in flight at once per process; more wait their turn, shared fairly between customers.',
      },
    },
  ],
  [
    'The sandbox (test keys)',
    {
      SANDBOX_DELAY_MS: {
        meaning: 'A pause before every sandbox answer, like a real upstream (benchmarks, demos).',
      },
      SANDBOX_SLOW_MS: {
        meaning:
          'How late the sandbox answers a code containing `SLOW`, for every test key of this gateway (a request cannot choose it; see [sandbox values](../merchants/first-hour.md#the-sandbox)).',
      },
    },
  ],
  [
    'Webhooks',
    {
      WEBHOOK_RETRY_DELAYS: {
        meaning:
          'Seconds to wait after each failed delivery attempt; three delays make four attempts in all.',
      },
      WEBHOOK_ALLOW_PRIVATE_TARGETS: {
        meaning:
          'Allow loopback and private webhook targets (development only; cloud metadata addresses stay refused).',
      },
      WEBHOOK_CONCURRENCY: {
        meaning: 'Webhook attempts one process sends at once (at most 4 of one customer).',
      },
      WEBHOOK_DNS_SERVERS: {
        meaning:
          'DNS servers (`ip`, `ip:port`, `[ipv6]:port`) that resolve webhook hosts; `/etc/hosts` is never read for them.',
        unset: "the system's (`/etc/resolv.conf`)",
      },
      WEBHOOK_DNS_TIMEOUT_MS: {
        meaning: 'Deadline of one webhook host lookup, its wait for a turn included.',
      },
      WEBHOOK_DNS_CONCURRENCY: { meaning: 'Webhook host lookups at once, shared fairly between customers.' },
    },
  ],
  [
    'Limits per tenant',
    {
      READ_RATE_LIMIT: {
        meaning:
          'Reads per key in any sliding 10 s: `GET /v1/me`, `/v1/stock`, `/v1/jobs/{id}`, the event and statement reads, one budget. Beyond it: `429 rate_limited`.',
      },
      READ_BUDGET_SETTLE_MS: {
        meaning:
          'On PostgreSQL, how often a process settles the reads it accepted with the others (with N processes a key may pass 25 × (N − 1) reads more per window).',
      },
      WEBHOOK_RATE_LIMIT: { meaning: '`POST /v1/webhook` per customer and mode in any sliding minute.' },
      REDELIVER_RATE_LIMIT: {
        meaning: '`POST /v1/events/{id}/redeliver` per customer and mode in any sliding minute.',
      },
      UNKNOWN_KEY_RATE_LIMIT: {
        meaning:
          'Requests with a well-formed but unknown key per client address in 10 s; beyond it that address gets `429` for unknown keys without a lookup (a valid key is never refused).',
      },
      UNKNOWN_KEY_TRACKED_ADDRESSES: {
        meaning: 'Client addresses (IPv6: /64 blocks) one process remembers for that limit.',
      },
    },
  ],
  [
    'Workers and stopping',
    {
      JOB_CONCURRENCY: { meaning: 'Async jobs one process runs at once.' },
      CODE_CONCURRENCY: { meaning: 'Codes of one job sent to the activator at once.' },
      WORKER_POLL_MS: {
        meaning:
          'How often the job and webhook workers look for work when nothing woke them (on PostgreSQL other processes wake them at once).',
      },
      SHUTDOWN_GRACE_MS: {
        meaning: 'On `SIGTERM`/`SIGINT`, how long requests in flight and running jobs may take to finish.',
      },
      DRAIN_DELAY_MS: {
        meaning:
          'On a stop, how long `/v1/health` answers `503 draining` while everything else is still served (part of the grace).',
      },
    },
  ],
  [
    'Retention and logs',
    {
      RETENTION_DAYS: {
        meaning:
          "Days a finished job keeps its codes' ciphertexts, and webhook events are kept. The ledger, usage and job rows are never deleted.",
      },
      LOG_LEVEL: { meaning: 'Log level of the one JSON line per request and the service messages.' },
      REQUEST_LOG_RETENTION_DAYS: {
        meaning:
          'Days the request log (refused and failed public answers, see [the request log](../operators/requests.md)) keeps its rows.',
      },
      REQUEST_LOG_FLUSH_MS: {
        meaning:
          'How often the request log is written from memory to the database, in one batch (at most 1,000 rows a pass).',
      },
      REQUEST_LOG_DAILY_CAP: {
        meaning:
          'Rows of the request log kept per customer and UTC day; beyond it refusals are only counted.',
      },
      REQUEST_LOG_UNIDENTIFIED_DAILY_CAP: {
        meaning:
          'Rows kept per UTC day for all callers without a known key together (no key, or an unknown one).',
      },
    },
  ],
  [
    'The chat bot',
    {
      BOT_TOKEN: {
        meaning: "BotFather's token; the bot is off while it is unset. See [the chat bot](../bot.md).",
        unset: 'none: no bot',
      },
      BOT_API_ROOT: {
        meaning:
          'Where the Bot API is called: Telegram, a local Bot API server, or `redeem-gateway bot-sim`.',
      },
      BOT_UPDATES: {
        meaning:
          '`polling` (one process polls at a time, by a lease in the database) or `webhook` (`POST /bot/updates`).',
      },
      BOT_WEBHOOK_SECRET: {
        meaning:
          'Required with `BOT_UPDATES=webhook`: `POST /bot/updates` answers 401 without `X-Telegram-Bot-Api-Secret-Token` equal to it.',
        unset: 'none',
      },
      BOT_WEBHOOK_URL: {
        meaning: 'With `webhook`, the URL registered with Telegram at start.',
        unset: 'none',
      },
      BOT_CHECKS_PER_DAY: { meaning: 'Codes `/check` answers per customer and UTC day.' },
      BOT_ALERT_INTERVAL_MS: { meaning: 'How often the bot looks for alerts to send and expires top-ups.' },
      BOT_PAYMENT_PROVIDER_TOKEN: { meaning: 'Turns Telegram invoices on for live top-ups.', unset: 'none' },
      BOT_PAYMENT_CURRENCY: { meaning: "The invoices' currency (a two-decimal one)." },
    },
  ],
];

/** Combinations the schema refuses as a whole, each shown with the schema's own message. */
const COMBINATIONS: [string, Record<string, string>][] = [
  ['`ACTIVATOR=http` needs `ACTIVATOR_URL`', { ACTIVATOR: 'http' }],
  [
    '`ACTIVATOR_URL` over `http://` only to loopback',
    { ACTIVATOR: 'http', ACTIVATOR_URL: 'http://upstream.example' },
  ],
  ['`ADMIN_HOST` only loopback', { ADMIN_HOST: '0.0.0.0' }],
  ['`DATABASE_POOL_MODE=transaction` needs both URLs', { DATABASE_POOL_MODE: 'transaction' }],
  [
    '`BOT_UPDATES=webhook` needs `BOT_WEBHOOK_SECRET`',
    { BOT_TOKEN: `123456789:${'A'.repeat(35)}`, BOT_UPDATES: 'webhook' },
  ],
  ['PostgreSQL needs `CODE_ENCRYPTION_KEY`', { DATABASE_URL: 'postgres://gateway@db/redeem' }],
];

/** Every variable the schema reads, in its order: the ones it asks an environment for. */
export function schemaVariables(): string[] {
  const read: string[] = [];
  const env = new Proxy({} as NodeJS.ProcessEnv, {
    get(_target, name) {
      if (typeof name === 'string' && /^[A-Z][A-Z0-9_]*$/.test(name) && !read.includes(name)) read.push(name);
      return undefined;
    },
  });
  loadConfig(env);
  return read;
}

/** The schema's refusal of `value` for `name`, or null when it takes it. */
function refusal(env: Record<string, string>): string | null {
  try {
    loadConfig(env);
    return null;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.message.replace(/^invalid configuration: /, '');
  }
}

function shown(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? '' : `\`${value.join(',')}\``;
  if (value === undefined) return '';
  return `\`${String(value)}\``;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderConfigDoc(): string {
  const variables = schemaVariables();
  const described = SECTIONS.flatMap(([, s]) => Object.keys(s));
  const missing = variables.filter((v) => !described.includes(v));
  const extra = described.filter((v) => !variables.includes(v));
  if (missing.length || extra.length)
    throw new Error(
      `scripts/config-doc.ts is out of step with src/config.ts: ${missing.length ? `no meaning for ${missing.join(', ')}` : ''}${missing.length && extra.length ? '; ' : ''}${extra.length ? `not read by the schema: ${extra.join(', ')}` : ''}`,
    );
  const defaults = loadConfig({}) as Record<string, unknown>;
  const out: string[] = [
    '# Configuration',
    '',
    '<!-- Generated by `npm run docs:config` (scripts/config-doc.ts) from src/config.ts; do not edit by hand. -->',
    '',
    'Every setting is an environment variable, read once at start and checked. A bad value stops',
    'the process with one line naming the variable (`invalid configuration: …`) and exit status 1,',
    'before anything listens. An empty value counts as unset. `redeem-gateway help` prints the',
    'short list.',
    '',
    `The service reads ${variables.length} variables, listed here by section: the default is what`,
    'an empty environment gives, and the rule is the message a refused value gets.',
    '',
  ];
  for (const [title, settings] of SECTIONS) {
    out.push(`## ${title}`, '', '| Variable | Default | Meaning | Refused with |', '|---|---|---|---|');
    for (const [name, s] of Object.entries(settings)) {
      const fallback = shown(defaults[name]) || s.unset || 'unset';
      const rule = refusal({ [name]: s.bad ?? '%not a value%' });
      out.push(
        `| \`${name}\` | ${cell(fallback)} | ${cell(s.meaning)} | ${rule ? cell(rule) : 'any text'} |`,
      );
    }
    out.push('');
  }
  out.push('## Settings that go together', '', '| Rule | Refused with |', '|---|---|');
  for (const [rule, env] of COMBINATIONS) {
    const message = refusal(env);
    if (message === null) throw new Error(`the schema takes ${JSON.stringify(env)}: ${rule}`);
    out.push(`| ${rule} | ${cell(message)} |`);
  }
  out.push(
    '',
    "Outside this list: `NODE_EXTRA_CA_CERTS` (Node's own) adds certificate authorities for webhook",
    'targets and the upstream, and `GLIBC_TUNABLES` is set by `npm start` and the systemd unit to',
    'give freed memory back (see [Memory](operations.md#memory)). The CLI also reads `ADMIN_URL`',
    '(see [the CLI](../operators/cli.md)).',
    '',
  );
  return out.join('\n');
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  writeFileSync(CONFIG_DOC_PATH, renderConfigDoc());
  console.log(`wrote ${CONFIG_DOC_PATH}`);
}
