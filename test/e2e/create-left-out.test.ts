/**
 * Issue 34, item 1: a create says on stderr who it left out and why. The sequence a new user ran:
 * a probe finds one site down, a plain create plans the rest and names the one left out; after a
 * complete rollout, a second patch id finds the fleet in-sync and says so, and `--target-version`
 * plans it by target instead.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { dcm, tempDir } from '../helpers/cli.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

describe('strategy create: who it left out', () => {
  let t: ReturnType<typeof tempDir>;
  const run = (...args: string[]) => dcmQuick(['--db', t.db, ...args]);
  const ok = (...args: string[]) => dcmQuickOk(['--db', t.db, ...args]);
  beforeEach(() => {
    t = tempDir();
  });
  afterEach(() => t.cleanup());

  test('a site down at the probe, then a second patch after a complete rollout', () => {
    ok('subcloud', 'add', 's1', 's2', 's3', 's4');
    ok('subcloud', 'update', 's3', '--label', 'sim_unreachable=yes');
    expect(run('subcloud', 'probe', '--all').code).toBe(1);
    const created = ok('strategy', 'create', '--type', 'patch', '--patch-id', '22.12.1', '--sim-latency', '0');
    expect(created.stderr).toContain('warning: left out 1 of 4 subclouds:');
    expect(created.stderr).toMatch(/^ {2}offline \(1\): s3 /m);
    expect(ok('strategy', 'apply').code).toBe(0);
    ok('strategy', 'delete');

    // The fleet is in-sync for patching now: the next patch would plan nothing but s3's step (s3
    // is still offline), and said nothing of it before.
    const second = run('strategy', 'create', '--type', 'patch', '--patch-id', '22.12.3', '--dry-run');
    expect(second.code).toBe(1);
    // Issue 49, item 2: it names who it left out even when nobody is left, and how to plan by target.
    expect(second.stderr).toBe(
      'warning: left out 4 of 4 subclouds:\n' +
        "  offline (1): s3 (recorded so by a probe, an audit or the inventory: 'dcm subcloud probe' rechecks)\n" +
        '  in-sync for patching (3): s1, s2, s4 (--target-version V plans by target, not by the last sync)\n' +
        'error: Strategy has no steps to apply\n',
    );
    ok('subcloud', 'update', 's3', '--label', 'sim_unreachable=', '--availability', 'online');
    const again = ok('strategy', 'create', '--type', 'patch', '--patch-id', '22.12.3', '--sim-latency', '0');
    expect(again.stderr).toContain('warning: left out 3 of 4 subclouds:');
    expect(again.stderr).toMatch(/^ {2}in-sync for patching \(3\): s1, s2, s4 \(--target-version V plans by target, not by the last sync\)$/m);
    ok('strategy', 'delete');

    // By target: every site whose software_version is not the target's, whatever its sync says.
    ok('subcloud', 'update', 's4', '--software-version', '22.12.3');
    const byTarget = ok('strategy', 'create', '--type', 'patch', '--patch-id', '22.12.3', '--target-version', '22.12.3', '--sim-latency', '0');
    expect(byTarget.stderr).toMatch(/^ {2}already at 22\.12\.3 \(1\): s4$/m);
    const steps = ok('-f', 'value', '-c', 'cloud', 'strategy-step', 'list');
    expect(steps.stdout.split('\n').filter(Boolean)).toEqual(['s1', 's2', 's3']);
  });

  test('ten names a reason, then how many more; the dry run names them all; group and labels', () => {
    const names = Array.from({ length: 14 }, (_, i) => `s${i + 1}`);
    ok('subcloud', 'add', ...names, '--sync', 'patching=in-sync');
    ok('subcloud', 'add', 'u1', '--management', 'unmanaged');
    ok('subcloud', 'add', 'todo1', 'todo2');
    ok('subcloud-group', 'add', '--name', 'canary');
    ok('subcloud', 'add', 'c1', '--group', 'canary');
    const created = ok('strategy', 'create', '--type', 'patch', '--patch-id', 'P');
    expect(created.stderr).toMatch(/^ {2}in-sync for patching \(14\): s1, s2, s3, s4, s5, s6, s7, s8, s9, s10 and 4 more /m);
    expect(created.stderr).toMatch(/^ {2}unmanaged \(1\): u1 /m);
    expect(created.stderr).toContain('(strategy create --dry-run lists them all)');
    ok('strategy', 'delete');

    const dry = ok('strategy', 'create', '--type', 'patch', '--patch-id', 'P', '--dry-run');
    expect(dry.stderr).toMatch(new RegExp(`^ {2}in-sync for patching \\(14\\): ${names.join(', ')} `, 'm'));
    expect(dry.stderr).not.toContain('more');

    const group = ok('strategy', 'create', '--type', 'patch', '--patch-id', 'P', '--group', 'canary');
    expect(group.stderr).toMatch(/^ {2}not in group canary \(17\): /m);
    ok('strategy', 'delete');
    // --force is not for patch: said, with what plans by target.
    const forced = ok('strategy', 'create', '--type', 'patch', '--patch-id', 'P', '--force', '--dry-run');
    expect(forced.stderr).toContain('(--force does not apply to patch; --target-version V plans by target, not by the last sync)');
  });

  // Issue 49, item 2, through the built CLI: a fleet in sync for the type, the plain create (not a
  // dry run) and a group's, and an empty file.
  test('nobody left to plan: the error is preceded by who was left out, and why; an empty file says it holds none', () => {
    ok('subcloud', 'add', 's1', 's2', '--sync', 'all=in-sync');
    ok('subcloud', 'add', 's3', '--management', 'unmanaged');
    const r = dcm(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--patch-id', '22.12.3']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'warning: left out 3 of 3 subclouds:\n' +
        "  unmanaged (1): s3 ('dcm subcloud manage' takes them in)\n" +
        '  in-sync for patching (2): s1, s2 (--target-version V plans by target, not by the last sync)\n' +
        'error: Strategy has no steps to apply\n',
    );
    const group = dcm(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--patch-id', '22.12.3', '--group', 'Default']);
    expect(group.stderr).toMatch(/^warning: left out 3 of 3 subclouds:\n/);
    expect(dcm(['--db', t.db, 'strategy', 'show']).code).toBe(1);
    const empty = tempDir();
    try {
      const none = dcm(['--db', empty.db, 'strategy', 'create', '--type', 'patch', '--patch-id', '22.12.3']);
      expect(none.stderr).toBe("warning: no subcloud to plan: the database holds none ('dcm subcloud list' shows the fleet; --db or DCM_DB names the database)\nerror: Strategy has no steps to apply\n");
    } finally {
      empty.cleanup();
    }
  });

  test('nothing said when nobody is left out; --target-version checked as a usage error', () => {
    ok('subcloud', 'add', 's1', 's2');
    const created = ok('strategy', 'create', '--type', 'patch', '--patch-id', 'P');
    expect(created.stderr).toBe('');
    const bad = run('strategy', 'create', '--type', 'kubernetes', '--to-version', 'v1', '--target-version', '1');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('error: --target-version applies to patch and sw-deploy (a subcloud\'s software_version), not kubernetes: --force takes in-sync subclouds\n');
  });
});
