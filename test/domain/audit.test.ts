import { describe, expect, test } from '@jest/globals';
import { auditChanges, auditDisagreement, parseAudit, targetVersion, type AuditedFields } from '../../src/domain/audit.js';

const inventory = (): AuditedFields => ({
  software_version: '22.12',
  availability: 'online',
  sync: { patching: 'out-of-sync', usm: 'out-of-sync', kubernetes: 'in-sync', 'kube-rootca': 'unknown', firmware: 'in-sync' },
});

describe('parseAudit', () => {
  test('every key optional, unknown keys and endpoints ignored, kube_rootca taken for kube-rootca', () => {
    const r = parseAudit('\n{"software_version": "24.09", "sync": {"patching": "in-sync", "kube_rootca": "out-of-sync", "dns": "in-sync"}, "availability": "online", "uptime": 5}\n');
    expect(r).toEqual({ ok: true, report: { software_version: '24.09', availability: 'online', sync: { patching: 'in-sync', 'kube-rootca': 'out-of-sync' } } });
    expect(parseAudit('{}')).toEqual({ ok: true, report: {} });
    // A number is a version as YAML-minded scripts print it.
    expect(parseAudit('{"software_version": 25.03}')).toEqual({ ok: true, report: { software_version: '25.03' } });
  });

  test('bad output is the audit’s failure, saying what was wrong', () => {
    const bad = (text: string) => {
      const r = parseAudit(text);
      if (r.ok) throw new Error(`accepted ${text}`);
      return r.problem;
    };
    expect(bad('')).toBe('the audit printed nothing (expected a JSON object)');
    expect(bad('Permission denied\n')).toBe('the audit printed no valid JSON: "Permission denied"');
    expect(bad('[1, 2]')).toBe('the audit printed JSON that is not an object');
    expect(bad('{"sync": {"usm": "synced"}}')).toBe('sync.usm: expected in-sync, out-of-sync, unknown, got "synced"');
    expect(bad('{"sync": ["usm"]}')).toBe('sync: expected an object of endpoint to status');
    expect(bad('{"availability": "up"}')).toBe('availability: expected online or offline, got "up"');
    expect(bad('{"software_version": ""}')).toBe('software_version: expected a non-empty string, got ""');
  });
});

describe('auditChanges', () => {
  test('only what differs, in show’s order, with the field names show prints', () => {
    const changes = auditChanges(inventory(), {
      software_version: '24.09',
      availability: 'online',
      sync: { usm: 'in-sync', kubernetes: 'in-sync', 'kube-rootca': 'out-of-sync' },
    });
    expect(changes).toEqual([
      { field: 'software_version', before: '22.12', after: '24.09' },
      { field: 'usm_sync_status', before: 'out-of-sync', after: 'in-sync' },
      { field: 'kube-rootca_sync_status', before: 'unknown', after: 'out-of-sync' },
    ]);
    // A site that says nothing of a field leaves it as it is.
    expect(auditChanges(inventory(), {})).toEqual([]);
  });
});

describe('auditDisagreement', () => {
  test('the type’s endpoint must be in-sync, and the version the target when there is one', () => {
    const usm = { endpoint: 'usm' as const, target: '24.09' };
    expect(auditDisagreement({ software_version: '24.09', sync: { usm: 'in-sync' } }, usm)).toBeNull();
    // A release's patch level is the same software version.
    expect(auditDisagreement({ software_version: '24.09.1', sync: { usm: 'in-sync' } }, usm)).toBeNull();
    expect(auditDisagreement({ software_version: '22.12', sync: { usm: 'out-of-sync' } }, usm)).toBe(
      'the site reports usm out-of-sync; the site reports software version 22.12, not 24.09',
    );
    expect(auditDisagreement({}, usm)).toBe('the site reports no usm sync status; the site reports no software version (expected 24.09)');
    expect(auditDisagreement({ sync: { patching: 'in-sync' } }, { endpoint: 'patching', target: null })).toBeNull();
    expect(auditDisagreement({}, { endpoint: null, target: null })).toBeNull();
  });

  test('the target: sw-deploy’s release id, as a YY.MM version', () => {
    expect(targetVersion('sw-deploy', { release_id: 'stx-24.09.1' })).toBe('24.09');
    expect(targetVersion('sw-deploy', { release_id: '25.03.100' })).toBe('25.03');
    expect(targetVersion('sw-deploy', { release_id: 'my-release' })).toBe('my-release');
    expect(targetVersion('sw-deploy', { release_id: null, rollback: true })).toBeNull();
    expect(targetVersion('patch', { patch_id: '24.09.1' })).toBeNull();
  });
});
