// What every phase of a redeem is given (the app context satisfies it), the caller it runs for,
// and the run's default width: one small module that phase 1, the runs, the job states and
// recovery all import, so none of them imports another for its types.
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Database } from '../../db/database.ts';
import type { Metrics } from '../../metrics/registry.ts';
import type { Mode } from '../accounts/accounts.ts';
import type { Clock } from '../clock.ts';
import type { Activator } from './activator.ts';

export interface RedeemDeps {
  db: Database;
  clock: Clock;
  codeKey: Buffer;
  logger: Logger;
  activatorFor(mode: Mode): Activator;
  /** Counts outcomes, billing and queue waits once recorded (absent: nothing is counted). */
  metrics?: Metrics;
  /** Worker sizes and the database deadline (absent: their defaults; the app passes its config). */
  config?: Pick<Config, 'CODE_CONCURRENCY' | 'DATABASE_TIMEOUT_MS'>;
}

export interface Caller {
  customerId: number;
  mode: Mode;
}

/** Codes of one job sent to the upstream at once, unless CODE_CONCURRENCY says otherwise. */
export const CODE_CONCURRENCY = 5;
