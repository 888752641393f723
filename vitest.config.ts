import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/file-database.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for something the service does in its own time (a flash after a form post,
    // a webhook, a sweep); vitest's default of 1 s is too short on a loaded Citus coordinator.
    expect: { poll: { timeout: 10_000 } },
    // Each file opens its own database; two at a time suits a 2-core machine and PGlite's memory.
    maxWorkers: 2,
    pool: 'forks',
  },
});
