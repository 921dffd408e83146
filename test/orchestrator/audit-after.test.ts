/**
 * Apply's audit after a subcloud's last state (orchestrator/audit-after.ts), with a driver of the
 * test's own: when it runs, and how the site's report turns into the operation's result.
 */
import { describe, expect, test } from '@jest/globals';
import type { AuditOutcome, AuditRequest, Driver, OperationRequest, OperationResult } from '../../src/drivers/driver.js';
import { withAuditAfter } from '../../src/orchestrator/audit-after.js';
import { statesOf } from '../../src/domain/types.js';

const STATES = statesOf('sw-deploy');

function fakeDriver(answers: { run?: OperationResult; audit?: AuditOutcome }) {
  const audits: AuditRequest[] = [];
  const driver: Driver = {
    run: async () => answers.run ?? { kind: 'next' },
    audit: async (req) => {
      audits.push(req);
      return answers.audit ?? { ok: true, report: {} };
    },
    close: async () => {},
  };
  return { driver, audits };
}

function req(state: string): OperationRequest {
  return {
    cloud: 'east1',
    type: 'sw-deploy',
    state,
    stateIndex: STATES.indexOf(state),
    states: STATES,
    attempt: 1,
    campaign: 'c',
    extra: { release_id: 'stx-24.09.1' },
    options: {},
    signal: new AbortController().signal,
    subcloud: { name: 'east1', software_version: '22.12' },
    labels: { rack: 'r1' },
  };
}

const last = STATES[STATES.length - 1];
const agrees: AuditOutcome = { ok: true, report: { software_version: '24.09', sync: { usm: 'in-sync' } } };
const stale: AuditOutcome = { ok: true, report: { software_version: '22.12', sync: { usm: 'in-sync' } } };

describe('withAuditAfter', () => {
  test('a strategy created without an audit, or a driver without one: the driver as it is', () => {
    const { driver } = fakeDriver({});
    expect(withAuditAfter(driver, { type: 'sw-deploy', extra: {} })).toBe(driver);
    const noAudit: Driver = { run: driver.run, close: driver.close };
    expect(withAuditAfter(noAudit, { type: 'sw-deploy', extra: { audit_after: true } })).toBe(noAudit);
  });

  test('only after the last state, or a skip to complete; the site’s report rides on the result', async () => {
    const f = fakeDriver({ audit: agrees });
    const d = withAuditAfter(f.driver, { type: 'sw-deploy', extra: { audit_after: true, release_id: 'stx-24.09.1' } });
    expect(await d.run(req(STATES[0]))).toEqual({ kind: 'next' });
    expect(f.audits).toHaveLength(0);
    expect(await d.run(req(last))).toEqual({ kind: 'next', audit: agrees.ok && agrees.report });
    expect(f.audits.map((a) => [a.cloud, a.subcloud.software_version, a.labels.rack])).toEqual([['east1', '22.12', 'r1']]);
    const skip = fakeDriver({ run: { kind: 'next', next: 'complete' }, audit: agrees });
    await withAuditAfter(skip.driver, { type: 'sw-deploy', extra: { audit_after: true } }).run(req(STATES[0]));
    expect(skip.audits).toHaveLength(1);
    // A failed last state is not audited: it did not complete.
    const failed = fakeDriver({ run: { kind: 'failed', reason: 'exit 1' } });
    expect(await withAuditAfter(failed.driver, { type: 'sw-deploy', extra: { audit_after: true } }).run(req(last))).toEqual({ kind: 'failed', reason: 'exit 1' });
    expect(failed.audits).toHaveLength(0);
  });

  test('a site that disagrees: a warning in the details, or failed with require_audit; a failed audit likewise', async () => {
    const extra = { audit_after: true, release_id: 'stx-24.09.1' };
    const warn = await withAuditAfter(fakeDriver({ run: { kind: 'next', details: 'done' }, audit: stale }).driver, { type: 'sw-deploy', extra }).run(req(last));
    expect(warn).toEqual({ kind: 'next', details: 'done; warning: audit: the site reports software version 22.12, not 24.09', audit: stale.ok && stale.report });
    const fail = await withAuditAfter(fakeDriver({ audit: stale }).driver, { type: 'sw-deploy', extra: { ...extra, require_audit: true } }).run(req(last));
    expect(fail).toEqual({ kind: 'failed', reason: 'audit: the site reports software version 22.12, not 24.09', audit: stale.ok && stale.report });
    const silent: AuditOutcome = { ok: false, reason: 'audit: exit 255: ssh: connect to host timed out' };
    expect(await withAuditAfter(fakeDriver({ audit: silent }).driver, { type: 'sw-deploy', extra }).run(req(last))).toEqual({
      kind: 'next',
      details: 'warning: audit: exit 255: ssh: connect to host timed out',
    });
    expect(await withAuditAfter(fakeDriver({ audit: silent }).driver, { type: 'sw-deploy', extra: { ...extra, require_audit: true } }).run(req(last))).toEqual({
      kind: 'failed',
      reason: 'audit: exit 255: ssh: connect to host timed out',
    });
  });

  test('a run adopted after a crash is audited when it is found to have ended', async () => {
    const f = fakeDriver({ audit: agrees });
    const adopting: Driver = { ...f.driver, adopt: () => ({ kind: 'wait', result: Promise.resolve({ kind: 'next' }) }) };
    const d = withAuditAfter(adopting, { type: 'sw-deploy', extra: { audit_after: true } });
    const a = d.adopt!({ cloud: 'east1', state: last, attempt: 1, startedAt: '', proc: null }, req(last));
    expect(a.kind).toBe('wait');
    expect(await (a as { result: Promise<OperationResult> }).result).toEqual({ kind: 'next', audit: agrees.ok && agrees.report });
    expect(f.audits).toHaveLength(1);
  });
});
