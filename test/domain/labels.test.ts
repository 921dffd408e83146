/** Labels as given (`--label k=v`, the import column `labels`) and as selected. */
import { describe, expect, test } from '@jest/globals';
import { formatLabels, labelEnvName, parseLabelChanges, parseLabelList, parseLabelSelector, readLabels } from '../../src/domain/inventory.js';
import { UsageError } from '../../src/domain/errors.js';

describe('labels', () => {
  test('k=v sets, k= removes, a later one wins; the value may hold = and spaces inside', () => {
    expect(parseLabelChanges(['rack=r1', 'port=2201', 'rack=r2', 'gone=', 'jump=a=b c'])).toEqual({
      rack: 'r2',
      port: '2201',
      gone: null,
      jump: 'a=b c',
    });
  });

  test.each([
    ['rack', /use KEY=VALUE, or KEY= to remove it/],
    ['=v', /a key is a lowercase letter/],
    ['Rack=r1', /a key is a lowercase letter/],
    ['1rack=r1', /a key is a lowercase letter/],
    ['ra-ck=r1', /a key is a lowercase letter/],
    [`${'k'.repeat(64)}=v`, /at most 63 characters/],
    ['k=a;b', /may not hold ';'/],
    ['k=a\nb', /control characters/],
    ['k= a', /may not start or end with a space/],
    [`k=${'v'.repeat(256)}`, /at most 255 characters/],
  ])('%j is a usage error', (item, message) => {
    expect(() => parseLabelChanges([item])).toThrow(UsageError);
    expect(() => parseLabelChanges([item])).toThrow(message);
  });

  test('a selector: k=v must hold, k= picks those without it; one key with two values is refused', () => {
    expect(parseLabelSelector(['rack=r1', 'port='])).toEqual({ rack: 'r1', port: null });
    expect(parseLabelSelector(['rack=r1', 'rack=r1'])).toEqual({ rack: 'r1' });
    expect(() => parseLabelSelector(['rack=r1', 'rack=r2'])).toThrow(/rack is selected twice/);
    expect(() => parseLabelSelector(['rack'])).toThrow(/KEY= for the subclouds without it/);
  });

  test('the column text k=v;k2=v2 reads back what formatLabels writes (keys sorted)', () => {
    expect(parseLabelList(' zone=a ; rack=r1;;')).toEqual({ zone: 'a', rack: 'r1' });
    const text = formatLabels({ zone: 'a', rack: 'r1', jump: 'x=y' });
    expect(text).toBe('jump=x=y;rack=r1;zone=a');
    expect(readLabels(text)).toEqual({ jump: 'x=y', rack: 'r1', zone: 'a' });
    expect(readLabels(null)).toEqual({});
  });

  test('each label reaches a run as DCM_LABEL_<KEY>', () => {
    expect(labelEnvName('ssh_port')).toBe('DCM_LABEL_SSH_PORT');
  });
});
