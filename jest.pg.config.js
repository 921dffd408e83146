/**
 * The PostgreSQL pass: the tests whose subject is the store, run again with every database on a
 * throw-away PostgreSQL server (test/pg/global-setup.ts) instead of in a file. One switch, the same
 * tests: test/helpers/cli.ts's tempDir hands out the server's databases. Tests of what only a file
 * has (its path, its -wal, its faults, a reader's snapshot) are not in the list.
 */
import base from './jest.config.js';

// The store's own tests on the server; the transition writer's, the stage cursor's and the sim's
// book of sites too (PostgreSQL writes a batch its own way; the cursor's reads are its own SQL).
const STORE = ['test/pg/**/*.test.ts', 'test/store/transitions.test.ts', 'test/store/cursor.test.ts', 'test/drivers/sim/sites-book.test.ts'];
const BOTH = [
  ...STORE,
  // Inventory, planning and the commands around a strategy.
  'test/e2e/inventory.test.ts',
  'test/e2e/labels.test.ts',
  'test/e2e/planning.test.ts',
  'test/e2e/errors.test.ts',
  'test/e2e/dcmanager-compat.test.ts',
  // The orchestrator on the store: windows, races, the fence.
  'test/e2e/apply-window.test.ts',
  'test/e2e/stop-exact.test.ts',
  'test/e2e/control-race.test.ts',
  // A site taken out mid-rollout: read in the statement that moves its step; an abort that ends,
  // asked of a worker through its event (issue 49).
  'test/e2e/site-taken-out.test.ts',
  'test/e2e/abort-now.test.ts',
  // What is read back: status and the kept strategies (their delete and prune); and the cost
  // counters (commits, statements).
  'test/e2e/status.test.ts',
  'test/e2e/strategy-archive.test.ts',
  'test/e2e/cost-counters.test.ts',
];
// The rest of the end-to-end files whose subject reaches the store, on the server too under
// `npm run test:big` (DCM_BIG_TESTS=1): their store calls are the ones above's, and together they
// would double the PostgreSQL pass. The first four read what the ones above wrote (a report, the
// event record, a reader beside an apply, every output format) and are the pass's costliest after
// the several-hosts files: every pass of `npm test` had them until the CI time issue.
const BIG = [
  'test/e2e/report.test.ts',
  'test/e2e/events.test.ts',
  'test/e2e/apply-readers.test.ts',
  'test/e2e/output.test.ts',
  'test/e2e/strategy-config.test.ts',
  'test/e2e/dcmanager-round2.test.ts',
  'test/e2e/control-commands.test.ts',
  'test/e2e/control-apply.test.ts',
  'test/e2e/apply-race.test.ts',
  'test/e2e/stage-gates.test.ts',
  'test/e2e/exec-defer.test.ts',
  'test/e2e/exec-apply.test.ts',
  'test/e2e/audit.test.ts',
];

// A statement through a connection inside its own transaction fails at once instead of waiting
// for ever (src/platform/turns.ts); the tests' processes and the dcm processes they start.
process.env.DCM_CHECK_TURNS ??= '1';

export default {
  ...base,
  // DCM_TEST_PG_QUICK=1: the store's own tests only (.ci/run, on the Node versions after the first:
  // the PostgreSQL code is JavaScript over node-postgres, and the whole pass runs on Node 20).
  testMatch: (process.env.DCM_TEST_PG_QUICK === '1' ? STORE : process.env.DCM_BIG_TESTS ? [...BOTH, ...BIG] : BOTH).map((p) => `<rootDir>/${p}`),
  // The several-hosts loops (workers of several processes on one server, minutes of faults) and
  // the simulator's schedules (and the several-hosts guide's examples) are the orchestrator's, not
  // the store's: the quick pass leaves them to the whole pass on Node 20.
  testPathIgnorePatterns: ['/node_modules/', ...(process.env.DCM_TEST_PG_QUICK === '1' ? ['<rootDir>/test/pg/workers.test.ts', '<rootDir>/test/pg/workers-hosts.test.ts', '<rootDir>/test/pg/workers-woken.test.ts', '<rootDir>/test/pg/workers-loop.test.ts', '<rootDir>/test/pg/sim.test.ts', '<rootDir>/test/pg/guide-several-hosts.test.ts'] : [])],
  globalSetup: '<rootDir>/test/pg/global-setup.ts',
  globalTeardown: '<rootDir>/test/pg/global-teardown.ts',
};
