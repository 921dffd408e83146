/** The overall sync status of a subcloud (SPEC §2). */
import { expect, test } from '@jest/globals';
import { overallSync } from '../../src/domain/sync.js';
import type { Endpoint, SyncStatus } from '../../src/domain/types.js';

const all = (s: SyncStatus, over: Partial<Record<Endpoint, SyncStatus>> = {}) =>
  ({ patching: s, usm: s, kubernetes: s, 'kube-rootca': s, firmware: s, ...over }) as Record<Endpoint, SyncStatus>;

test("the endpoints' status when all agree, else out-of-sync (dcmanager's API, distcloud subclouds.py)", () => {
  expect(overallSync(all('in-sync'))).toBe('in-sync');
  expect(overallSync(all('unknown'))).toBe('unknown');
  expect(overallSync(all('in-sync', { firmware: 'unknown' }))).toBe('out-of-sync');
  expect(overallSync(all('in-sync', { firmware: 'unknown', usm: 'out-of-sync' }))).toBe('out-of-sync');
  expect(overallSync(all('unknown', { 'kube-rootca': 'out-of-sync' }))).toBe('out-of-sync');
  expect(overallSync(all('out-of-sync'))).toBe('out-of-sync');
});
