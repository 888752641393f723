// The activators of the process (docs/reference/redeem.md#activators): test keys always get the sandbox; live keys
// get the http activator when ACTIVATOR=http, else the sandbox too. Each call is counted through a
// metrics decorator.
import type { Logger } from 'pino';
import { createHttpActivator, type HttpActivator } from '../activators/http.ts';
import { createSandboxActivator } from '../activators/sandbox.ts';
import type { Config } from '../config.ts';
import type { Activator } from '../core/activator.ts';
import type { Database } from '../db/database.ts';
import { instrumentActivator } from '../metrics/activator-metrics.ts';
import type { Metrics } from '../metrics/registry.ts';

export interface Activators {
  test: Activator;
  live: Activator;
  /** The http activator, when there is one: closed at stop. */
  http?: HttpActivator;
}

export function createActivators(
  config: Config,
  deps: { db: Database; codeKey: Buffer; logger: Logger; metrics: Metrics },
): Activators {
  const sandbox = createSandboxActivator({
    db: deps.db,
    codeKey: deps.codeKey,
    slowMs: config.SANDBOX_SLOW_MS,
    delayMs: config.SANDBOX_DELAY_MS,
  });
  if (config.ACTIVATOR === 'sandbox' && config.DATABASE_URL)
    deps.logger.warn(
      'ACTIVATOR=sandbox on PostgreSQL: live keys are served by the sandbox, which activates nothing for real; set ACTIVATOR=http for production',
    );
  const http =
    config.ACTIVATOR === 'http'
      ? createHttpActivator({
          url: config.ACTIVATOR_URL!,
          key: config.ACTIVATOR_KEY,
          timeoutMs: config.ACTIVATOR_TIMEOUT_MS,
          concurrency: config.ACTIVATOR_CONCURRENCY,
          logger: deps.logger,
        })
      : undefined;
  const test = instrumentActivator(deps.metrics, sandbox);
  const live = http ? instrumentActivator(deps.metrics, http) : test;
  return { test, live, http };
}
