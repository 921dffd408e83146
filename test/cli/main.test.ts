/**
 * Every error of SPEC §5 and every bad input, through the CLI's single exit point (`main`, in
 * process): one `error: ` line on stderr, no stack trace, exit 1 (operation) or 2 (usage), and the
 * database file byte for byte unchanged — or not created at all. test/e2e/errors.test.ts runs a
 * sample of the same through the built binary.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REAL_PROCS } from '../../src/platform/runtime.js';
import { describe, expect, test } from '@jest/globals';
import { exampleFixtures, withSql, type Fixture } from '../helpers/fleet.js';
import { expectRefusedInProcess as expectRefused, run } from '../helpers/inprocess.js';

const fx = exampleFixtures();

type Case = [title: string, args: string[], code: 1 | 2, message: string | RegExp];

/** Run each case on a fresh copy of the fixture, as `dcm --db <copy> ...args`. */
function refuse(fx: () => Fixture, cases: Case[]): void {
  test.each(cases)('%s', async (_title, args, code, message) => {
    const { dir, db } = fx().fresh();
    await expectRefused(dir, ['--db', db, ...args], code, message);
  });
}

// The server's words (utils.validate_strategy_payload): `For <type> strategy,`, but `For prestage,`.
const range = (n: string | number, type = 'patch', max = 5000) =>
  `Invalid max-parallel-subclouds value: ${n}. For ${type === 'prestage' ? type : `${type} strategy`}, the value must be between 1 and ${max}.`;

describe('strategy create: bad option values (exit 2; the checks dcmanager\'s client makes itself, exit 1)', () => {
  refuse(() => fx.fleet, [
    // The client passes the number on and the server refuses it with a 400: exit 1 (issue 52).
    ['max parallel -1', ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '-1'], 1, range(-1)],
    ['max parallel 5001', ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '5001'], 1, range(5001)],
    ['max parallel 251 for prestage', ['strategy', 'create', '--type', 'prestage', '--max-parallel-subclouds', '251'], 1, range(251, 'prestage', 250)],
    ['max parallel abc', ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', 'abc'], 2, /max-parallel-subclouds.*'abc'/],
    ['max parallel 1.5', ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1.5'], 2, /max-parallel-subclouds.*'1\.5'/],
    ['apply type diagonal', ['strategy', 'create', '--type', 'patch', '--subcloud-apply-type', 'diagonal'], 2, /subcloud-apply-type.*'diagonal'/],
    ['unknown --type', ['strategy', 'create', '--type', 'nope'], 2, /--type.*'nope'/],
    ['missing --type', ['strategy', 'create'], 2, /--type/],
    ['cloud name with --group', ['strategy', 'create', '--type', 'patch', 's1', '--group', 'rest'], 1, 'The cloud_name and group options are mutually exclusive.'],
    [
      '--group with --max-parallel-subclouds',
      ['strategy', 'create', '--type', 'patch', '--group', 'rest', '--max-parallel-subclouds', '3'],
      1,
      'The --max-parallel-subclouds options is not supported when --group option is applied.',
    ],
    [
      '--group with --subcloud-apply-type',
      ['strategy', 'create', '--type', 'patch', '--group', 'rest', '--subcloud-apply-type', 'serial'],
      1,
      'The --subcloud-apply-type is not supported when --group option is applied.',
    ],
  ]);
});

describe('strategy create: SPEC §5 operation errors (exit 1)', () => {
  refuse(() => fx.fleet, [
    ['unknown subcloud', ['strategy', 'create', '--type', 'patch', 'nosuch'], 1, 'Subcloud nosuch does not exist'],
    ['unknown group', ['strategy', 'create', '--type', 'patch', '--group', 'nosuch'], 1, 'Subcloud group nosuch does not exist'],
    ['in-sync cloud, patch', ['strategy', 'create', '--type', 'patch', 's3'], 1, 'Subcloud s3 does not require patching'],
    ['in-sync cloud, --force does not apply to patch', ['strategy', 'create', '--type', 'patch', 's3', '--force'], 1, 'Subcloud s3 does not require patching'],
    ['in-sync cloud, sw-deploy', ['strategy', 'create', '--type', 'sw-deploy', 's3', '--release-id', 'r1'], 1, 'Subcloud s3 does not require software deploy'],
    ['in-sync cloud, kubernetes', ['strategy', 'create', '--type', 'kubernetes', 's3'], 1, 'Subcloud s3 does not require kubernetes update'],
    ['in-sync cloud, kube-rootca-update', ['kube-rootca-update-strategy', 'create', 's3'], 1, 'Subcloud s3 does not require kube rootca update'],
    ['in-sync cloud, firmware', ['strategy', 'create', '--type', 'firmware', 's3'], 1, 'Subcloud s3 does not require firmware update'],
    ['nothing to do: an unmanaged cloud', ['strategy', 'create', '--type', 'patch', 's2'], 1, 'Strategy has no steps to apply'],
    ['nothing to do: an offline cloud', ['strategy', 'create', '--type', 'patch', 's5'], 1, 'Strategy has no steps to apply'],
  ]);

  test('Patching sync status is unknown for one or more subclouds', async () => {
    const { dir, db } = fx.fleet.fresh();
    await run(['--db', db, 'subcloud', 'update', 's7', '--sync', 'patching=unknown']);
    await expectRefused(dir, ['--db', db, 'strategy', 'create', '--type', 'patch'], 1, 'Patching sync status is unknown for one or more subclouds');
    // Only the candidates count: the same unknown on an offline subcloud is no error.
    expect((await run(['--db', db, 'subcloud', 'update', 's7', '--availability', 'offline'])).code).toBe(0);
    expect((await run(['--db', db, 'strategy', 'create', '--type', 'patch'])).code).toBe(0);
  });

  test('Strategy has no steps to apply, on a missing file: no file is created', async () => {
    const { dir } = fx.fleet.fresh(true);
    await expectRefused(dir, ['--db', path.join(dir, 'dcm.db'), 'strategy', 'create', '--type', 'patch'], 1, 'Strategy has no steps to apply');
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

describe('strategy create: type options (exit 2; those dcmanager\'s client checks itself, exit 1)', () => {
  refuse(() => fx.fleet, [
    ['sw-deploy without --release-id', ['strategy', 'create', '--type', 'sw-deploy'], 1, /--release-id/],
    ['sw-deploy --rollback with --release-id', ['sw-deploy-strategy', 'create', '--rollback', '--release-id', 'r1'], 1, /--rollback.*--release-id/],
    ['sw-deploy --rollback with --with-prestage', ['sw-deploy-strategy', 'create', '--rollback', '--with-prestage'], 1, /--rollback.*--with-prestage/],
    ['sw-deploy --cleanup with --kube-upgrade', ['sw-deploy-strategy', 'create', '--cleanup', '--kube-upgrade', 'v1.29'], 1, /--cleanup.*--kube-upgrade/],
    ['sw-deploy --snapshot with --rollback', ['sw-deploy-strategy', 'create', '--snapshot', '--rollback'], 1, /(--rollback.*--snapshot|--snapshot.*--rollback)/],
    ['sw-deploy --delete with --cleanup', ['sw-deploy-strategy', 'create', '--delete', '--cleanup'], 1, /(--cleanup.*--delete|--delete.*--cleanup)/],
    ['kube-rootca-update --cert-file with --subject', ['strategy', 'create', '--type', 'kube-rootca-update', '--cert-file', 'ca.pem', '--subject', 'C=CA'], 2, /--cert-file.*--subject/],
    ['kube-rootca-update --cert-file with --expiry-date', ['kube-rootca-update-strategy', 'create', '--cert-file', 'ca.pem', '--expiry-date', '2030-01-01'], 2, /--cert-file.*--expiry-date/],
    ['prestage --for-install with --for-sw-deploy', ['prestage-strategy', 'create', '--for-install', '--for-sw-deploy'], 1, /--for-install.*--for-sw-deploy/],
    // The server's check (get_validated_sw_version_for_prestage, a 400): MM.mm only.
    ['prestage bad --release', ['prestage-strategy', 'create', '--release', '24.9'], 1, 'Specified release format is not supported. Version format must be MM.mm.'],
    ['an option of another type', ['strategy', 'create', '--type', 'patch', '--to-version', 'v1.29'], 2, '--to-version is not an option of strategy type patch'],
    ['an alias offers only its own type options', ['patch-strategy', 'create', '--release-id', 'r1'], 2, /--release-id/],
  ]);
});

describe('the order of the checks (SPEC §5)', () => {
  refuse(() => fx.withStrategy, [
    ['1. a second strategy create while one exists', ['strategy', 'create', '--type', 'patch'], 1, "Strategy of type: 'patch' already exists"],
    ['1. of another type', ['strategy', 'create', '--type', 'kubernetes'], 1, "Strategy of type: 'patch' already exists"],
    // SPEC §4: option values are checked before the file is read, so a strategy that exists does
    // not hide a bad value.
    ['a bad value (3) before 1', ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '-1'], 1, range(-1)],
    ['a bad --sim-latency before 1', ['strategy', 'create', '--type', 'patch', '--sim-latency', 'fast'], 2, /^Invalid --sim-latency value: fast/],
    ['a bad --sim-fail state before 1', ['strategy', 'create', '--type', 'patch', '--sim-fail', 's1=nosuch'], 2, /^Invalid --sim-fail state 'nosuch'/],
    ['a bad type option before 1', ['strategy', 'create', '--type', 'patch', '--to-version', 'v1'], 2, '--to-version is not an option of strategy type patch'],
    ['1 before 3 when 2 applies too', ['strategy', 'create', '--type', 'patch', '--group', 'rest', '--max-parallel-subclouds', '-1'], 1, "Strategy of type: 'patch' already exists"],
    ['1 before 2', ['strategy', 'create', '--type', 'patch', 's1', '--group', 'rest'], 1, "Strategy of type: 'patch' already exists"],
  ]);
  refuse(() => fx.fleet, [
    ['2 before 3', ['strategy', 'create', '--type', 'patch', '--group', 'rest', '--max-parallel-subclouds', '-1'], 1, 'The --max-parallel-subclouds options is not supported when --group option is applied.'],
    ['2 before 4', ['strategy', 'create', '--type', 'patch', 'nosuch', '--group', 'nosuch'], 1, 'The cloud_name and group options are mutually exclusive.'],
    ['3 before 4', ['strategy', 'create', '--type', 'patch', 'nosuch', '--max-parallel-subclouds', '5001'], 1, range(5001)],
    ['4 before 5', ['strategy', 'create', '--type', 'patch', 's3x'], 1, 'Subcloud s3x does not exist'],
  ]);
});

describe('subcloud inventory errors', () => {
  refuse(() => fx.fleet, [
    ['--sync patching=maybe', ['subcloud', 'add', 'z1', '--sync', 'patching=maybe'], 2, /maybe/],
    ['--sync nope=in-sync', ['subcloud', 'add', 'z1', '--sync', 'nope=in-sync'], 2, /nope/],
    ['--sync without =', ['subcloud', 'update', 's1', '--sync', 'patching'], 2, /patching/],
    ['bad --management', ['subcloud', 'add', 'z1', '--management', 'sometimes'], 2, /sometimes/],
    ['bad --availability', ['subcloud', 'update', 's1', '--availability', 'up'], 2, /'up'/],
    ['a name taken', ['subcloud', 'add', 'z1', 's1'], 1, 'Subcloud s1 already exists'],
    ['a name given twice', ['subcloud', 'add', 'z1', 'z1'], 1, /z1/],
    ['an unknown group', ['subcloud', 'add', 'z1', '--group', 'nosuch'], 1, 'Subcloud group nosuch does not exist'],
    ['update of an unknown subcloud changes none', ['subcloud', 'update', 's1', 'nosuch', '--availability', 'offline'], 1, 'Subcloud nosuch does not exist'],
    ['update with nothing to change', ['subcloud', 'update', 's1'], 1, 'Nothing to update'],
    ['show an unknown subcloud', ['subcloud', 'show', 'nosuch'], 1, 'Subcloud nosuch does not exist'],
    ['delete an unknown subcloud', ['subcloud', 'delete', 'nosuch'], 1, 'Subcloud nosuch does not exist'],
    ['list an unknown group', ['subcloud', 'list', '--group', 'nosuch'], 1, 'Subcloud group nosuch does not exist'],
  ]);
  refuse(() => fx.withStrategy, [
    ['delete a subcloud that has a step', ['subcloud', 'delete', 's1'], 1, /^Subcloud s1 has a step/],
    ['delete several, one with a step: none deleted', ['subcloud', 'delete', 's2', 's4'], 1, /^Subcloud s4 has a step/],
  ]);
});

describe('subcloud-group errors', () => {
  refuse(() => fx.fleet, [
    ['delete group Default', ['subcloud-group', 'delete', 'Default'], 1, /Default/],
    ['delete group 1 (Default by id)', ['subcloud-group', 'delete', '1'], 1, /Default/],
    ['delete a group with subclouds', ['subcloud-group', 'delete', 'rest'], 1, /rest/],
    ['delete an unknown group', ['subcloud-group', 'delete', 'nosuch'], 1, 'Subcloud group nosuch does not exist'],
    ['update with nothing to change', ['subcloud-group', 'update', 'canary'], 1, 'Nothing to update'],
    ['rename to a name taken', ['subcloud-group', 'update', 'canary', '--name', 'rest'], 1, /rest/],
    ['add a name taken', ['subcloud-group', 'add', '--name', 'canary'], 1, /canary/],
    ['add without --name', ['subcloud-group', 'add'], 2, /--name/],
    ['max parallel 0', ['subcloud-group', 'add', '--name', 'g', '--max_parallel_subclouds', '0'], 1, /'0'/],
    ['max parallel 5001', ['subcloud-group', 'update', 'canary', '--max-parallel-subclouds', '5001'], 1, /'5001'/],
    ['max parallel abc', ['subcloud-group', 'add', '--name', 'g', '--max_parallel_subclouds', 'abc'], 1, /'abc'/],
    // The client passes it on; the server refuses it (SubcloudGroupsController.post): exit 1.
    ['apply type diagonal', ['subcloud-group', 'add', '--name', 'g', '--update_apply_type', 'diagonal'], 1, 'Invalid group update_apply_type'],
    ['show an unknown group', ['subcloud-group', 'show', 'nosuch'], 1, 'Subcloud group nosuch does not exist'],
    ['list-subclouds of an unknown group', ['subcloud-group', 'list-subclouds', 'nosuch'], 1, 'Subcloud group nosuch does not exist'],
  ]);
});

describe('import: all rows or none, the bad line named', () => {
  const files: Record<string, string> = {
    'dup.csv': 'name,group\nz1,Default\nz2,canary\nz1,rest\n',
    'taken.jsonl': '{"name":"z1"}\n{"name":"z2"}\n{"name":"s4"}\n',
    'noname.csv': 'nam,group\nz1,Default\n',
    'noname.json': '[\n{"name":"z1"},\n{"group":"rest"}\n]\n',
    'broken.jsonl': '{"name":"z1"}\n{"name":"z2"}\n{"name":"z3",\n{"name":"z4"}\n',
    'broken.json': '[\n  {"name": "z1"},\n  {"name": "z2" "group": "rest"},\n  {"name": "z3"}\n]\n',
    // V8 quotes the broken text, newline included, in its message: still one error line.
    'split.json': '[\n{"name":"z1"},\n{"name":\n}\n]\n',
    'badsync.csv': 'name,patching\nz1,in-sync\nz2,maybe\n',
    'nogroup.jsonl': '{"name":"z1"}\n{"name":"z2"}\n{"name":"z3","group":"nosuch"}\n',
  };
  const cases: [string, string, RegExp][] = [
    ['a duplicate name', 'dup.csv', /^line 4: .*z1/],
    ['a name already in the file', 'taken.jsonl', /^line 3: Subcloud s4 already exists$/],
    ['a CSV without a name column', 'noname.csv', /^line 1: .*'name'/],
    ['a JSON row without a name', 'noname.json', /^line 3: .*'name'/],
    ['broken JSON on line 3 (JSON lines)', 'broken.jsonl', /^line 3: /],
    ['broken JSON on line 3 (JSON array)', 'broken.json', /^line 3: /],
    ['broken JSON across lines 3 and 4 (JSON array)', 'split.json', /^line [34]: invalid JSON/],
    ['a bad sync value', 'badsync.csv', /^line 3: .*maybe/],
    ['an unknown group', 'nogroup.jsonl', /^line 3: Subcloud group nosuch does not exist$/],
  ];
  test.each(cases)('%s', async (_title, file, message) => {
    const { dir, db } = fx.fleet.fresh();
    const src = path.join(dir, file);
    fs.writeFileSync(src, files[file]);
    await expectRefused(dir, ['--db', db, 'subcloud', 'import', src], 1, message);
  });

  test('a file that cannot be read', async () => {
    const { dir, db } = fx.fleet.fresh();
    await expectRefused(dir, ['--db', db, 'subcloud', 'import', path.join(dir, 'missing.csv')], 1, /missing\.csv/);
  });
});

describe('the database file', () => {
  test('--db in a missing directory: refused, for reads and writes, nothing created', async () => {
    const { dir } = fx.fleet.fresh(true);
    const db = path.join(dir, 'nodir', 'dcm.db');
    await expectRefused(dir, ['--db', db, 'subcloud', 'add', 's1'], 1, /nodir/);
    await expectRefused(dir, ['--db', db, 'subcloud', 'list'], 1, /nodir/);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('--db on a directory', async () => {
    const { dir } = fx.fleet.fresh(true);
    fs.mkdirSync(path.join(dir, 'sub'));
    await expectRefused(dir, ['--db', path.join(dir, 'sub'), 'subcloud', 'add', 's1'], 1, /directory/);
    await expectRefused(dir, ['--db', path.join(dir, 'sub'), 'strategy-step', 'list'], 1, /directory/);
    expect(fs.readdirSync(path.join(dir, 'sub'))).toEqual([]);
  });

  test('--db on a text file', async () => {
    const { dir } = fx.fleet.fresh(true);
    const db = path.join(dir, 'notes.txt');
    fs.writeFileSync(db, 'hello, this is not a database\n'.repeat(10));
    await expectRefused(dir, ['--db', db, 'subcloud', 'add', 's1'], 1, /not a dcm database/);
    await expectRefused(dir, ['--db', db, 'subcloud', 'list'], 1, /not a dcm database/);
  });

  test('--db on an SQLite file that is not dcm’s', async () => {
    const { dir } = fx.fleet.fresh(true);
    const db = path.join(dir, 'other.db');
    await withSql(db, (d) => d.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)'), true);
    await expectRefused(dir, ['--db', db, 'subcloud', 'add', 's1'], 1, /not a dcm database/);
    await expectRefused(dir, ['--db', db, 'subcloud-group', 'list'], 1, /not a dcm database/);
  });

  test('--db on a database from a newer dcm', async () => {
    const { dir, db } = fx.fleet.fresh();
    await withSql(db, (d) => d.pragma('user_version = 99'));
    await expectRefused(dir, ['--db', db, 'subcloud', 'add', 'z1'], 1, /newer/);
    await expectRefused(dir, ['--db', db, 'subcloud', 'list'], 1, /newer/);
    await expectRefused(dir, ['--db', db, 'strategy', 'create', '--type', 'patch'], 1, /newer/);
    expect(await withSql(db, (d) => d.pragma('user_version', { simple: true }))).toBe(99);
  });

  test('a refused write on a missing file creates nothing', async () => {
    const { dir } = fx.fleet.fresh(true);
    const db = path.join(dir, 'dcm.db');
    await expectRefused(dir, ['--db', db, 'subcloud', 'add', 's1', '--group', 'nosuch'], 1, 'Subcloud group nosuch does not exist');
    await expectRefused(dir, ['--db', db, 'subcloud', 'add', 's1', '--sync', 'patching=maybe'], 2, /maybe/);
    await expectRefused(dir, ['--db', db, 'subcloud-group', 'delete', 'Default'], 1, /Default/);
    fs.writeFileSync(path.join(dir, '..', 'dup.csv'), 'name\ns1\ns1\n');
    await expectRefused(dir, ['--db', db, 'subcloud', 'import', path.join(dir, '..', 'dup.csv')], 1, /^line 3: /);
    await expectRefused(dir, ['--db', db, 'subcloud', 'add', 's1', '-c', 'nope'], 1, /nope/);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

describe('strategy show, delete and steps', () => {
  refuse(() => fx.fleet, [
    ['show without a strategy', ['strategy', 'show'], 1, /not found/],
    ['delete without a strategy', ['strategy', 'delete'], 1, /not found/],
    ['step of a cloud without a step', ['strategy-step', 'show', 's1'], 1, /s1/],
  ]);
  refuse(() => fx.withStrategy, [
    ['show --type of another type', ['strategy', 'show', '--type', 'kubernetes'], 1, "Strategy of type 'kubernetes' not found"],
    ['the alias of another type', ['kube-upgrade-strategy', 'show'], 1, "Strategy of type 'kubernetes' not found"],
    ['delete of another type', ['sw-deploy-strategy', 'delete'], 1, "Strategy of type 'sw-deploy' not found"],
    ['step of a cloud without a step', ['strategy-step', 'show', 's2'], 1, /s2/],
  ]);

  test.each(['applying', 'abort requested', 'aborting'])('delete refused in state %s while its orchestrator lives', async (state) => {
    const { dir, db } = fx.withStrategy.fresh();
    await withSql(db, (d) => d.prepare('UPDATE strategy SET state = ?').run(state));
    // The lock of a live process: this test's own (the holder is alive, whatever its heartbeat).
    await withSql(db, (d) =>
      d.prepare(`INSERT INTO apply_lock (id, pid, host, started_at, heartbeat_at, heartbeat_ms, token, proc_start) VALUES (1, ?, ?, 'x', 'x', ?, 'tok', ?)`)
        .run(process.pid, os.hostname(), Date.now(), REAL_PROCS.startOf(process.pid)),
    );
    await expectRefused(dir, ['--db', db, 'strategy', 'delete'], 1, `Strategy in state ${state} cannot be deleted`);
  });

  // Issue 49: an abort left by an orchestrator that is gone, with nothing running, is deleted.
  test.each(['abort requested', 'aborting'])('delete takes a strategy left %s by an orchestrator that is gone', async (state) => {
    const { db } = fx.withStrategy.fresh();
    await withSql(db, (d) => d.prepare('UPDATE strategy SET state = ?').run(state));
    expect((await run(['--db', db, 'strategy', 'delete'])).code).toBe(0);
    expect((await run(['--db', db, 'strategy', 'show'])).code).toBe(1);
  });
});

describe('usage errors', () => {
  refuse(() => fx.withStrategy, [
    ['an unknown command', ['frobnicate'], 2, /frobnicate/],
    ['an unknown verb', ['strategy', 'frobnicate'], 2, /frobnicate/],
    ['an unknown option', ['strategy-step', 'list', '--colour'], 2, /--colour/],
    ['an unknown format', ['strategy', 'show', '-f', 'xml'], 2, /xml/],
    ['a bad --stage', ['strategy-step', 'list', '--stage', 'two'], 2, /two/],
    ['an unknown column on a read', ['strategy-step', 'list', '-c', 'nope'], 1, /nope/],
    ['an unknown column on a write: nothing written', ['strategy', 'delete', '-c', 'nope'], 1, /nope/],
    ['an unknown column on subcloud add: nothing written', ['subcloud', 'add', 'z1', '-c', 'nope'], 1, /nope/],
  ]);
});

describe('DCM_DEBUG', () => {
  test('DCM_DEBUG=1 adds the stack trace after the error line', async () => {
    const { db } = fx.fleet.fresh();
    const { main } = await import('../../src/cli/main.js');
    let stderr = '';
    const io = { stdout: { write: () => true }, stderr: { write: (s: string) => ((stderr += s), true) } };
    process.env.DCM_DEBUG = '1';
    try {
      expect(await main(['--db', db, 'subcloud', 'show', 'nosuch'], io as never)).toBe(1);
    } finally {
      delete process.env.DCM_DEBUG;
    }
    expect(stderr.split('\n')[0]).toBe('error: Subcloud nosuch does not exist');
    expect(stderr).toMatch(/\n\s+at /);
  });
});
