/**
 * dcmanager's scripts, round four (issue 52), through the built binary: what the current server
 * and client do, each test naming the server (or client) function it follows. What the commands
 * print is held by the golden files (test/golden/cases.json, the cases marked issue 52); here, the
 * refusals' exact lines and exit codes, and what is recorded.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dcm, expectErrorLine, fileHash, templateFleet } from '../helpers/fleet.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let made: ReturnType<typeof templateFleet>;
beforeAll(() => {
  made = templateFleet((template) => {
    dcmQuickOk(['--db', template, 'subcloud-group', 'add', '--name', 'canary']);
    dcmQuickOk(['--db', template, 'subcloud', 'add', 'subcloud1', 'subcloud2', '--group', 'canary', '--software-version', '24.09']);
    dcmQuickOk(['--db', template, 'subcloud', 'add', 'subcloud3', 'subcloud4', '--software-version', '22.12']);
  });
});
afterAll(() => made.cleanup());
const fleet = (): string => made.fleet();
const value = (db: string, args: string[]) => dcmQuickOk(['--db', db, ...args, '-f', 'value']).stdout;

/** Refused with one error line, the exit code given, and the file unchanged. */
function refused(db: string, args: string[], code: 1 | 2, message: string | RegExp, env?: Record<string, string>): void {
  const before = fileHash(db);
  expectErrorLine(dcmQuick(['--db', db, ...args], env ? { env } : undefined), code, message);
  expect(fileHash(db)).toBe(before);
}

describe('item 1: the step stage is the server\'s word (SwUpdateStrategyController.get maps it through STAGE_MAP)', () => {
  test('Create, then Apply while a state runs, then Complete once ended; aborted steps are Complete too', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1', '--sim-latency', '0', '--sim-fail', 'subcloud1=pre check']);
    expect(JSON.parse(dcmQuickOk(['--db', db, 'strategy-step', 'list', '-c', 'cloud', '-c', 'stage', '-f', 'json']).stdout)).toEqual([
      { cloud: 'subcloud3', stage: 'Create' },
      { cloud: 'subcloud4', stage: 'Create' },
      { cloud: 'subcloud1', stage: 'Create' },
      { cloud: 'subcloud2', stage: 'Create' },
    ]);
    // Stop on failure: subcloud2 is never started, and abort ends it aborted (never started).
    expect(dcm(['--db', db, 'strategy', 'apply', '-q']).code).toBe(1);
    expect(value(db, ['strategy-step', 'list', '-c', 'cloud', '-c', 'stage', '-c', 'state', '-c', 'stage number'])).toBe(
      'subcloud3 Complete complete 1\nsubcloud4 Complete complete 1\nsubcloud1 Complete failed 2\nsubcloud2 Complete complete 2\n',
    );
    expect(value(db, ['strategy-step', 'show', 'subcloud1', '-c', 'stage', '-c', 'stage number'])).toBe('Complete\n2\n');
  });

  test('`--stage N` still selects dcm\'s stage; `stage number` is never in a listing that does not name it', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1']);
    expect(value(db, ['strategy-step', 'list', '--stage', '2', '-c', 'cloud', '-c', 'stage'])).toBe('subcloud1 Create\nsubcloud2 Create\n');
    expect(Object.keys(JSON.parse(dcmQuickOk(['--db', db, 'strategy-step', 'list', '-f', 'json']).stdout)[0])).toEqual([
      'cloud', 'stage', 'state', 'details', 'started_at', 'finished_at',
    ]);
    expectErrorLine(dcmQuick(['--db', db, 'strategy-step', 'list', '-c', 'Stage']), 1, /Recognized columns are \('cloud', 'stage', 'state', 'details', 'started_at', 'finished_at'\)/);
  });
});

describe("item 2: subcloud prestage's reply and refusals (SubcloudsController.patch verb prestage; prestage.validate_prestage_subcloud)", () => {
  test('the reply says prestaging with the old updated_at; the record says how it ended', () => {
    const db = fleet();
    const reply = JSON.parse(dcmQuickOk(['--db', db, 'subcloud', 'prestage', 'subcloud1', '--sim-latency', '0', '-q', '-f', 'json']).stdout);
    expect(reply).toMatchObject({ prestage_status: 'prestaging', updated_at: null, prestage_software_version: '24.09' });
    expect(value(db, ['subcloud', 'show', 'subcloud1', '-c', 'prestage_status'])).toBe('complete\n');
  });

  test("without --release, the system controller's: DCM_SYSTEM_CONTROLLER_RELEASE, else the inventory's newest", () => {
    const db = fleet();
    const env = { DCM_SYSTEM_CONTROLLER_RELEASE: '25.09' };
    expect(dcmQuickOk(['--db', db, 'subcloud', 'prestage', 'subcloud3', '--sim-latency', '0', '-q', '-f', 'value', '-c', 'prestage_software_version'], { env }).stdout).toBe('25.09\n');
    expect(value(db, ['subcloud', 'prestage', 'subcloud4', '--sim-latency', '0', '-q', '-c', 'prestage_software_version'])).toBe('24.09\n');
    refused(db, ['subcloud', 'prestage', 'subcloud2'], 2, "invalid DCM_SYSTEM_CONTROLLER_RELEASE '25.9': give a release as MM.mm, such as 24.09", { DCM_SYSTEM_CONTROLLER_RELEASE: '25.9' });
  });

  const cases: [string, string[], string[], string][] = [
    ['a release not MM.mm', [], ['--release', '24.09.1'], "Prestage failed 'subcloud1': Specified release format is not supported. Version format must be MM.mm."],
    ['the release checked before the state', ['--availability', 'offline'], ['--release', '2409'], "Prestage failed 'subcloud1': Specified release format is not supported. Version format must be MM.mm."],
    ['for software deploy, a release before 24.09', [], ['--for-sw-deploy', '--release', '22.12'], "Prestage failed 'subcloud1': The requested software version is not supported, cannot prestage for software deploy."],
    ['a backup in progress', ['--backup-status', 'backing-up'], [], "Prestage failed 'subcloud1': Prestage operation is not allowed while backup is in progress."],
    ['a deploy in progress', ['--deploy-status', 'installing'], [], "Prestage failed 'subcloud1': Prestage operation is not allowed when subcloud deploy is in progress."],
    [
      'a prestage under way',
      ['--prestage-status', 'prestaging'],
      [],
      "Prestage failed 'subcloud1': Prestage operation is only allowed while subcloud prestage status is one of: failed, complete. The current prestage status is prestaging.",
    ],
  ];
  test.each(cases)('refused: %s (exit 1)', (_what, state, args, message) => {
    const db = fleet();
    if (state.length) dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud1', ...state]);
    refused(db, ['subcloud', 'prestage', 'subcloud1', '--sim-latency', '0', ...args], 1, message);
  });

  test('allowed: deploy status sw-deploy-apply-strategy-failed, prestage status failed (initial_subcloud_validate)', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud1', '--deploy-status', 'sw-deploy-apply-strategy-failed', '--prestage-status', 'failed']);
    expect(dcm(['--db', db, 'subcloud', 'prestage', 'subcloud1', '--sim-latency', '0', '-q']).code).toBe(0);
    // The prestage strategy takes such a subcloud too.
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud2', '--deploy-status', 'sw-deploy-apply-strategy-failed']);
    dcmQuickOk(['--db', db, 'prestage-strategy', 'create', 'subcloud2']);
  });

  test('prestage-strategy create: the release in the server\'s words, without the subcloud (its controller\'s 400)', () => {
    refused(fleet(), ['prestage-strategy', 'create', '--release', '24.9'], 1, 'Specified release format is not supported. Version format must be MM.mm.');
  });
});

describe('item 3: what the server refuses with a 400 exits 1, in its words (utils.validate_strategy_payload, SubcloudGroupsController.post)', () => {
  const cases: [string, string[], string][] = [
    ['max parallel -1', ['kube-upgrade-strategy', 'create', '--max-parallel-subclouds', '-1'], 'Invalid max-parallel-subclouds value: -1. For kubernetes strategy, the value must be between 1 and 5000.'],
    ['max parallel 5001', ['strategy', 'create', '--type', 'firmware', '--max-parallel-subclouds', '5001'], 'Invalid max-parallel-subclouds value: 5001. For firmware strategy, the value must be between 1 and 5000.'],
    ['max parallel 300 for prestage', ['prestage-strategy', 'create', '--max-parallel-subclouds', '300'], 'Invalid max-parallel-subclouds value: 300. For prestage, the value must be between 1 and 250.'],
    [
      'max parallel 300 for sw-deploy --with-prestage',
      ['sw-deploy-strategy', 'create', '--release-id', 'r1', '--with-prestage', '--sysadmin-password', 'x', '--max-parallel-subclouds', '300'],
      'Invalid max-parallel-subclouds value: 300. For prestage, the value must be between 1 and 250.',
    ],
    ['a group apply type diagonal', ['subcloud-group', 'add', '--name', 'g', '--update_apply_type', 'diagonal'], 'Invalid group update_apply_type'],
    ['the same on update', ['subcloud-group', 'update', 'canary', '--update_apply_type', 'diagonal'], 'Invalid group update_apply_type'],
    ['a group named 2026', ['subcloud-group', 'add', '--name', '2026'], 'Invalid group name'],
  ];
  test.each(cases)('%s', (_what, args, message) => refused(fleet(), args, 1, message));

  test('argparse still refuses what is no number (exit 2), and sw-deploy without --with-prestage keeps 5000', () => {
    refused(fleet(), ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', 'two'], 2, /max-parallel-subclouds.*'two'/);
    dcmQuickOk(['--db', fleet(), 'sw-deploy-strategy', 'create', '--release-id', 'r1', '--max-parallel-subclouds', '300']);
  });
});

describe('item 4: alarm summary newest first (subcloud_alarms_get_all: order_by(desc(id)))', () => {
  test('a tie under --sort-column keeps that order', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud2', '--availability', 'offline']);
    expect(value(db, ['alarm', 'summary', '-c', 'NAME'])).toBe('subcloud4\nsubcloud3\nsubcloud2\nsubcloud1\n');
    expect(value(db, ['alarm', 'summary', '-c', 'NAME', '--sort-column', 'STATUS'])).toBe('subcloud4\nsubcloud3\nsubcloud1\nsubcloud2\n');
  });
});

describe('item 5: rehoming (SubcloudsController.patch, _validate_rehome_pending)', () => {
  test('unmanage --migrate records rehome-pending; manage records complete', () => {
    const db = fleet();
    expect(value(db, ['subcloud', 'unmanage', 'subcloud1', '--migrate', '--yes', '-c', 'management', '-c', 'deploy_status'])).toBe('unmanaged\nrehome-pending\n');
    expect(value(db, ['subcloud', 'manage', 'subcloud1', '-c', 'management', '-c', 'deploy_status'])).toBe('managed\ncomplete\n');
    // A subcloud already unmanaged may be marked; one already rehome-pending is left as it is.
    dcmQuickOk(['--db', db, 'subcloud', 'unmanage', 'subcloud2', '--yes']);
    expect(value(db, ['subcloud', 'unmanage', 'subcloud2', '--migrate', '--yes', '-c', 'deploy_status'])).toBe('rehome-pending\n');
    refused(db, ['subcloud', 'unmanage', 'subcloud2', '--migrate', '--yes'], 1, 'Unable to unmanage subcloud subcloud2: Subcloud is already unmanaged');
  });

  test('refused unless the deploy status is complete, before any other check', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud1', '--deploy-status', 'deploy-failed', '--management', 'unmanaged']);
    refused(
      db,
      ['subcloud', 'unmanage', 'subcloud1', '--migrate', '--yes'],
      1,
      "Unable to unmanage subcloud subcloud1: The deploy status can only be updated to 'rehome-pending' if the current deploy status is 'complete'",
    );
  });
});

describe('item 6: group names and descriptions the server refuses (utils.validate_name, _validate_description)', () => {
  const refusedNames = ['can.ary', 'a*', 'x+', 'q?', 'a|b', '(g)', '[g]', '{g}', '^g', 'g$', '42', 'default', 'DEFAULT', 'x'.repeat(256)];
  test.each(refusedNames.map((n) => [n.length > 20 ? `${n.length} characters` : n, n]))('name %s: Invalid group name (exit 1)', (_shown, name) => {
    refused(fleet(), ['subcloud-group', 'add', '--name', name], 1, 'Invalid group name');
  });

  test('descriptions: empty, or 255 characters or more, refused; 254 taken; an empty one on update changes nothing', () => {
    const db = fleet();
    refused(db, ['subcloud-group', 'add', '--name', 'g', '--description', ''], 1, 'Invalid group description');
    refused(db, ['subcloud-group', 'add', '--name', 'g', '--description', 'd'.repeat(255)], 1, 'Invalid group description');
    refused(db, ['subcloud-group', 'update', 'canary', '--description', 'd'.repeat(255)], 1, 'Invalid group description');
    expect(value(db, ['subcloud-group', 'add', '--name', 'g', '--description', 'd'.repeat(254), '-c', 'name'])).toBe('g\n');
    // The client sends no empty description: with nothing else, nothing to update.
    refused(db, ['subcloud-group', 'update', 'canary', '--description', ''], 1, 'Nothing to update');
    expect(value(db, ['subcloud-group', 'add', '--name', 'x'.repeat(255), '-c', 'id'])).toBe('4\n');
  });

  test('renaming: the same rules; Default keeps its name in the server\'s words', () => {
    const db = fleet();
    refused(db, ['subcloud-group', 'update', 'canary', '--name', 'a.b'], 1, 'Invalid group name');
    refused(db, ['subcloud-group', 'update', 'Default', '--name', 'other'], 1, 'Default group name cannot be changed');
  });
});
