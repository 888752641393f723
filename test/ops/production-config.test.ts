// The settings of docs/reference/running.md#database-loss, docs/reference/jobs.md#fair-sharing: defaults, and a bad value stops the process with one
// line naming the variable.
import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

function rejected(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(env)}`);
}

describe('production settings', () => {
  test('defaults', () => {
    expect(loadConfig({})).toMatchObject({
      DATABASE_POOL_MAX: 10,
      DATABASE_TIMEOUT_MS: 5000,
      DATABASE_STATEMENT_TIMEOUT_MS: 5000,
      DATABASE_IDLE_TX_TIMEOUT_MS: 10_000,
      SHUTDOWN_GRACE_MS: 25_000,
      JOB_CONCURRENCY: 4,
      CODE_CONCURRENCY: 5,
    });
  });

  test('values are read', () => {
    expect(
      loadConfig({
        DATABASE_POOL_MAX: '3',
        DATABASE_TIMEOUT_MS: '1500',
        DATABASE_STATEMENT_TIMEOUT_MS: '0',
        DATABASE_IDLE_TX_TIMEOUT_MS: '0',
        SHUTDOWN_GRACE_MS: '0',
        JOB_CONCURRENCY: '1',
        CODE_CONCURRENCY: '20',
      }),
    ).toMatchObject({
      DATABASE_POOL_MAX: 3,
      DATABASE_TIMEOUT_MS: 1500,
      DATABASE_STATEMENT_TIMEOUT_MS: 0,
      DATABASE_IDLE_TX_TIMEOUT_MS: 0,
      SHUTDOWN_GRACE_MS: 0,
      JOB_CONCURRENCY: 1,
      CODE_CONCURRENCY: 20,
    });
  });

  test.each([
    ['DATABASE_POOL_MAX', '0'],
    ['DATABASE_POOL_MAX', 'ten'],
    ['DATABASE_TIMEOUT_MS', '0'],
    ['DATABASE_TIMEOUT_MS', '1.5'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '-1'],
    ['DATABASE_IDLE_TX_TIMEOUT_MS', '5s'],
    ['SHUTDOWN_GRACE_MS', 'forever'],
    ['JOB_CONCURRENCY', '0'],
    ['CODE_CONCURRENCY', '2.5'],
  ])('%s=%s is refused with one line naming it', (name, value) => {
    const message = rejected({ [name]: value });
    expect(message).toContain(name);
    expect(message).not.toContain('\n');
  });
});
