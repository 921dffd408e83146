/** The exec config's `audit` (README "Audits"): its own keys and defaults, checked as a state's entry is. */
import { describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { UsageError } from '../../../src/domain/errors.js';
import { statesOf } from '../../../src/domain/types.js';
import { typeExtraArgs } from '../../../src/domain/options.js';
import { parseConfigText, resolveAuditConfig, resolveConfig } from '../../../src/drivers/exec/config.js';
import { checkAuditAlone, checkTypeOptions } from '../../../src/drivers/exec/lint.js';

const FILE = path.join(path.sep, 'srv', 'cfg', 'exec.yaml');
const PATCH = statesOf('patch');
const resolve = (text: string) => resolveConfig(parseConfigText(text, FILE), FILE, PATCH);
const problem = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  throw new Error('accepted');
};

describe('exec config: audit', () => {
  test('optional; a command or a mapping; 1m by default, whatever the defaults’ timeout; their env, cwd and kill_grace apply', () => {
    expect(resolve('states: {"*": ["true"]}').audit).toBeUndefined();
    const c = resolve(`
defaults: {timeout: 2h, retries: 3, kill_grace: 2s, env: {SITE_USER: admin}, cwd: scripts}
states: {"*": ["true"]}
audit: ssh {oam_floating_ip} site-state
`);
    expect(c.audit).toEqual({
      state: 'audit',
      run: 'ssh {oam_floating_ip} site-state',
      timeoutMs: 60_000,
      retries: 0,
      backoffMinMs: 5000,
      backoffMaxMs: 300_000,
      killGraceMs: 2000,
      env: { SITE_USER: 'admin' },
      cwd: path.join(path.sep, 'srv', 'cfg', 'scripts'),
    });
    const m = resolve('states: {"*": ["true"]}\naudit: {run: [./state.sh, "{cloud}"], timeout: 5s, cwd: /opt}\n');
    expect(m.audit).toMatchObject({ run: ['./state.sh', '{cloud}'], timeoutMs: 5000, cwd: '/opt' });
  });

  test('every error names audit and the key', () => {
    expect(problem(() => resolve('states: {"*": ["true"]}\naudit: {run: ["true"], retries: 1}\n'))).toBe(
      `exec config ${FILE}: audit: retries: unknown key; use run, timeout, kill_grace, env, cwd`,
    );
    expect(problem(() => resolve('states: {"*": ["true"]}\naudit: "site-state {colour}"\n'))).toBe(`exec config ${FILE}: audit: run: unknown placeholder {colour}`);
    expect(problem(() => resolve('states: {"*": ["true"]}\naudit: {run: ["true"], timeout: 10}\n'))).toMatch(/^exec config .*: audit: timeout: bad duration 10: /);
    expect(problem(() => resolve('states: {"*": ["true"]}\naudit: 5\n'))).toBe(`exec config ${FILE}: audit: expected a command (a list or a string) or a mapping with "run"`);
    expect(problem(() => resolve('states: {"*": ["true"]}\naudits: ["true"]\n'))).toBe(`exec config ${FILE}: audits: unknown key: use defaults, states, probe, defer_exit_codes, defer_on_timeout, fail_exit_codes, audit, gate_check, on_event, metrics_textfile`);
  });

  test('subcloud audit’s file: audit required, states not checked, no type option', () => {
    expect(resolveAuditConfig(parseConfigText('audit: ["true"]\nstates: {nonsense: 1}\n', FILE), FILE)).toMatchObject({ state: 'audit', run: ['true'] });
    expect(problem(() => resolveAuditConfig(parseConfigText('states: {"*": ["true"]}\n', FILE), FILE))).toBe(
      `exec config ${FILE}: audit: missing: give the command that prints the site's state as JSON`,
    );
    const spec = resolveAuditConfig(parseConfigText('audit: [site-state, "{cloud}", "{patch_id}"]\n', FILE), FILE);
    expect(problem(() => checkAuditAlone(spec, FILE))).toBe(
      `exec config ${FILE}: audit: run: {patch_id} is a strategy's option, and subcloud audit runs for none: read $DCM_ARG_PATCH_ID, set only when apply runs the audit`,
    );
  });

  test('at create, the audit’s type options are checked against the strategy as a state’s are', () => {
    const c = resolve('states: {"*": ["true"]}\naudit: [site-state, "{patch_id}"]\n');
    expect(problem(() => checkTypeOptions(c, FILE, 'patch', typeExtraArgs('patch', {})))).toBe(
      `exec config ${FILE}: audit: run: {patch_id} is used but the strategy has no --patch-id: give it, or read $DCM_ARG_PATCH_ID, set only when given`,
    );
    expect(() => checkTypeOptions(c, FILE, 'patch', typeExtraArgs('patch', { patchId: 'p1' }))).not.toThrow();
  });
});
