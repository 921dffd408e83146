/** Subcloud fields as people type them (SPEC §2, §4): validated, a bad value is a usage error. */
import { describe, expect, test } from '@jest/globals';
import { parseApplyType, parseIntIn, parseSubcloudFields, parseSync } from '../../src/domain/inventory.js';
import { UsageError } from '../../src/domain/errors.js';

function usage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(2);
    return (err as Error).message;
  }
  throw new Error('accepted');
}

describe('--sync ENDPOINT=STATUS', () => {
  test('one endpoint, all endpoints, later entries win', () => {
    expect(parseSync(['patching=in-sync'])).toEqual({ patching: 'in-sync' });
    expect(parseSync(['all=unknown', 'kube-rootca=in-sync'])).toEqual({
      patching: 'unknown',
      usm: 'unknown',
      kubernetes: 'unknown',
      'kube-rootca': 'in-sync',
      firmware: 'unknown',
    });
  });

  test('a bad status, a bad endpoint, a missing =', () => {
    expect(usage(() => parseSync(['patching=maybe']))).toMatch(/maybe.*in-sync, out-of-sync, unknown/);
    expect(usage(() => parseSync(['nope=in-sync']))).toMatch(/nope.*patching, usm, kubernetes, kube-rootca, firmware/);
    expect(usage(() => parseSync(['patching']))).toMatch(/ENDPOINT=STATUS/);
  });
});

describe('subcloud fields', () => {
  test('management and availability are checked, the rest stored as given', () => {
    expect(parseSubcloudFields({ management: 'unmanaged', availability: 'offline', deployStatus: 'deploying', group: 'canary' })).toEqual({
      management: 'unmanaged',
      availability: 'offline',
      deploy_status: 'deploying',
      group: 'canary',
    });
    expect(usage(() => parseSubcloudFields({ management: 'sometimes' }))).toContain('sometimes');
    expect(usage(() => parseSubcloudFields({ availability: 'up' }))).toContain('up');
    expect(parseSubcloudFields({})).toEqual({});
  });
});

describe('numbers and apply types', () => {
  test('parseIntIn takes whole numbers in range only', () => {
    expect(parseIntIn('n', '1', 1, 5000)).toBe(1);
    expect(parseIntIn('n', '5000', 1, 5000)).toBe(5000);
    for (const bad of ['0', '-1', '5001', 'abc', '1.5', '', '1e3', '0x10']) {
      expect(usage(() => parseIntIn('n', bad, 1, 5000))).toContain(`'${bad}'`);
    }
  });

  test('apply type is parallel or serial', () => {
    expect(parseApplyType('serial')).toBe('serial');
    expect(usage(() => parseApplyType('diagonal'))).toMatch(/diagonal.*parallel, serial/);
  });
});
