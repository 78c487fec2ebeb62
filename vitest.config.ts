import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // End-to-end suites start real servers, runners and harness processes; two cores here.
    fileParallelism: true,
    maxWorkers: 2,
    pool: 'forks',
  },
});
