/** The exec config (SPEC §7.2): resolved per state, with defaults; every error names state and key. */
import { describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { UsageError } from '../../../src/domain/errors.js';
import { statesOf } from '../../../src/domain/types.js';
import { parseConfigText, resolveConfig } from '../../../src/drivers/exec/config.js';
import { render, unknownPlaceholders } from '../../../src/drivers/exec/placeholders.js';

const FILE = path.join(path.sep, 'srv', 'cfg', 'exec.yaml');
const FW = statesOf('firmware');
const resolve = (text: string, states: readonly string[] | null = FW) => resolveConfig(parseConfigText(text, FILE), FILE, states);

describe('exec config', () => {
  test('defaults apply to every state; a state overrides them; "*" covers the rest; cwd is relative to the file', () => {
    const c = resolve(`
defaults: {timeout: 2h, retries: 1, backoff: 1s..4s, kill_grace: 3s, env: {A: "1", B: "{cloud}"}, cwd: scripts}
states:
  importing firmware: {run: "./import.sh {cloud}", timeout: 5m, env: {B: two}, cwd: /opt}
  "*": [./vim.sh, "{state}"]
`);
    expect(c.states.map((s) => s.state)).toEqual(FW);
    expect(c.states[0]).toEqual({
      state: 'importing firmware',
      run: './import.sh {cloud}',
      timeoutMs: 300_000,
      retries: 1,
      backoffMinMs: 1000,
      backoffMaxMs: 4000,
      killGraceMs: 3000,
      env: { A: '1', B: 'two' },
      cwd: '/opt',
    });
    expect(c.states[1]).toMatchObject({ run: ['./vim.sh', '{state}'], timeoutMs: 7_200_000, env: { A: '1', B: '{cloud}' }, cwd: path.join(path.sep, 'srv', 'cfg', 'scripts') });
  });

  // README "Several hosts": a state with no timeout may go for ever (its run is held as unknown when its host is lost).
  test('timeout: none is no timeout, for a state or as the default; any other word is refused', () => {
    const c = resolve(`
defaults: {timeout: none}
states:
  importing firmware: {run: "true", timeout: 5m}
  "*": "true"
`);
    expect(c.states[0].timeoutMs).toBe(300_000);
    expect(c.states[1].timeoutMs).toBe(Infinity);
    expect(resolve('states: {"*": {run: "true", timeout: none}}').states[0].timeoutMs).toBe(Infinity);
    expect(() => resolve('states: {"*": {run: "true", timeout: never}}')).toThrow(/state "\*": timeout: bad duration "never": .*, or none \(no timeout\)$/);
  });

  // Claim, README "Running real updates", the config: the defaults (timeout 1h, retries 0, backoff 5s..5m, kill_grace 10s).
  test('the spec defaults: 1h, no retries, 5s..5m, 10s grace', () => {
    expect(resolve('{"states": {"*": ["true"]}}').states[0]).toMatchObject({ timeoutMs: 3_600_000, retries: 0, backoffMinMs: 5000, backoffMaxMs: 300_000, killGraceMs: 10_000 });
  });

  test('custom: the states in file order, numbers included', () => {
    expect(resolve('states:\n  b: "true"\n  "2": "true"\n  a: "true"\n', null).states.map((s) => s.state)).toEqual(['b', '2', 'a']);
  });

  test('reason: a pattern of a state or of the defaults, kept as written; none when not given', () => {
    const c = resolve(`
defaults: {reason: 'FAILED! => (.*)'}
states:
  importing firmware: {run: "true", reason: '^error: (.*)$'}
  "*": ["true"]
`);
    expect(c.states.map((s) => s.reason)).toEqual(['^error: (.*)$', 'FAILED! => (.*)', 'FAILED! => (.*)', 'FAILED! => (.*)']);
    expect('reason' in resolve('states: {"*": "true"}\n').states[0]).toBe(false);
  });

  const bad: [string, string, RegExp][] = [
    ['reason not a pattern', 'states: {"*": {run: "true", reason: "(unclosed"}}\n', /state "\*": reason: not a regular expression: .*Unterminated group/],
    ['reason not a string', 'defaults: {reason: 3}\nstates: {"*": "true"}\n', /defaults: reason: expected a regular expression/],
    ['missing state', 'states:\n  importing firmware: "true"\n', /state "creating fw update strategy": missing/],
    ['unknown placeholder in env', 'defaults: {env: {X: "{nope}"}}\nstates: {"*": "true"}\n', /defaults: env: X: unknown placeholder \{nope\}/],
    ['unknown placeholder in cwd', 'states: {"*": {run: "true", cwd: "{where}"}}\n', /state "\*": cwd: unknown placeholder \{where\}/],
    ['duration without unit', 'states: {"*": {run: "true", kill_grace: "10"}}\n', /state "\*": kill_grace: bad duration "10": give a unit/],
    ['zero timeout', 'defaults: {timeout: 0s}\nstates: {"*": "true"}\n', /defaults: timeout: must be more than 0/],
    ['negative retries', 'states: {"*": {run: "true", retries: -1}}\n', /state "\*": retries: bad retries -1/],
    ['empty command', 'states: {"*": []}\n', /state "\*": run: an empty command/],
    ['no run', 'states: {"*": {timeout: 1s}}\n', /state "\*": run: missing/],
    ['top-level typo', 'state: {"*": "true"}\n', /state: unknown key/],
    ['duplicate key', 'states:\n  "*": "true"\n  "*": "false"\n', /not valid YAML or JSON/],
    ['gate_check not a command', 'gate_check: [a, b]\nstates: {"*": "true"}\n', /gate_check: expected a command \(a string\)/],
    ['gate_check empty', 'gate_check: " "\nstates: {"*": "true"}\n', /gate_check: expected a command/],
    ['defer code out of range', 'defer_exit_codes: [75, 300]\nstates: {"*": "true"}\n', /defer_exit_codes: bad exit code 300/],
    ['empty defer codes', 'defer_exit_codes: []\nstates: {"*": "true"}\n', /defer_exit_codes: an empty list/],
    ['fail code out of range', 'fail_exit_codes: [0]\nstates: {"*": "true"}\n', /fail_exit_codes: bad exit code 0/],
    ['a code both deferring and failing', 'defer_exit_codes: [75, 77]\nfail_exit_codes: [77]\nstates: {"*": "true"}\n', /fail_exit_codes: exit 77 is in defer_exit_codes too/],
    ['the default defer code as a failing one', 'fail_exit_codes: [75]\nstates: {"*": "true"}\n', /fail_exit_codes: exit 75 is in defer_exit_codes too/],
    ['defer_on_timeout not a boolean', 'defer_on_timeout: yes please\nstates: {"*": "true"}\n', /defer_on_timeout: expected true or false/],
    ['probe with a bad key', 'probe: {run: "true", retry: 1}\nstates: {"*": "true"}\n', /probe: retry: unknown key/],
  ];

  test("gate_check (the stage gate's check) is kept as given; without it, none", () => {
    expect(resolve('gate_check: ./healthy.sh "$DCM_STAGE_CLOUDS"\nstates: {"*": "true"}\n').gate_check).toBe('./healthy.sh "$DCM_STAGE_CLOUDS"');
    expect('gate_check' in resolve('states: {"*": "true"}\n')).toBe(false);
  });
  test.each(bad)('%s is a usage error naming where', (_n, text, message) => {
    let err: unknown;
    try {
      resolve(text);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toMatch(message);
  });
});

describe('probe and defer_exit_codes (issue 18, sites that answer)', () => {
  // Claim, README "Sites that answer": `probe` takes a state's keys and the defaults, with a 30s timeout of its own; defer_exit_codes.
  test('probe resolved with the defaults (a timeout of 30s unless one is set); defer_exit_codes kept', () => {
    const c = resolve(`
defaults: {env: {A: "1"}}
probe: ping -c1 {oam_floating_ip}
defer_exit_codes: [75, 69]
states: {"*": "true"}
`);
    expect(c.probe).toMatchObject({ state: 'probe', run: 'ping -c1 {oam_floating_ip}', timeoutMs: 30_000, env: { A: '1' } });
    expect(c.deferExitCodes).toEqual([75, 69]);
    // Issue 49: codes that fail their step at once (a refused ssh login), kept as given.
    expect(resolve('fail_exit_codes: [77, 78]\nstates: {"*": "true"}\n').failExitCodes).toEqual([77, 78]);
    expect(resolve('probe: {run: "true", timeout: 5s}\nstates: {"*": "true"}\n').probe!.timeoutMs).toBe(5000);
    // None given: no probe, and the default codes (75) are the driver's.
    expect(resolve('states: {"*": "true"}\n')).toEqual({ states: expect.any(Array) });
  });
});

describe('placeholders', () => {
  // Claim, README "Running real updates", the config: placeholders; `{` and `}` are literal braces; `${HOME}` is left to the shell;
  // in a string command each value is single-quoted for the shell.
  test('values are quoted for the shell, not for a list; {{ }} are literal braces; ${HOME} passes', () => {
    const v = { cloud: "it's; $(rm -rf /)", state: 'pre check' };
    expect(render('echo {cloud} {state}', v, true)).toBe(`echo 'it'\\''s; $(rm -rf /)' 'pre check'`);
    expect(render('{cloud}', v, false)).toBe("it's; $(rm -rf /)");
    expect(render('awk "{{print}}" ${HOME}', v, true)).toBe('awk "{print}" ${HOME}');
    expect(unknownPlaceholders('{cloud} {colud} ${HOME} {{x}}')).toEqual(['colud']);
  });

  // Claim, README "Running real updates", the config: every field subcloud show prints, and {label.KEY}.
  test('every subcloud field is a placeholder; {label.KEY} for any well-formed key; other dotted names stay text', () => {
    expect(unknownPlaceholders('{oam_floating_ip} {management_start_ip} {region_name} {kube_rootca_sync_status} {id} {group_id}')).toEqual([]);
    expect(unknownPlaceholders('{label.ssh_port} {label.x9} {label._x}')).toEqual(['label._x']);
    expect(unknownPlaceholders('{label.Port} {a.b} {label.}')).toEqual([]);
    const v = { 'label.ssh_port': '2201', oam_floating_ip: '10.0.0.1' };
    expect(render('ssh -p {label.ssh_port} {oam_floating_ip} {label.none} {a.b}', v, true)).toBe(`ssh -p '2201' '10.0.0.1' '' {a.b}`);
  });
});
