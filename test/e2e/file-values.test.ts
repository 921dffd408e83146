/**
 * Values that slipped through before issue 7, through the built binary: each refused in one line,
 * with the documented exit code, and the file byte for byte unchanged.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dcmOk, expectRefused, tempDir } from '../helpers/fleet.js';

const t = tempDir('dcm-values-');
beforeAll(() => {
  dcmOk(['--db', t.db, 'subcloud', 'add', 's1', 's2']);
});
afterAll(() => t.cleanup());

describe('names', () => {
  // Claim, README "Your data", names: 1 to 255 characters, no control characters, no leading or trailing space.
  test.each([
    ['a newline', ['subcloud', 'add', 'a\nb'], /^invalid subcloud name 'a\\nb': a name may not hold control characters/],
    ['a tab', ['subcloud', 'add', 'ok1', 'a\tb'], /^invalid subcloud name 'a\\tb'/],
    ['a leading space', ['subcloud', 'add', ' a'], /may not start or end with a space$/],
    ['256 characters', ['subcloud', 'add', 'x'.repeat(256)], /a name is at most 255 characters \(this one has 256\)$/],
    ['a group name with a tab', ['subcloud-group', 'add', '--name', 'g\t1'], /^invalid subcloud group name 'g\\t1'/],
    ['a group renamed to a newline', ['subcloud-group', 'update', 'Default', '--name', 'a\nb'], /^invalid subcloud group name|may not be renamed/],
  ])('%s is refused (exit 2)', (_what, args, message) => {
    expectRefused(t.dir, ['--db', t.db, ...args], 2, message);
  });

  // Claim, README "Your data", names: an import whose header names one field twice is refused, naming both columns.
  test('an import with a bad name or a header naming a field twice is refused whole (exit 1)', () => {
    for (const [text, message] of [
      ['name,name\na,b\n', "line 1: column 'name' is given twice"],
      ['name,patching,patching_sync_status\na,in-sync,in-sync\n', "line 1: columns 'patching' and 'patching_sync_status' name the same field"],
      ['{"name":"ok9"}\n{"name":"bad\\u0000"}\n', "line 2: invalid subcloud name 'bad\\u0000': a name may not hold control characters (newline, tab, NUL…)"],
    ]) {
      const file = path.join(t.dir, 'in.txt');
      fs.writeFileSync(file, text);
      expectRefused(t.dir, ['--db', t.db, 'subcloud', 'import', file], 1, message);
      fs.rmSync(file);
    }
  });
});

describe('durations', () => {
  test('--state-timeout 10 needs a unit; 9999999h is over the maximum; 0 is a valid latency', () => {
    const create = ['--db', t.db, 'strategy', 'create', '--type', 'patch'];
    expectRefused(t.dir, [...create, '--state-timeout', '10'], 2, 'Invalid --state-timeout value: 10. Give a unit: 10s, 10m');
    expectRefused(t.dir, [...create, '--sim-latency', '9999999h'], 2, 'Invalid --sim-latency value: 9999999h. The longest is 8760h (365 days)');
    expectRefused(t.dir, [...create, '--sim-latency', '5..10ms'], 2, 'Invalid --sim-latency value: 5..10ms. Give a unit: 5s, 5m');
    const r = dcmOk([...create, '--sim-latency', '0', '--state-timeout', '8760h', '-f', 'value', '-c', 'state']);
    expect(r.stdout).toBe('initial\n');
  });
});
