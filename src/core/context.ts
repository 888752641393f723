// The one context of the service: what the HTTP apps, the workers and every phase of a redeem are
// given. Core owns this type and the interfaces of the adapters it calls (the activator in
// activator.ts, the business metrics and the settings below); src/config.ts and
// src/metrics/ satisfy them, and core never imports either.
import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import type { Activator } from './activator.ts';
import type { Clock } from './clock.ts';
import type { ActivationStatus, Disposition, Mode } from './vocabulary.ts';

/** The settings core reads (src/config.ts's Config has them all, with their defaults). */
export interface CoreConfig {
  /** Codes of one job sent to the upstream at once. */
  readonly CODE_CONCURRENCY: number;
  /** Async jobs this process runs at once. */
  readonly JOB_CONCURRENCY: number;
  /** How long a request waits for the database before answering 503 (connect and pool wait). */
  readonly DATABASE_TIMEOUT_MS: number;
  /** Days before finished jobs' code ciphertexts and old webhook events are purged. */
  readonly RETENTION_DAYS: number;
  /** Days the request log keeps a row (default 7). */
  readonly REQUEST_LOG_RETENTION_DAYS: number;
  /** Request-log rows kept per customer and UTC day (default 10,000). */
  readonly REQUEST_LOG_DAILY_CAP: number;
  /** Request-log rows kept per UTC day for callers without a known key (default 20,000). */
  readonly REQUEST_LOG_UNIDENTIFIED_DAILY_CAP: number;
  readonly WEBHOOK_ALLOW_PRIVATE_TARGETS: boolean;
  readonly WEBHOOK_RETRY_DELAYS: readonly number[];
  readonly WEBHOOK_DNS_SERVERS: readonly string[];
  readonly WEBHOOK_DNS_TIMEOUT_MS: number;
  readonly WEBHOOK_DNS_CONCURRENCY: number;
}

/** The business events core reports (src/metrics/registry.ts counts them). */
export interface CoreMetrics {
  /** A code's outcome, recorded once its transaction committed, with its capture or refund. */
  codeOutcome(o: {
    mode: Mode;
    status: ActivationStatus;
    disposition: Disposition;
    billed: boolean;
    /** Micro-dollars captured from the wallet (0 when the request came from the daily include). */
    walletMicros: number;
  }): void;
  /** A quarantined code settled; `used` bills one request (walletMicros from the wallet, maybe 0). */
  quarantineSettled(o: {
    mode: Mode;
    settlement: 'used' | 'unused';
    by: 'check' | 'operator';
    walletMicros: number;
  }): void;
  /** An async job left the queue after `waitMs` (created to started). */
  jobStarted(mode: Mode, waitMs: number): void;
  /** One webhook attempt's result; `lagMs` (event created → delivered) when it was delivered. */
  webhookAttempt(mode: Mode, result: 'delivered' | 'failed' | 'dropped', lagMs: number | null): void;
}

/**
 * The context. `C` and `M` are the settings and metrics the caller has: core sees CoreConfig and
 * CoreMetrics; the process (src/server.ts) and the HTTP apps fill them with the whole Config and
 * Metrics.
 */
export interface AppContext<C extends CoreConfig = CoreConfig, M extends CoreMetrics = CoreMetrics> {
  db: Database;
  config: C;
  clock: Clock;
  logger: Logger;
  /** Operator token of the admin API (from ADMIN_TOKEN or the data directory). */
  adminToken: string;
  /** CODE_ENCRYPTION_KEY (32 bytes): encrypts stock codes at rest and keys their lookup hash. */
  codeKey: Buffer;
  /** The activator for a key's mode: test keys always get the sandbox. */
  activatorFor(mode: Mode): Activator;
  /** The job worker of this process: woken when a job is queued here. */
  jobs: { wake(): void };
  /** The webhook worker of this process: woken when a redelivery is queued here (absent: it polls). */
  webhooks?: { wake(): void };
  /** This process's recorders of business events (src/metrics/). */
  metrics: M;
}

/**
 * What every phase of a redeem needs of the context. Metrics and config may be absent (a test
 * or a bench that runs one phase): nothing is counted, and the defaults below apply.
 */
export type RedeemDeps = Pick<AppContext, 'db' | 'clock' | 'codeKey' | 'logger' | 'activatorFor'> &
  Partial<Pick<AppContext, 'metrics'>> & {
    config?: Pick<CoreConfig, 'CODE_CONCURRENCY' | 'DATABASE_TIMEOUT_MS'>;
  };

/** The customer and mode a redeem runs for. */
export interface Caller {
  customerId: number;
  mode: Mode;
}

/** Codes of one job sent to the upstream at once, unless CODE_CONCURRENCY says otherwise. */
export const CODE_CONCURRENCY = 5;
