// What the HTTP apps and the workers share: database, config, clock, logger, activators.
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { Mode } from './accounts/accounts.ts';
import type { Clock } from './clock.ts';
import type { Activator } from './redeem/activator.ts';

export interface AppContext {
  db: Database;
  config: Config;
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
  /** This process's Prometheus registry and the recorders of its series (src/metrics/). */
  metrics: Metrics;
}
