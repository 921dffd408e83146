/**
 * argparse's unique-prefix abbreviations (issue 20, item 1), resolved against the real program:
 * every abbreviation a dcmanager script was seen to use is spelled out, an exact spelling wins,
 * an ambiguous prefix is a usage error listing the candidates, and option values are never
 * rewritten. test/e2e/dcmanager-script.test.ts runs them through the built binary.
 */
import { describe, expect, test } from '@jest/globals';
import { buildProgram } from '../../src/cli/program.js';
import { expandAbbreviations } from '../../src/cli/abbrev.js';
import { UsageError } from '../../src/domain/errors.js';

const program = await buildProgram(async () => {});
const expand = (s: string[]) => expandAbbreviations(program, s);

describe('unique prefixes are spelled out', () => {
  test.each([
    [['strategy', 'create', '--type', 'patch', '--max-parallel', '3'], ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '3']],
    [['patch-strategy', 'create', '--stop'], ['patch-strategy', 'create', '--stop-on-failure']],
    [['sw-deploy-strategy', 'create', '--release', 'r1'], ['sw-deploy-strategy', 'create', '--release-id', 'r1']],
    [['sw-deploy-strategy', 'create', '--sysadmin', 'pw'], ['sw-deploy-strategy', 'create', '--sysadmin-password', 'pw']],
    [['prestage-strategy', 'create', '--sysadmin=pw'], ['prestage-strategy', 'create', '--sysadmin-password=pw']],
    [['subcloud', 'show', 's1', '--det'], ['subcloud', 'show', 's1', '--detail']],
    [['subcloud', 'list', '--form', 'json', '--noind'], ['subcloud', 'list', '--format', 'json', '--noindent']],
    [['subcloud', 'list', '--max-w', '40', '--sort-c', 'name', '--col', 'name'], ['subcloud', 'list', '--max-width', '40', '--sort-column', 'name', '--column', 'name']],
    [['--form', 'json', 'subcloud', 'list'], ['--format', 'json', 'subcloud', 'list']],
    [['subcloud', '--form', 'json', 'list'], ['subcloud', '--format', 'json', 'list']],
    [['subcloud-group', 'add', '--name', 'g', '--max_', '3'], ['subcloud-group', 'add', '--name', 'g', '--max_parallel_subclouds', '3']],
    // Two spellings of one option are one candidate: the documented one is used.
    [['subcloud-group', 'update', 'g', '--update', 'serial'], ['subcloud-group', 'update', 'g', '--update_apply_type', 'serial']],
    [['strategy', 'delete', '--y'], ['strategy', 'delete', '--yes']],
    [['subcloud', 'list', '--he'], ['subcloud', 'list', '--help']],
    [['strategy-config', 'update', '--storage', 'parallel', '--worker', 'serial', '--max-parallel-w', '2', '--alarm', 'strict', '--default', 'migrate'],
      ['strategy-config', 'update', '--storage-apply-type', 'parallel', '--worker-apply-type', 'serial', '--max-parallel-workers', '2', '--alarm-restriction-type', 'strict', '--default-instance-action', 'migrate']],
  ])('%j', (argv, want) => {
    expect(expand(argv)).toEqual(want);
  });
});

describe('exact spellings and values are left alone', () => {
  test('an exact match wins over a longer option it is a prefix of', () => {
    // `strategy create` has both prestage's --release and sw-deploy's --release-id.
    expect(expand(['strategy', 'create', '--type', 'prestage', '--release', '24.09'])).toContain('--release');
    expect(expand(['strategy', 'create', '--type', 'prestage', '--release', '24.09'])).not.toContain('--release-id');
  });
  test("an option's value is never read as an option, even one that looks like a prefix", () => {
    expect(expand(['subcloud', 'add', 's1', '--description', '--det'])).toEqual(['subcloud', 'add', 's1', '--description', '--det']);
    expect(expand(['subcloud', 'list', '-f', '--noind', '--det'])).toEqual(['subcloud', 'list', '-f', '--noind', '--detail']);
    expect(expand(['subcloud', 'list', '-qc', '--col'])).toEqual(['subcloud', 'list', '-qc', '--col']);
  });
  test('after --, nothing is touched; unknown options are left to commander', () => {
    expect(expand(['subcloud', 'add', '--', '--det'])).toEqual(['subcloud', 'add', '--', '--det']);
    expect(expand(['subcloud', 'list', '--nosuch'])).toEqual(['subcloud', 'list', '--nosuch']);
  });
  test("a prefix of dcmanager's option and of a longer dcm-only one means dcmanager's (scripts keep working)", () => {
    expect(expand(['sw-deploy-strategy', 'create', '--release-id', 'r', '--with-prestage', '--sysadmin', 'pw'])).toContain('--sysadmin-password');
    expect(expand(['sw-deploy-strategy', 'create', '--release-id', 'r', '--with-prestage', '--sysadmin-password-f', 'f'])).toContain('--sysadmin-password-file');
  });
  test("the rollout's later options (gates, probes, audits) take no prefix an older option had", () => {
    expect(expand(['strategy', 'create', '--type', 'patch', '--g', 'canary'])).toEqual(['strategy', 'create', '--type', 'patch', '--group', 'canary']);
    expect(expand(['strategy', 'create', '--type', 'patch', '--ga', 'true'])).toEqual(['strategy', 'create', '--type', 'patch', '--gate-check', 'true']);
    expect(expand(['strategy', 'create', '--type', 'patch', '--pro'])).toEqual(['strategy', 'create', '--type', 'patch', '--probe']);
  });
  test('a subcloud named like a verb is an argument, not a subcommand', () => {
    expect(expand(['subcloud', 'show', 'list', '--det'])).toEqual(['subcloud', 'show', 'list', '--detail']);
  });
});

describe('an ambiguous prefix is a usage error naming the candidates', () => {
  test.each([
    [['subcloud', 'list', '--sort', 'name'], 'ambiguous option: --sort could match --sort-column, --sort-ascending, --sort-descending'],
    [['subcloud-group', 'add', '--name', 'g', '--max', '3'], 'ambiguous option: --max could match --max_parallel_subclouds, --max-width'],
    [['strategy', 'create', '--type', 'patch', '--max', '3'], 'ambiguous option: --max could match --max-parallel-subclouds, --max-failures, --max-width'],
    [['subcloud', 'list', '--no', 'x'], 'ambiguous option: --no could match --noindent, --no-color'],
    [['strategy', 'create', '--type', 'sw-deploy', '--re', 'x'], 'ambiguous option: --re could match --remove, --release, --release-id'],
  ])('%j', (argv, message) => {
    expect(() => expand(argv)).toThrow(UsageError);
    expect(() => expand(argv)).toThrow(message);
  });
});
