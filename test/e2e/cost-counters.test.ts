/**
 * Cost that must not grow, counted exactly (issue 21 "guards that do not flake"): a zero-latency
 * apply reports its commits, transitions and statements (`DCM_TEST_HOOKS=1 DCM_COUNTERS=FILE`),
 * and these are held to ceilings per transition. A change that adds a commit, or a statement, per
 * transition fails here on any machine, however fast or loaded; the timings stay in the bench.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, dcmOk, tempDir } from '../helpers/cli.js';
import { pgTestUrl } from '../helpers/pg-databases.js';
import { names } from '../helpers/history.js';
import { isPgUrl } from '../../src/domain/db-url.js';

let t: ReturnType<typeof tempDir>;
afterEach(() => t?.cleanup());

interface Counters {
  commits: number;
  transitions: number;
  statements: number;
  autocommitReads: number;
  /** The driver's own (the exec driver's runs and passes over /proc). */
  driver: Record<string, number>;
}

function applyCounted(n: number, window: number, extra: string[] = []): Counters {
  t = tempDir('dcm-cost-');
  dcmOk(['--db', t.db, 'subcloud', 'add', ...names(n)]);
  dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', String(window), '--sim-latency', '0', ...extra]);
  const file = path.join(t.dir, 'counters.json');
  dcmOk(['--db', t.db, '-q', 'strategy', 'apply'], { env: { DCM_TEST_HOOKS: '1', DCM_COUNTERS: file } });
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Counters;
}

describe('cost counters of a zero-latency apply', () => {
  test('every step is 6 transitions (initial, 5 states); commits batch them; statements stay few per transition', () => {
    const n = 400;
    const c = applyCounted(n, 100);
    expect(c.transitions).toBe(n * 6);
    // Batched: one commit carries the transitions of a whole event-loop turn. A commit per
    // transition (or more) would be 2,400 and fail here.
    expect(c.commits).toBeLessThanOrEqual(c.transitions / 4);
    // Each transition: its guarded step update, the close of its run, the open of the next; plus a
    // few per commit (the fence, the next attempts' numbers, the duration statistics) and per
    // subcloud. 2.9 here; an attempt read per start, as before the batch read them all, was 3.7.
    expect(c.statements / c.transitions).toBeLessThanOrEqual(3.25);
    // Reads in the loop are inside the batch's transaction (the next attempt's number) or made
    // once (the labels a driver reads): outside one, only those of the start and of the request
    // polls. One per start would be 2,000 here, one per subcloud 400.
    expect(c.autocommitReads).toBeLessThan(n / 2);
  });

  test('the counts grow with the fleet, not faster: per transition they do not rise from 100 to 400 subclouds', () => {
    const small = applyCounted(100, 100);
    const big = applyCounted(400, 100);
    expect(big.transitions).toBe(4 * small.transitions);
    // On a server a commit holds the answers of its 2 ms (orchestrator/commit-loop.ts GATHER_MS),
    // so its size, and its few statements' share per transition, follow the machine's load: the
    // margin there is a tenth of a statement per transition, below what one statement more per
    // subcloud (a sixth) or per transition (one) would add.
    const small1 = small.statements / small.transitions;
    expect(big.statements / big.transitions).toBeLessThanOrEqual(isPgUrl(t.db) ? small1 + 0.1 : small1 * 1.1);
    // 300 more subclouds: a read outside a transaction per subcloud (or per start) would add 300
    // (1,500); the polls of a slower run add a couple every quarter second.
    expect(big.autocommitReads - small.autocommitReads).toBeLessThan(300 / 2);
  });

  // Issue 51: on a server each statement is a round trip (node-postgres does not pipeline), and a
  // round trip is what a worker's subclouds wait for and what the server spends most on; a commit
  // is a fixed few statements whatever its size (its writes are each one statement over arrays).
  // Commits follow the machine's load (a server's commit gathers the answers of its 2 ms), so the
  // per-commit bound is the exact one; the per-transition bound sits below what a round trip more
  // per subcloud (a sixth of one per transition) would add.
  (pgTestUrl() ? test : test.skip)('on a server: a commit is a few statements whatever its size, and round trips stay a small part of a transition', () => {
    const c = applyCounted(400, 100) as Counters & { roundTrips: number };
    expect(c.transitions).toBe(2400);
    // The fence, the strategy's state, the claims (their steps with the workers' counts, the
    // claim), the batch's one statement, the duration statistics: about 4 a commit here, the
    // first two read with the BEGIN and the last sent with the COMMIT; one per transition in a
    // commit would be some 90.
    expect((c.statements - c.autocommitReads) / c.commits).toBeLessThanOrEqual(8);
    // Every round trip of the process (the store's, the lease's, the simulated sites'): 0.08 a
    // transition (193 for 2,400; 0.11 before the BEGIN and the COMMIT carried reads and writes);
    // one more per subcloud would add 400 (0.17 each).
    expect(c.roundTrips / c.transitions).toBeLessThanOrEqual(0.2);
    expect(c.roundTrips).toBeGreaterThan(0);
  });

  /** 40 subclouds × 5 states of /bin/true with the exec driver, window 10: its counters. */
  function execApply(env: NodeJS.ProcessEnv = {}) {
    t = tempDir('dcm-cost-');
    const n = 40;
    const cfg = path.join(t.dir, 'true.yaml');
    fs.writeFileSync(cfg, 'states:\n  "*": [/bin/true]\n');
    dcmOk(['--db', t.db, 'subcloud', 'add', ...names(n)]);
    dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '10', '--driver', 'exec', '--exec-config', cfg]);
    const file = path.join(t.dir, 'counters.json');
    dcmOk(['--db', t.db, '-q', 'strategy', 'apply'], { env: { DCM_TEST_HOOKS: '1', DCM_COUNTERS: file, ...env } });
    const c = JSON.parse(fs.readFileSync(file, 'utf8')) as Counters;
    expect(c.driver.runs).toBe(n * 5);
    return c;
  }

  test('exec driver: one run launched per state, and no pass over /proc for runs that left nothing', () => {
    // native/dcm-run, the run's subreaper, said of each run that nothing of it was left.
    expect(execApply().driver.procPasses).toBe(0);
  });

  test('exec driver, the sh wrapper: no more passes over /proc than runs (runs that end together share one)', () => {
    const c = execApply({ DCM_RUN_WRAPPER: 'sh' });
    // Each ended run asks whether its group is gone (a stderr `tee` left as a zombie keeps the
    // kernel's answer yes, so /proc decides) and what carries its DCM_RUN_ID: one shared pass
    // answers both. A pass of each per run would be 400 here.
    expect(c.driver.procPasses).toBeLessThanOrEqual(c.driver.runs);
    expect(c.driver.procPasses).toBeGreaterThan(0);
  });

  test('DCM_COUNTERS without DCM_TEST_HOOKS is a usage error, and nothing is applied', () => {
    t = tempDir('dcm-cost-');
    dcmOk(['--db', t.db, 'subcloud', 'add', 's1']);
    dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
    const r = dcm(['--db', t.db, 'strategy', 'apply'], { env: { DCM_COUNTERS: path.join(t.dir, 'c.json') } });
    expect([r.code, r.stderr]).toEqual([2, 'error: DCM_COUNTERS is a test hook: it needs DCM_TEST_HOOKS=1\n']);
    expect(dcmOk(['--db', t.db, 'strategy', 'show', '-f', 'value', '-c', 'state']).stdout).toBe('initial\n');
  });
});
