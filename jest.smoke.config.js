/**
 * What .ci/run runs on the Node versions after the first (the whole suite ran on Node 20): the
 * store's own tests on a file, and the smoke of the end-to-end suite (test/e2e/smoke.test.ts: the
 * native addon loaded, an apply with each driver, sim and exec). The store's tests on PostgreSQL
 * are `DCM_TEST_PG_QUICK=1 npm run test:pg` (jest.pg.config.js); `npm run test:smoke` runs both.
 */
import base from './jest.config.js';

export default {
  ...base,
  testMatch: ['<rootDir>/test/store/**/*.test.ts', '<rootDir>/test/e2e/smoke.test.ts'],
};
