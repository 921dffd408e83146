/**
 * What create refuses in an exec config besides its own shape: a type option the strategy lacks
 * (every run would get it empty) and a placeholder inside shell quotes of a string command (the
 * value is quoted already: the quotes would be kept, or undone).
 */
import { describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { UsageError } from '../../../src/domain/errors.js';
import { typeExtraArgs } from '../../../src/domain/options.js';
import { statesOf, type StrategyType } from '../../../src/domain/types.js';
import { parseConfigText, resolveConfig } from '../../../src/drivers/exec/config.js';
import { checkTypeOptions } from '../../../src/drivers/exec/lint.js';
import { quotedPlaceholders, render } from '../../../src/drivers/exec/placeholders.js';

const FILE = path.join(path.sep, 'srv', 'cfg', 'exec.yaml');

function lint(text: string, type: StrategyType, options: Parameters<typeof typeExtraArgs>[1] = {}): string | null {
  const extra = typeExtraArgs(type, options);
  try {
    const config = resolveConfig(parseConfigText(text, FILE), FILE, type === 'custom' ? null : statesOf(type, extra as { cert_file?: string | null }));
    checkTypeOptions(config, FILE, type, extra);
    return null;
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
}

describe('a type option the strategy lacks', () => {
  const patch = 'states:\n  updating patches: sw-patch apply {patch_id}\n  "*": "true"\n';

  test('--type patch with {patch_id} and no --patch-id: refused, naming the state and the placeholder', () => {
    expect(lint(patch, 'patch')).toBe(
      `exec config ${FILE}: state "updating patches": run: {patch_id} is used but the strategy has no --patch-id: give it, or read $DCM_ARG_PATCH_ID, set only when given`,
    );
    expect(lint(patch, 'patch', { patchId: 'P1' })).toBeNull();
  });

  test('found in a list item, an env value (of the defaults too) and a cwd, under the state "*" stands for', () => {
    expect(lint('states: {"*": [./run.sh, "{to_version}"]}\n', 'kubernetes')).toMatch(/state "kube upgrade pre check": run: \{to_version\} is used but the strategy has no --to-version/);
    expect(lint('defaults: {env: {REL: "{release}"}}\nstates: {"*": "true"}\n', 'prestage')).toMatch(/state "prestage-precheck": env: REL: \{release\} is used but the strategy has no --release/);
    expect(lint('defaults: {env: {REL: "{release}"}}\nstates: {"*": "true"}\n', 'prestage', { release: '24.09' })).toBeNull();
    expect(lint('states: {"*": {run: "true", cwd: "/srv/{release_id}"}}\n', 'sw-deploy', { rollback: true })).toMatch(/state "sw-deploy pre-check": cwd: \{release_id\} is used but the strategy has no --release-id/);
  });

  test("another type's option is not an option of this type", () => {
    expect(lint('states: {"*": "echo {release_id}"}\n', 'patch', { patchId: 'P1' })).toMatch(/state "pre check": run: \{release_id\} is not an option of strategy type patch$/);
    expect(lint('states:\n  one: "echo {patch_id}"\n', 'custom')).toMatch(/state "one": run: \{patch_id\} is not an option of strategy type custom$/);
  });

  test('kube-rootca-update: {cert_file} with --subject is refused, with --cert-file taken', () => {
    const text = 'states: {"*": [./ca.sh, "{cert_file}"]}\n';
    expect(lint(text, 'kube-rootca-update', { subject: 'CN=x' })).toMatch(/\{cert_file\} is used but the strategy has no --cert-file/);
    expect(lint(text, 'kube-rootca-update', { certFile: 'ca.pem' })).toBeNull();
  });

  test('the run\'s own placeholders and literal braces are not type options', () => {
    expect(lint('states: {"*": "awk \'{{print}}\' {cloud} {state} {attempt} {stage} {db} {group}"}\n', 'firmware')).toBeNull();
  });
});

describe('a placeholder inside shell quotes of a string command', () => {
  test('"…" would keep the quotes, \'…\' would leave the value bare: both refused, naming the state', () => {
    expect(lint('states:\n  pre check: ssh "{cloud}" true\n  "*": "true"\n', 'patch')).toBe(
      `exec config ${FILE}: state "pre check": run: {cloud} inside "…" quotes: a string command single-quotes each value itself, so write {cloud}, not "{cloud}"`,
    );
    expect(lint(`states: {"*": "echo 'at {location} now'"}\n`, 'firmware')).toMatch(/state "\*": run: \{location\} inside '…' quotes/);
    // Why: what the shell would be handed.
    expect(render('ssh "{cloud}" true', { cloud: 's1' }, true)).toBe(`ssh "'s1'" true`);
    expect(render("echo 'at {location}'", { location: 'a b' }, true)).toBe("echo 'at 'a b''");
  });

  test('a list item is run without a shell, so quotes there are refused nowhere', () => {
    expect(lint(`states: {"*": [echo, '"{cloud}"']}\n`, 'firmware')).toBeNull();
  });

  test('the scan follows sh: escaped quotes, quotes closed before the value, comments, literal braces', () => {
    expect(quotedPlaceholders(`echo \\"{cloud}\\" 'a' {cloud} "b" {state}`)).toEqual([]);
    expect(quotedPlaceholders(`echo "a \\" {cloud}"`)).toEqual([{ name: 'cloud', quote: '"' }]);
    expect(quotedPlaceholders(`echo 'a\\' {cloud}`)).toEqual([]);
    expect(quotedPlaceholders(`true # "{cloud}"\necho "{state}"`)).toEqual([{ name: 'state', quote: '"' }]);
    expect(quotedPlaceholders(`echo a#"{cloud}"`)).toEqual([{ name: 'cloud', quote: '"' }]);
    expect(quotedPlaceholders(`awk "{{print}}" {cloud} "\${HOME}"`)).toEqual([]);
  });
});
