import { defineConfig } from 'vitest/config';

/**
 * Files that load every core on purpose; they run alone, after the rest. cpu-starvation burns
 * every core for 60 s: beside it, the suite's timing tests (heartbeat timeouts of 4 s, a signal
 * at start-up, output floods) failed now and then on a 2-core machine.
 */
const ALONE = ['test/cpu-starvation.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ['**/node_modules/**', ...ALONE],
          // End-to-end suites start real servers, runners and harness processes; two cores here.
          fileParallelism: true,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          include: ALONE,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
