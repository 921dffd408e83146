/**
 * Issue 15, break 7 (the parse): a config's duplicate keys are found without comparing each key
 * with every earlier one. 100,000 env keys took over 120 s (this test's time limit) when the YAML
 * parser's own check did it; they now take about a second. No time is asserted: the limit is
 * what an old, quadratic parse would not meet. Duplicates are still refused, naming the key.
 */
import { describe, expect, test } from '@jest/globals';
import { statesOf } from '../../../src/domain/types.js';
import { parseConfigText, resolveConfig } from '../../../src/drivers/exec/config.js';

const FW = statesOf('firmware');

function manyKeys(n: number): string {
  const lines = ['defaults:', '  env:'];
  for (let i = 0; i < n; i++) lines.push(`    K${i}: v${i}`);
  lines.push('states:', '  "*": ["true"]');
  return lines.join('\n');
}

describe('exec config at scale', () => {
  test('100,000 env keys parse and resolve', () => {
    const c = resolveConfig(parseConfigText(manyKeys(100_000), 'big.yaml'), 'big.yaml', FW);
    expect(Object.keys(c.states[0].env)).toHaveLength(100_000);
    expect(c.states[3].env.K99999).toBe('v99999');
  });

  test.each([
    ['a key twice in a mapping', 'defaults: {env: {A: "1", B: "2", A: "3"}}\nstates: {"*": ["true"]}\n', /Map keys must be unique at line 1, column \d+: "A"$/],
    ['a state twice', 'states:\n  "*": ["true"]\n  "*": ["false"]\n', /Map keys must be unique at line 3, column 3: "\*"$/],
    ['a JSON key twice', '{"states": {"*": ["true"]}, "states": {}}', /Map keys must be unique at line 1, column \d+: "states"$/],
  ])('%s is refused, naming it', (_name, text, message) => {
    expect(() => parseConfigText(text, 'c.yaml')).toThrow(message);
  });

  test('the same key in two mappings is fine', () => {
    expect(() => parseConfigText('defaults: {env: {A: "1"}}\nstates: {"*": {run: ["true"], env: {A: "2"}}}\n', 'c.yaml')).not.toThrow();
  });
});
