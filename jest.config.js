/**
 * One `npm test` over three jest projects that can also run alone
 * (`npm run test:unit`, `test:integration`, `test:e2e`, or `npx jest --selectProjects NAME`):
 * - unit: no server and no model, in-memory stores, CDK synthesized without bundling;
 * - integration: real local servers (dynalite, s3rver) and the sandboxed executors, attacked;
 * - e2e: the rcb command line and the emulated cloud, as a user runs them.
 */
const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
};
const under = (...dirs) => dirs.map((d) => `<rootDir>/test/${d}/**/*.test.ts`);

/** @type {import('jest').Config} */
module.exports = {
  testTimeout: 60000,
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
