/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testTimeout: 60000,
  // The reliability summary line (test/reliability/reliability-summary.ts).
  globalSetup: '<rootDir>/test/reliability/global-setup.ts',
  globalTeardown: '<rootDir>/test/reliability/global-teardown.ts',
};
