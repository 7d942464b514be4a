/**
 * One `npm test` over three jest projects that can also run alone
 * (`npm run test:unit`, `test:integration`, `test:e2e`, or `npx jest --selectProjects NAME`):
 * - unit: no server and no model, in-memory stores, CDK synthesized without bundling;
 * - integration: real local servers (dynalite, s3rver) and the sandboxed executors, attacked;
 * - e2e: the rcb command line and the emulated cloud, as a user runs them.
 *
 * Files run in parallel, two at a time on two cores (jest alone would run them one by one
 * there): most of the suite's time is spent waiting on child processes (the papers' Python
 * tests, bwrap, rcb through tsx, the emulated cloud's function processes), which two workers
 * overlap. No two files share a port (servers listen on port 0), a folder (each makes its own
 * temp dirs; caches are content-addressed or written whole and renamed), the dpkg lock (no
 * test installs a package) or a machine-wide check (the hostile fixture's stray sleeper is
 * each process's own, test/security/support/hostile-fixture.ts). Wall-time bounds are stated
 * against a reference measured in the same test (test/helpers/machine-speed.ts), so a second
 * worker, or any neighbour, does not make them flaky. See docs/testing.md.
 */
const { availableParallelism } = require('node:os');

const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
};
const under = (...dirs) => dirs.map((d) => `<rootDir>/test/${d}/**/*.test.ts`);

/** @type {import('jest').Config} */
module.exports = {
  testTimeout: 60000,
  maxWorkers: Number(process.env.RCB_TEST_WORKERS) || Math.max(2, availableParallelism() - 1),
  // A worker that grew past this is replaced between files: 24 GB hold two workers many times over.
  workerIdleMemoryLimit: '2GB',
  // The reliability summary line (test/reliability/reliability-summary.ts).
  globalSetup: '<rootDir>/test/reliability/global-setup.ts',
  globalTeardown: '<rootDir>/test/reliability/global-teardown.ts',
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: under('core', 'models', 'cloud', 'functions', 'infra'),
      // One synthesized whole stack for the infra test files that need it (test/infra/helpers.ts sharedStack).
      globalSetup: '<rootDir>/test/infra/shared-stack-setup.ts',
      globalTeardown: '<rootDir>/test/infra/shared-stack-teardown.ts',
    },
    { ...common, displayName: 'integration', testMatch: under('aws', 'integration', 'executor', 'security', 'reliability') },
    { ...common, displayName: 'e2e', testMatch: under('e2e') },
  ],
};
