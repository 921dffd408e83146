/**
 * The exec config's documented keys (config-keys.ts, from which docs/reference/exec-config.md is
 * generated) are the keys the reader takes, and their documented defaults are the ones it applies:
 * a key added to config.ts without its line in the table, or a default changed on one side only,
 * fails here.
 */
import { describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { AUDIT_KEYS, KEYS, TOP_KEYS, resolveConfig, type StateSpec } from '../../../src/drivers/exec/config.js';
import { CONFIG_KEYS } from '../../../src/drivers/exec/config-keys.js';
import { parseDuration, parseDurationRange } from '../../../src/domain/durations.js';
import { EX_TEMPFAIL } from '../../../src/domain/deferral.js';

const FILE = '/srv/dcm/rollout.yaml';
const documented = (place: 'top' | 'entry') => CONFIG_KEYS.filter((k) => k.place === place).map((k) => k.key).sort();
/** The first `code` of a documented default: the value as the file would spell it. */
const defaultOf = (key: string) => /`([^`]*)`/.exec(CONFIG_KEYS.find((k) => k.key === key)!.default)?.[1];

describe('the exec config keys the reference documents', () => {
  test('are the keys the reader takes, at the top level and in an entry; an audit takes a subset', () => {
    expect(documented('top')).toEqual([...TOP_KEYS].sort());
    expect(documented('entry')).toEqual([...KEYS].sort());
    for (const k of AUDIT_KEYS) expect(KEYS).toContain(k);
    for (const k of CONFIG_KEYS) {
      for (const field of [k.type, k.default, k.example, k.since, k.meaning]) expect(field.trim()).not.toBe('');
      expect(k.since).toMatch(/^[0-9a-f]{7} \(\d{4}-\d\d-\d\d\)$/);
    }
  });

  test('and their defaults are the ones a config that sets nothing gets', () => {
    const doc = { states: { '*': 'true' }, probe: 'true', audit: 'true' };
    const config = resolveConfig(doc, FILE, ['pre check']);
    const state: StateSpec = config.states[0];
    expect(state.timeoutMs).toBe(parseDuration(defaultOf('timeout')!, { unitRequired: true }));
    expect(state.retries).toBe(Number(defaultOf('retries')));
    const backoff = parseDurationRange(defaultOf('backoff')!, { unitRequired: true })!;
    expect([state.backoffMinMs, state.backoffMaxMs]).toEqual([backoff.min, backoff.max]);
    expect(state.killGraceMs).toBe(parseDuration(defaultOf('kill_grace')!, { unitRequired: true }));
    expect(state.env).toEqual({});
    expect(defaultOf('env')).toBe('{}');
    expect(defaultOf('cwd')).toBe('.');
    expect(state.cwd).toBe(path.dirname(FILE));
    expect(state.reason).toBeUndefined();
    // A probe and an audit have timeouts of their own, as the table says.
    expect(CONFIG_KEYS.find((k) => k.key === 'timeout')!.default).toBe('`1h` (a probe `30s`, an audit `1m`)');
    expect(config.probe!.timeoutMs).toBe(30_000);
    expect(config.audit!.timeoutMs).toBe(60_000);
    // Left out, the deferral keys are the defaults the driver applies.
    expect(config.deferExitCodes).toBeUndefined();
    expect(defaultOf('defer_exit_codes')).toBe(`[${EX_TEMPFAIL}]`);
    expect(config.deferOnTimeout).toBeUndefined();
    expect(defaultOf('defer_on_timeout')).toBe('false');
  });

  test("each documented example is a value the reader takes for its key", () => {
    const example = (key: string) => /`([^`]*)`/.exec(CONFIG_KEYS.find((k) => k.key === key)!.example)![1];
    const entry: Record<string, unknown> = {};
    for (const k of ['timeout', 'backoff', 'kill_grace', 'cwd', 'reason']) entry[k] = example(k).replace(/^'(.*)'$/, '$1');
    entry.retries = Number(example('retries'));
    entry.env = { SITE_USER: 'admin' };
    entry.run = ['./vim.sh', '{state}', '{cloud}'];
    const config = resolveConfig(
      { states: { 'pre check': entry }, defaults: { timeout: '2h', retries: 1 }, defer_exit_codes: [75, 255], defer_on_timeout: true, gate_check: example('gate_check'), on_event: ['./page-oncall.sh'] },
      FILE,
      ['pre check'],
    );
    expect(config.states[0]).toMatchObject({ timeoutMs: 7_200_000, retries: 2, backoffMinMs: 30_000, backoffMaxMs: 600_000, killGraceMs: 30_000, reason: '^error: (.*)' });
    expect(config.deferExitCodes).toEqual([75, 255]);
    expect(config.deferOnTimeout).toBe(true);
  });
});
