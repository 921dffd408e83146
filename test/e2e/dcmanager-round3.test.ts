/**
 * dcmanager's scripts, round three (issue 33), through the built binary: the exit codes of the
 * checks dcmanager's client makes itself (exit 1, as the client; a second positional, exit 2, as
 * argparse), what the server says when it refuses to prestage a subcloud, the old client's patch
 * strategy, and strategy-config delete's words. What the commands print is held by the golden
 * files (test/golden/cases.json, the cases marked issue 33).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectErrorLine, fileHash, withSql, templateFleet } from '../helpers/fleet.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let made: ReturnType<typeof templateFleet>;
beforeAll(() => {
  made = templateFleet((template) => {
    dcmQuickOk(['--db', template, 'subcloud-group', 'add', '--name', 'canary']);
    dcmQuickOk(['--db', template, 'subcloud', 'add', 'subcloud1', 'subcloud2', '--group', 'canary']);
    dcmQuickOk(['--db', template, 'subcloud', 'add', 'subcloud3', 'subcloud4']);
  });
});
afterAll(() => made.cleanup());
/** A fresh copy of the template fleet. */
const fleet = (): string => made.fleet();

describe("exit codes of the client's own checks (issue 33, item 5)", () => {
  // [what, args, exit code, message]: each refused with one error line and the file unchanged.
  const cases: [string, string[], 1 | 2, string | RegExp][] = [
    ['--for-install with --for-sw-deploy', ['prestage-strategy', 'create', '--for-install', '--for-sw-deploy'], 1, 'Options --for-install and --for-sw-deploy cannot be combined'],
    ['the same on subcloud prestage', ['subcloud', 'prestage', 'subcloud1', '--for-install', '--for-sw-deploy'], 1, 'Options --for-install and --for-sw-deploy cannot be combined'],
    ['a cloud with --group', ['patch-strategy', 'create', 'subcloud1', '--group', 'canary'], 1, 'The cloud_name and group options are mutually exclusive.'],
    ['--group with --max-parallel-subclouds', ['strategy', 'create', '--type', 'patch', '--group', 'canary', '--max-parallel-subclouds', '3'], 1, 'The --max-parallel-subclouds options is not supported when --group option is applied.'],
    ['--rollback with --cleanup', ['sw-deploy-strategy', 'create', '--rollback', '--cleanup'], 1, /^Option --rollback cannot be used with any of the following options/],
    ['a missing --release-id', ['sw-deploy-strategy', 'create'], 1, 'The --release-id is required to create a deploy strategy.'],
    ['an unknown -c column on a read', ['subcloud', 'list', '-c', 'nosuch'], 1, /^No recognized column names in \['nosuch'\]/],
    ['an unknown -c column on a write', ['subcloud', 'update', 'subcloud1', '--location', 'x', '-c', 'nosuch'], 1, /^No recognized column names in \['nosuch'\]/],
    ['a group window that is not a number', ['subcloud-group', 'add', '--name', 'g', '--max_parallel_subclouds', 'two'], 1, "Invalid group max_parallel_subclouds 'two': give a whole number from 1 to 5000"],
    ['the same on update', ['subcloud-group', 'update', 'canary', '--max_parallel_subclouds', '0'], 1, "Invalid group max_parallel_subclouds '0': give a whole number from 1 to 5000"],
    // argparse's own refusals stay usage errors, exit 2, as the client's.
    ['two positionals to kube-upgrade-strategy create', ['kube-upgrade-strategy', 'create', 'x', 'y'], 2, /too many arguments/],
    ['three positionals to patch-strategy create', ['patch-strategy', 'create', 'subcloud1', 'P1', 'P2'], 2, /too many arguments/],
    ['a strategy window that is not a number', ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', 'two'], 2, /max-parallel-subclouds.*'two'/],
  ];
  test.each(cases)('%s', (_what, args, code, message) => {
    const db = fleet();
    const before = fileHash(db);
    expectErrorLine(dcmQuick(['--db', db, ...args]), code, message);
    expect(fileHash(db)).toBe(before);
  });

  test("dcm's own `strategy create` still takes several clouds (one stage, in the order given)", () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'kubernetes', 'subcloud3', 'subcloud1']);
    expect(dcmQuickOk(['--db', db, 'strategy-step', 'list', '-f', 'value', '-c', 'cloud']).stdout).toBe('subcloud3\nsubcloud1\n');
  });
});

describe("subcloud prestage refused in the server's words (issue 33, item 7)", () => {
  const cases: [string, string[], string][] = [
    ['offline', ['--availability', 'offline'], "Prestage failed 'subcloud1': Subcloud is offline."],
    ['unmanaged', ['--management', 'unmanaged'], "Prestage failed 'subcloud1': Subcloud is not managed."],
    ['secondary', ['--deploy-status', 'secondary'], 'Cannot perform on secondary state subcloud'],
    ['secondary-failed, and offline: the secondary check first', ['--deploy-status', 'secondary-failed', '--availability', 'offline'], 'Cannot perform on secondary-failed state subcloud'],
    ['offline and unmanaged: offline first', ['--availability', 'offline', '--management', 'unmanaged'], "Prestage failed 'subcloud1': Subcloud is offline."],
    ['deploying', ['--deploy-status', 'deploying'], "Prestage failed 'subcloud1': Prestage operation is not allowed when subcloud deploy is in progress."],
  ];
  test.each(cases)('%s', (_what, state, message) => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud1', ...state]);
    const before = fileHash(db);
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'prestage', 'subcloud1', '--sim-latency', '0']), 1, message);
    expect(fileHash(db)).toBe(before);
    expectErrorLine(dcmQuick(['--db', db, 'strategy', 'show']), 1, 'Strategy not found');
  });

  test('strategy-config delete says strategy config, then the server\'s reason', () => {
    const db = fleet();
    expectErrorLine(dcmQuick(['--db', db, 'strategy-config', 'delete', 'nosuch', '--yes']), 1, 'Unable to delete strategy config: Subcloud not found');
    expectErrorLine(dcmQuick(['--db', db, 'strategy-config', 'delete', 'subcloud1', '--yes']), 1, 'Unable to delete strategy config: Subcloud patch options not found');
  });
});

describe("the old client's patch strategy (issue 33, item 6)", () => {
  const stored = async (db: string) =>
    await withSql(db, async (d) => JSON.parse((await d.prepare('SELECT extra_args FROM strategy').get() as { extra_args: string }).extra_args) as Record<string, unknown>);
  const clouds = (db: string) => dcmQuickOk(['--db', db, 'strategy-step', 'list', '-f', 'value', '-c', 'cloud']).stdout;

  test('a lone word that names no subcloud is the patch id, for the fleet; one that names a subcloud is the cloud', async () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'patch-strategy', 'create', 'PATCH_0001', '--upload-only']);
    expect(await stored(db)).toMatchObject({ patch_id: 'PATCH_0001', upload_only: true, remove: false, cloud_name: null });
    // Every subcloud, Default's stage first.
    expect(clouds(db)).toBe('subcloud3\nsubcloud4\nsubcloud1\nsubcloud2\n');
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    dcmQuickOk(['--db', db, 'patch-strategy', 'create', 'subcloud3']);
    expect(await stored(db)).toMatchObject({ patch_id: null, cloud_name: 'subcloud3' });
    expect(clouds(db)).toBe('subcloud3\n');
  });

  test('cloud_name then patch_id; --remove; the patch id given twice is refused', async () => {
    const db = fleet();
    const rec = JSON.parse(dcmQuickOk(['--db', db, 'patch-strategy', 'create', 'subcloud2', 'PATCH_0002', '--remove', '-f', 'json']).stdout);
    expect(rec['upload only']).toBe(false);
    expect(await stored(db)).toMatchObject({ patch_id: 'PATCH_0002', remove: true, cloud_name: 'subcloud2' });
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    const before = fileHash(db);
    expectErrorLine(dcmQuick(['--db', db, 'patch-strategy', 'create', 'subcloud2', 'P1', '--patch-id', 'P2']), 2, 'the patch id is given twice (P1 and --patch-id P2): give one');
    expect(fileHash(db)).toBe(before);
  });

  test('`strategy create --type patch WORD` keeps WORD a cloud name: a typo is not a fleet-wide patch', () => {
    const db = fleet();
    expectErrorLine(dcmQuick(['--db', db, 'strategy', 'create', '--type', 'patch', 'nosuch']), 1, 'Subcloud nosuch does not exist');
  });
});
