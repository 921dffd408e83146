/** ESM + ts-jest, as DESIGN.md's toolchain notes describe. */
// A statement through a connection inside its own transaction fails at once instead of waiting
// for ever (src/platform/turns.ts); the tests' processes and the dcm processes they start.
process.env.DCM_CHECK_TURNS ??= '1';

export default {
  preset: 'ts-jest/presets/default-esm',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // Tests of the PostgreSQL store alone: the PostgreSQL pass runs them (jest.pg.config.js).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/pg/'],
  testTimeout: 120000,
  maxWorkers: 2,
};
