/** Values that slipped through before issue 7: names, durations, import headers (SPEC §2.1, §4). */
import { describe, expect, test } from '@jest/globals';
import { ageOption, durationOption, durationRangeOption, parseDuration, MAX_DURATION_MS } from '../../src/domain/durations.js';
import { checkGroupName, checkName, nameProblem } from '../../src/domain/inventory.js';
import { duplicateColumns, parseImport } from '../../src/domain/importfile.js';

describe('names', () => {
  test.each([
    ['', /empty/],
    [' ', /blank/],
    [' a', /start or end with a space/],
    ['a ', /start or end with a space/],
    ['a\nb', /control characters/],
    ['a\tb', /control characters/],
    ['a\0b', /control characters/],
    ['a\x7fb', /control characters/],
    ['x'.repeat(256), /at most 255 characters \(this one has 256\)/],
  ])('%j is refused', (name, why) => {
    expect(nameProblem(name)).toMatch(why);
    expect(() => checkName('subcloud', name)).toThrow(why);
    expect(() => checkGroupName(name)).toThrow(why);
  });

  test.each(['a', 'x'.repeat(255), 'site a-1.b_c', 'Zürich 1', 'ünïcödé ☃'])('%j is a name', (name) => {
    expect(nameProblem(name)).toBeNull();
  });

  test('the message shows control characters escaped, on one line', () => {
    expect(() => checkName('subcloud', 'a\nb')).toThrow("invalid subcloud name 'a\\nb': a name may not hold control characters");
  });
});

describe('durations', () => {
  test('a number needs a unit, except 0', () => {
    expect(parseDuration('10')).toBeNull();
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(() => durationOption('--state-timeout', '10')).toThrow('Invalid --state-timeout value: 10. Give a unit: 10s, 10m');
    expect(() => durationOption('--state-timeout', '0')).toThrow(/longer than 0/);
    expect(durationRangeOption('--sim-latency', '0')).toEqual({ min: 0, max: 0 });
    expect(durationRangeOption('--sim-latency', '0..5ms')).toEqual({ min: 0, max: 5 });
    expect(() => durationRangeOption('--sim-latency', '10..20ms')).toThrow(/Give a unit: 10s, 10m/);
  });

  test('an absurd duration is refused with the documented maximum', () => {
    expect(() => durationRangeOption('--sim-latency', '9999999h')).toThrow(
      'Invalid --sim-latency value: 9999999h. The longest is 8760h (365 days)',
    );
    expect(() => durationOption('--state-timeout', '8761h')).toThrow(/The longest is 8760h/);
    expect(durationOption('--state-timeout', '8760h')).toBe(MAX_DURATION_MS);
    expect(() => durationOption('--state-timeout', '1e400s')).toThrow(/number and a unit/);
  });

  test('a range needs MIN <= MAX and at most two parts', () => {
    expect(() => durationRangeOption('--sim-latency', '2s..1s')).toThrow(/MAX must not be less than MIN/);
    expect(() => durationRangeOption('--sim-latency', '1s..2s..3s')).toThrow(/MIN\[..MAX\]/);
  });

  test('an age (db prune-logs --older) takes days as well, and 0; its errors say so', () => {
    expect(ageOption('--older', '7d')).toBe(7 * 24 * 3_600_000);
    expect(ageOption('--older', '1.5d')).toBe(36 * 3_600_000);
    expect(ageOption('--older', '12h')).toBe(12 * 3_600_000);
    expect(ageOption('--older', '0')).toBe(0);
    expect(ageOption('--older', '365d')).toBe(MAX_DURATION_MS);
    expect(() => ageOption('--older', '366d')).toThrow('Invalid --older value: 366d. The longest is 8760h (365 days)');
    expect(() => ageOption('--older', '7')).toThrow('Invalid --older value: 7. Give a unit: 7h, 7d');
    expect(() => ageOption('--older', '7w')).toThrow('Invalid --older value: 7w. Use a number and a unit: 12h, 7d, 30m');
  });
});

describe('import headers', () => {
  test('a field named twice is refused, naming both columns', () => {
    expect(duplicateColumns(['name', 'name'])).toBe("column 'name' is given twice");
    expect(duplicateColumns(['name', 'patching', 'patching_sync_status'])).toBe(
      "columns 'patching' and 'patching_sync_status' name the same field",
    );
    expect(duplicateColumns(['name', 'Group', 'group-id'])).toBe("columns 'Group' and 'group-id' name the same field");
    // `sync` sets every endpoint and a per-endpoint column overrides it: not a duplicate.
    expect(duplicateColumns(['name', 'sync', 'patching'])).toBeNull();
  });

  test.each([
    ['CSV', 'name,location,name\na,b,c\n', "line 1: column 'name' is given twice"],
    ['CSV', 'name,usm,usm_sync_status\na,in-sync,in-sync\n', "line 1: columns 'usm' and 'usm_sync_status' name the same field"],
    ['JSON lines', '{"name":"a"}\n{"name":"b","kubernetes":"in-sync","Kubernetes Sync":"in-sync"}\n', "line 2: columns 'kubernetes' and 'Kubernetes Sync' name the same field"],
    ['JSON', '[{"name":"a\\tb"}]', "line 1: invalid subcloud name 'a\\tb': a name may not hold control characters (newline, tab, NUL…)"],
    ['CSV', `name\n${'y'.repeat(300)}\n`, /^line 2: invalid subcloud name 'y+\.\.\.': a name is at most 255 characters/],
  ])('%s: %j', (_kind, text, message) => {
    expect(() => parseImport(text)).toThrow(message);
  });
});
