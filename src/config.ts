// Environment → one frozen, typed config object. Every setting of contract section 11 is
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

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

const schema = z
  .object({
    HOST: optionalString.transform((v) => v ?? '127.0.0.1'),
    PORT: port('PORT', 8080),
    ADMIN_HOST: optionalString.transform((v) => v ?? '127.0.0.1'),
    ADMIN_PORT: port('ADMIN_PORT', 8081),
    ADMIN_TOKEN: optionalString.refine((v) => v === undefined || v.length >= 16, {
      message: 'ADMIN_TOKEN must be at least 16 characters',
    }),
    DATABASE_URL: optionalString.refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), {
      message: 'DATABASE_URL must start with postgres:// or postgresql://',
    }),
    DATA_DIR: optionalString.transform((v) => v ?? './data'),
    CODE_ENCRYPTION_KEY: optionalString.refine(
      (v) => v === undefined || (/^[A-Za-z0-9+/]+=*$/.test(v) && Buffer.from(v, 'base64').length === 32),
      { message: 'CODE_ENCRYPTION_KEY must be 32 bytes of base64' },
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
    // Not in the contract's table: the http activator's per-call deadline and calls at once.
    ACTIVATOR_TIMEOUT_MS: optionalString.transform((v, ctx) =>
      positiveInt(v, 10_000, 'ACTIVATOR_TIMEOUT_MS', ctx),
    ),
    ACTIVATOR_CONCURRENCY: optionalString.transform((v, ctx) =>
      positiveInt(v, 16, 'ACTIVATOR_CONCURRENCY', ctx),
    ),
    // Not in the contract's table: sandbox latencies for demos, benchmarks and crash tests.
    SANDBOX_DELAY_MS: optionalString.transform((v, ctx) => millis(v, 0, 'SANDBOX_DELAY_MS', ctx)),
    SANDBOX_SLOW_MS: optionalString.transform((v, ctx) => millis(v, 2000, 'SANDBOX_SLOW_MS', ctx)),
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
