// Environment → one frozen, typed config object. Every setting of docs/reference/running.md#configuration is
// validated here, once; a bad value stops the process with one line naming the variable.
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

const port = (name: string, fallback: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return fallback;
      const n = Number(v);
      if (!/^\d+$/.test(v) || n < 1 || n > 65535) {
        ctx.addIssue({ code: 'custom', message: `${name} must be an integer from 1 to 65535` });
        return z.NEVER;
      }
      return n;
    });

const bool = (name: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '' || v === 'false' || v === '0') return false;
      if (v === 'true' || v === '1') return true;
      ctx.addIssue({ code: 'custom', message: `${name} must be true or false` });
      return z.NEVER;
    });

/** A dotted-quad IPv4 or an IPv6 address: not the legacy forms ipaddr.js also takes ("1.2.3", "0x7f.1"). */
const isStrictAddress = (a: string) => ipaddr.IPv4.isValidFourPartDecimal(a) || ipaddr.IPv6.isValid(a);

function millis(v: string | undefined, fallback: number, name: string, ctx: z.RefinementCtx): number {
  if (v === undefined) return fallback;
  if (!/^\d{1,7}$/.test(v)) {
    ctx.addIssue({ code: 'custom', message: `${name} must be a whole number of milliseconds` });
    return z.NEVER;
  }
  return Number(v);
}

function positiveInt(v: string | undefined, fallback: number, name: string, ctx: z.RefinementCtx): number {
  if (v === undefined) return fallback;
  if (!/^[1-9]\d{0,6}$/.test(v)) {
    ctx.addIssue({ code: 'custom', message: `${name} must be a positive whole number` });
    return z.NEVER;
  }
  return Number(v);
}

/** A loopback IP literal (127.0.0.0/8, ::1, IPv4-mapped forms) or the name `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === 'localhost') return true;
  if (!isStrictAddress(bare)) return false;
  return ipaddr.process(bare).range() === 'loopback';
}

/**
 * WEBHOOK_DNS_SERVERS entries: `1.2.3.4`, `1.2.3.4:53`, `::1`, `[::1]:5353`, as node:dns
 * `Resolver.setServers` takes them.
 */
function dnsServers(v: string | undefined, ctx: z.RefinementCtx): string[] {
  if (v === undefined) return [];
  const entries = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const m = /^\[([0-9A-Fa-f:.]{2,45})\]:(\d{1,5})$/.exec(entry) ?? /^([0-9.]{7,15}):(\d{1,5})$/.exec(entry);
    const address = m ? m[1]! : entry;
    const portOk = !m || (Number(m[2]) >= 1 && Number(m[2]) <= 65535);
    if (!isStrictAddress(address) || !portOk) {
      ctx.addIssue({
        code: 'custom',
        message: `WEBHOOK_DNS_SERVERS entry "${entry}" is not an address or address:port`,
      });
      return z.NEVER;
    }
  }
  return entries;
}

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

/** A positive whole number setting with its default. */
const positiveSetting = (name: string, fallback: number) =>
  optionalString.transform((v, ctx) => positiveInt(v, fallback, name, ctx));

const schema = z
  .object({
    HOST: optionalString.transform((v) => v ?? '127.0.0.1'),
    PORT: port('PORT', 8080),
    ADMIN_HOST: optionalString.transform((v) => v ?? '127.0.0.1'),
    ADMIN_PORT: port('ADMIN_PORT', 8081),
    // The operator `root` (docs/reference/operators-and-audit.md#operators-and-roles): long enough that guessing is hopeless even unthrottled.
    ADMIN_TOKEN: optionalString.refine((v) => v === undefined || v.length >= 32, {
      message:
        'ADMIN_TOKEN must be at least 32 characters (make one with: openssl rand -base64 32), or leave it unset to have one generated into DATA_DIR',
    }),
    // Host names the admin listener answers for besides its own addresses (docs/reference/operators-and-audit.md#the-admin-door).
    ADMIN_HOSTNAMES: optionalString.transform((v) =>
      (v ?? '')
        .split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
    // Failed admin authentications per address in 60 s before a lockout (operators-and-audit.md#the-admin-door).
    ADMIN_LOCKOUT_AFTER: optionalString.transform((v, c) => positiveInt(v, 10, 'ADMIN_LOCKOUT_AFTER', c)),
    DATABASE_URL: optionalString.refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), {
      message: 'DATABASE_URL must start with postgres:// or postgresql://',
    }),
    // docs/reference/running.md#postgresql-poolers-and-failover: PgBouncer in transaction mode in front, PostgreSQL itself for migrations/LISTEN.
    DATABASE_DIRECT_URL: optionalString.refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), {
      message: 'DATABASE_DIRECT_URL must start with postgres:// or postgresql://',
    }),
    DATABASE_POOL_MODE: optionalString
      .transform((v) => v ?? 'session')
      .pipe(
        z.enum(['session', 'transaction'], { message: 'DATABASE_POOL_MODE must be session or transaction' }),
      ),
    DATA_DIR: optionalString.transform((v) => v ?? './data'),
    // A keyring (docs/reference/operators-and-audit.md#encryption-key-rotation): one or more keys, comma-separated; the first encrypts.
    CODE_ENCRYPTION_KEY: optionalString.refine(
      (v) =>
        v === undefined ||
        v
          .split(',')
          .every((k) => /^[A-Za-z0-9+/]+=*$/.test(k.trim()) && Buffer.from(k.trim(), 'base64').length === 32),
      { message: 'CODE_ENCRYPTION_KEY must be 32 bytes of base64, or several such keys separated by commas' },
    ),
    ACTIVATOR: optionalString
      .transform((v) => v ?? 'sandbox')
      .pipe(z.enum(['sandbox', 'http'], { message: 'ACTIVATOR must be sandbox or http' })),
    ACTIVATOR_URL: optionalString.refine((v) => v === undefined || /^https?:\/\/[^/]/.test(v), {
      message: 'ACTIVATOR_URL must be an http:// or https:// URL',
    }),
    ACTIVATOR_KEY: optionalString,
    TRUST_PROXY: optionalString.transform((v, ctx) => {
      if (v === undefined) return [] as string[];
      const entries = v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      for (const entry of entries) {
        const valid =
          isStrictAddress(entry.split('/')[0]!) && (!entry.includes('/') || ipaddr.isValidCIDR(entry));
        if (!valid) {
          ctx.addIssue({ code: 'custom', message: `TRUST_PROXY entry "${entry}" is not an address or CIDR` });
          return z.NEVER;
        }
        // A /0 trusts every address on earth as a proxy: any client could then pick its own
        // address with X-Forwarded-For and pass every IP allowlist (docs/reference/running.md#safe-configuration).
        if (
          ipaddr.parseCIDR(entry.includes('/') ? entry : `${entry}/${entry.includes(':') ? 128 : 32}`)[1] ===
          0
        ) {
          ctx.addIssue({
            code: 'custom',
            message: `TRUST_PROXY entry "${entry}" is /0: it would trust every address as a proxy`,
          });
          return z.NEVER;
        }
      }
      return entries;
    }),
    WEBHOOK_RETRY_DELAYS: optionalString.transform((v, ctx) => {
      const parts = (v ?? '10,60,300').split(',').map((s) => s.trim());
      if (parts.some((p) => !/^[1-9]\d*$/.test(p))) {
        ctx.addIssue({
          code: 'custom',
          message: 'WEBHOOK_RETRY_DELAYS must be a comma-separated list of positive integers',
        });
        return z.NEVER;
      }
      return parts.map(Number);
    }),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: bool('WEBHOOK_ALLOW_PRIVATE_TARGETS'),
    // Beyond docs/reference/running.md#configuration: the http activator's per-call deadline and calls at once.
    ACTIVATOR_TIMEOUT_MS: optionalString.transform((v, ctx) =>
      positiveInt(v, 10_000, 'ACTIVATOR_TIMEOUT_MS', ctx),
    ),
    ACTIVATOR_CONCURRENCY: optionalString.transform((v, ctx) =>
      positiveInt(v, 16, 'ACTIVATOR_CONCURRENCY', ctx),
    ),
    // Beyond docs/reference/running.md#configuration: sandbox latencies for demos, benchmarks and crash tests.
    SANDBOX_DELAY_MS: optionalString.transform((v, ctx) => millis(v, 0, 'SANDBOX_DELAY_MS', ctx)),
    SANDBOX_SLOW_MS: optionalString.transform((v, ctx) => millis(v, 2000, 'SANDBOX_SLOW_MS', ctx)),
    // Retention (docs/reference/running.md#retention, core/sweeper/retention.ts): days a finished job keeps its code
    // ciphertexts and webhook events are kept; at least 1 (idempotency keys last a day).
    RETENTION_DAYS: optionalString.transform((v, ctx) => {
      if (v === undefined) return 30;
      if (!/^[1-9]\d{0,5}$/.test(v)) {
        ctx.addIssue({
          code: 'custom',
          message: 'RETENTION_DAYS must be a whole number of days, at least 1',
        });
        return z.NEVER;
      }
      return Number(v);
    }),
    // The request log (docs/operators/requests.md): days a row is kept; how often the
    // buffer is written (at most 1,000 rows a time); rows kept per customer and UTC day, and per
    // UTC day for all unidentified callers together (no key, or an unknown one), beyond: counted.
    REQUEST_LOG_RETENTION_DAYS: positiveSetting('REQUEST_LOG_RETENTION_DAYS', 7),
    REQUEST_LOG_FLUSH_MS: positiveSetting('REQUEST_LOG_FLUSH_MS', 1000),
    REQUEST_LOG_DAILY_CAP: positiveSetting('REQUEST_LOG_DAILY_CAP', 10_000),
    REQUEST_LOG_UNIDENTIFIED_DAILY_CAP: positiveSetting('REQUEST_LOG_UNIDENTIFIED_DAILY_CAP', 20_000),
    // Hostile input and safe defaults (docs/reference/limits.md#hostile-requests, docs/reference/running.md#safe-configuration): the request
    // timeout, webhook name resolution, and the switches that allow what is refused by default.
    REQUEST_TIMEOUT_MS: optionalString.transform((v, ctx) =>
      positiveInt(v, 30_000, 'REQUEST_TIMEOUT_MS', ctx),
    ),
    WEBHOOK_DNS_SERVERS: optionalString.transform((v, ctx) => dnsServers(v, ctx)),
    WEBHOOK_DNS_TIMEOUT_MS: optionalString.transform((v, ctx) =>
      positiveInt(v, 5_000, 'WEBHOOK_DNS_TIMEOUT_MS', ctx),
    ),
    WEBHOOK_DNS_CONCURRENCY: optionalString.transform((v, ctx) =>
      positiveInt(v, 8, 'WEBHOOK_DNS_CONCURRENCY', ctx),
    ),
    // Webhook attempts one process sends at once, each on its own (docs/reference/webhooks-and-events.md#fair-delivery).
    WEBHOOK_CONCURRENCY: optionalString.transform((v, ctx) => positiveInt(v, 10, 'WEBHOOK_CONCURRENCY', ctx)),
    ACTIVATOR_ALLOW_INSECURE: bool('ACTIVATOR_ALLOW_INSECURE'),
    ADMIN_ALLOW_REMOTE: bool('ADMIN_ALLOW_REMOTE'),
    // Production (docs/reference/running.md#database-loss, docs/reference/jobs.md#fair-sharing): the database pool and its deadlines, graceful stop,
    // worker sizes.
    DATABASE_POOL_MAX: optionalString.transform((v, ctx) => positiveInt(v, 10, 'DATABASE_POOL_MAX', ctx)),
    DATABASE_TIMEOUT_MS: optionalString.transform((v, ctx) =>
      positiveInt(v, 5000, 'DATABASE_TIMEOUT_MS', ctx),
    ),
    DATABASE_STATEMENT_TIMEOUT_MS: optionalString.transform((v, ctx) =>
      millis(v, 5000, 'DATABASE_STATEMENT_TIMEOUT_MS', ctx),
    ),
    DATABASE_IDLE_TX_TIMEOUT_MS: optionalString.transform((v, ctx) =>
      millis(v, 10_000, 'DATABASE_IDLE_TX_TIMEOUT_MS', ctx),
    ),
    SHUTDOWN_GRACE_MS: optionalString.transform((v, ctx) => millis(v, 25_000, 'SHUTDOWN_GRACE_MS', ctx)),
    // docs/reference/running.md#draining: health says "draining" this long before anything is refused (in the grace).
    DRAIN_DELAY_MS: optionalString.transform((v, ctx) => millis(v, 0, 'DRAIN_DELAY_MS', ctx)),
    JOB_CONCURRENCY: optionalString.transform((v, ctx) => positiveInt(v, 4, 'JOB_CONCURRENCY', ctx)),
    CODE_CONCURRENCY: optionalString.transform((v, ctx) => positiveInt(v, 5, 'CODE_CONCURRENCY', ctx)),
    WORKER_POLL_MS: optionalString.transform((v, ctx) => positiveInt(v, 250, 'WORKER_POLL_MS', ctx)),
    // Tenant limits (docs/reference/limits.md#read-budget, src/http/tenant-limits.ts): reads per key per sliding 10 s,
    // webhook registrations and redeliveries per customer and mode per minute, and requests with
    // an unknown key per client address per 10 s (with the number of addresses remembered).
    READ_RATE_LIMIT: optionalString.transform((v, ctx) => positiveInt(v, 300, 'READ_RATE_LIMIT', ctx)),
    // Several processes: how often each settles the reads it accepted with the database
    // (core/limits/read-budget.ts; the bound on what a key may pass does not depend on it).
    READ_BUDGET_SETTLE_MS: optionalString.transform((v, ctx) =>
      positiveInt(v, 1000, 'READ_BUDGET_SETTLE_MS', ctx),
    ),
    WEBHOOK_RATE_LIMIT: optionalString.transform((v, ctx) => positiveInt(v, 10, 'WEBHOOK_RATE_LIMIT', ctx)),
    REDELIVER_RATE_LIMIT: optionalString.transform((v, ctx) =>
      positiveInt(v, 10, 'REDELIVER_RATE_LIMIT', ctx),
    ),
    UNKNOWN_KEY_RATE_LIMIT: optionalString.transform((v, ctx) =>
      positiveInt(v, 50, 'UNKNOWN_KEY_RATE_LIMIT', ctx),
    ),
    UNKNOWN_KEY_TRACKED_ADDRESSES: optionalString.transform((v, ctx) =>
      positiveInt(v, 10_000, 'UNKNOWN_KEY_TRACKED_ADDRESSES', ctx),
    ),
    // Beyond docs/reference/running.md#configuration: key rotation's rows per transaction and pause
    // between batches (docs/reference/operators-and-audit.md#encryption-key-rotation, core/sweeper/rotation.ts).
    ENCRYPTION_ROTATION_BATCH: optionalString.transform((v, ctx) =>
      positiveInt(v, 100, 'ENCRYPTION_ROTATION_BATCH', ctx),
    ),
    ENCRYPTION_ROTATION_PAUSE_MS: optionalString.transform((v, ctx) =>
      millis(v, 20, 'ENCRYPTION_ROTATION_PAUSE_MS', ctx),
    ),
    // The chat bot (docs/reference/bot.md#running-the-bot); off while BOT_TOKEN is unset.
    BOT_TOKEN: optionalString.refine((v) => v === undefined || /^\d{1,20}:[A-Za-z0-9_-]{20,100}$/.test(v), {
      message: "BOT_TOKEN must be Telegram's <digits>:<secret> form (as BotFather gives it)",
    }),
    BOT_API_ROOT: optionalString
      .transform((v) => (v ?? 'https://api.telegram.org').replace(/\/+$/, ''))
      .refine((v) => /^https?:\/\/[^/]+/.test(v), {
        message: 'BOT_API_ROOT must be an http:// or https:// URL',
      }),
    BOT_UPDATES: optionalString
      .transform((v) => v ?? 'polling')
      .pipe(z.enum(['polling', 'webhook'], { message: 'BOT_UPDATES must be polling or webhook' })),
    BOT_WEBHOOK_SECRET: optionalString.refine((v) => v === undefined || /^[A-Za-z0-9_-]{16,256}$/.test(v), {
      message: 'BOT_WEBHOOK_SECRET must be 16 to 256 characters of A-Z, a-z, 0-9, _ and -',
    }),
    // https:// as Telegram requires; http:// only to a loopback host (a local Bot API server or stand-in).
    BOT_WEBHOOK_URL: optionalString.refine(
      (v) => {
        if (v === undefined || /^https:\/\/[^/]/.test(v)) return true;
        try {
          return v.startsWith('http://') && isLoopbackHost(new URL(v).hostname);
        } catch {
          return false;
        }
      },
      { message: 'BOT_WEBHOOK_URL must be an https:// URL (or http:// to a loopback address)' },
    ),
    BOT_CHECKS_PER_DAY: optionalString.transform((v, ctx) => positiveInt(v, 500, 'BOT_CHECKS_PER_DAY', ctx)),
    // Beyond docs/reference/running.md#configuration: how often the bot looks for alerts to send (docs/reference/bot.md#alerts) and expires top-ups.
    BOT_ALERT_INTERVAL_MS: optionalString.transform((v, ctx) =>
      positiveInt(v, 60_000, 'BOT_ALERT_INTERVAL_MS', ctx),
    ),
    BOT_PAYMENT_PROVIDER_TOKEN: optionalString,
    BOT_PAYMENT_CURRENCY: optionalString
      .transform((v) => v ?? 'USD')
      .refine((v) => /^[A-Z]{3}$/.test(v), {
        message: 'BOT_PAYMENT_CURRENCY must be a 3-letter currency code',
      }),
    LOG_LEVEL: optionalString
      .transform((v) => v ?? 'info')
      .pipe(
        z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
          message: 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent',
        }),
      ),
  })
  .superRefine((c, ctx) => {
    if (c.ACTIVATOR === 'http' && !c.ACTIVATOR_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['ACTIVATOR_URL'],
        message: 'ACTIVATOR_URL is required when ACTIVATOR=http',
      });
    }
    // Refused unless explicitly allowed (docs/reference/running.md#safe-configuration): the activator key and every code would
    // cross the network in clear text; the operator API would listen beyond this machine.
    if (
      c.ACTIVATOR_URL &&
      !c.ACTIVATOR_ALLOW_INSECURE &&
      c.ACTIVATOR_URL.toLowerCase().startsWith('http://')
    ) {
      let host = '';
      try {
        host = new URL(c.ACTIVATOR_URL).hostname;
      } catch {
        // an unparsable URL is not loopback
      }
      if (!isLoopbackHost(host)) {
        ctx.addIssue({
          code: 'custom',
          path: ['ACTIVATOR_URL'],
          message:
            'ACTIVATOR_URL uses http:// to a host that is not loopback; use https:// or set ACTIVATOR_ALLOW_INSECURE=true',
        });
      }
    }
    if (!c.ADMIN_ALLOW_REMOTE && !isLoopbackHost(c.ADMIN_HOST)) {
      ctx.addIssue({
        code: 'custom',
        path: ['ADMIN_HOST'],
        message: `ADMIN_HOST "${c.ADMIN_HOST}" is not a loopback address; set ADMIN_ALLOW_REMOTE=true to listen beyond this machine`,
      });
    }
    if (c.DATABASE_POOL_MODE === 'transaction' && !(c.DATABASE_URL && c.DATABASE_DIRECT_URL)) {
      ctx.addIssue({
        code: 'custom',
        path: ['DATABASE_POOL_MODE'],
        message:
          'DATABASE_POOL_MODE=transaction needs DATABASE_URL (the pooler) and DATABASE_DIRECT_URL (PostgreSQL itself, for migrations and LISTEN)',
      });
    }
    if (c.BOT_TOKEN && c.BOT_UPDATES === 'webhook' && !c.BOT_WEBHOOK_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['BOT_WEBHOOK_SECRET'],
        message:
          'BOT_WEBHOOK_SECRET is required with BOT_UPDATES=webhook (16+ characters of A-Z, a-z, 0-9, _ and -)',
      });
    }
    if (c.DATABASE_URL && !c.CODE_ENCRYPTION_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['CODE_ENCRYPTION_KEY'],
        message: 'CODE_ENCRYPTION_KEY is required with DATABASE_URL (32 bytes, base64)',
      });
    }
  });

export type Config = Readonly<z.infer<typeof schema>>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads the environment once. Throws ConfigError with one line naming the first bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = schema.safeParse(env);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const name = String(issue.path[0] ?? 'configuration');
    const message = issue.message.includes(name) ? issue.message : `${name}: ${issue.message}`;
    throw new ConfigError(`invalid configuration: ${message}`);
  }
  return Object.freeze(result.data);
}
