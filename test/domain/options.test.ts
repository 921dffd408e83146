/**
 * Type options of `strategy create` (SPEC §4): what each type accepts and dcmanager's exclusion
 * rules; a violation is a usage error (exit 2), or, for the checks dcmanager's client makes itself
 * (sw-deploy's and prestage's rules), exit 1 as the client's.
 */
import { describe, expect, test } from '@jest/globals';
import { shownTypeOptions, typeExtraArgs, timeoutExtraArgs, type RawTypeOptions } from '../../src/domain/options.js';
import { ClientCheckError, OperationError, UsageError } from '../../src/domain/errors.js';
import { STRATEGY_TYPES, statesOf, type StrategyType } from '../../src/domain/types.js';

/** The refusal's message: a usage error (exit 2), or with code 1 a check dcmanager's client makes itself. */
function usage(type: StrategyType, raw: RawTypeOptions, code: 1 | 2 = 2): string {
  try {
    typeExtraArgs(type, raw);
  } catch (err) {
    expect(err).toBeInstanceOf(code === 2 ? UsageError : ClientCheckError);
    expect((err as UsageError).exitCode).toBe(code);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${type} ${JSON.stringify(raw)}`);
}

/** A check dcmanager's client makes itself: the client exits 1 on it, and so does dcm. */
const client = (type: StrategyType, raw: RawTypeOptions) => usage(type, raw, 1);

describe('sw-deploy rules', () => {
  test('release id is required unless --rollback or --cleanup', () => {
    expect(client('sw-deploy', {})).toMatch(/--release-id/);
    expect(client('sw-deploy', { snapshot: true })).toMatch(/--release-id/);
    expect(typeExtraArgs('sw-deploy', { rollback: true })).toMatchObject({ rollback: true, release_id: null });
    expect(typeExtraArgs('sw-deploy', { cleanup: true })).toMatchObject({ cleanup: true, release_id: null });
  });

  test('--rollback excludes --release-id, --cleanup, --with-prestage, --kube-upgrade', () => {
    const others: RawTypeOptions[] = [{ releaseId: 'r1' }, { cleanup: true }, { withPrestage: true }, { kubeUpgrade: 'v1.29' }];
    for (const o of others) {
      const msg = client('sw-deploy', { rollback: true, ...o });
      expect(msg).toMatch(/--rollback/);
    }
  });

  test('--cleanup excludes --release-id, --with-prestage, --kube-upgrade', () => {
    for (const o of [{ releaseId: 'r1' }, { withPrestage: true }, { kubeUpgrade: 'v1.29' }] as RawTypeOptions[]) {
      expect(client('sw-deploy', { cleanup: true, ...o })).toMatch(/--cleanup/);
    }
  });

  test('--snapshot and --delete exclude --rollback and --cleanup', () => {
    for (const a of [{ snapshot: true }, { delete: true }] as RawTypeOptions[]) {
      for (const b of [{ rollback: true }, { cleanup: true }] as RawTypeOptions[]) {
        const msg = client('sw-deploy', { ...a, ...b });
        // dcmanager's client: "Option --snapshot cannot be used with any of the following options: --rollback or --cleanup."
        expect(msg).toMatch(/^Option --(snapshot|delete|rollback|cleanup) cannot be used with any of the following options: .*--(rollback|cleanup)/);
      }
    }
  });

  test('--sysadmin-password: with --with-prestage only, stored under sysadmin_password', () => {
    expect(client('sw-deploy', { releaseId: 'r1', sysadminPassword: 'pw' })).toBe('--sysadmin-password can only be used with --with-prestage');
    expect(typeExtraArgs('sw-deploy', { releaseId: 'r1', withPrestage: true, sysadminPassword: 'pw' })).toMatchObject({ sysadmin_password: 'pw' });
    expect(typeExtraArgs('prestage', { sysadminPassword: 'pw' })).toMatchObject({ sysadmin_password: 'pw' });
    expect(typeExtraArgs('prestage', {})).not.toHaveProperty('sysadmin_password');
    expect(usage('patch', { sysadminPassword: 'pw' })).toMatch(/not an option of strategy type patch/);
  });

  test('a valid combination is stored with every field', () => {
    expect(
      typeExtraArgs('sw-deploy', { releaseId: 'stx-10', snapshot: true, delete: true, withPrestage: true, kubeUpgrade: 'v1.29.2' }),
    ).toEqual({
      release_id: 'stx-10',
      snapshot: true,
      rollback: false,
      delete_option: true,
      cleanup: false,
      with_prestage: true,
      kube_upgrade: 'v1.29.2',
    });
  });
});

describe('kube-rootca-update rules', () => {
  test('--cert-file excludes --subject and --expiry-date', () => {
    expect(usage('kube-rootca-update', { certFile: 'ca.pem', subject: 'C=CA' })).toMatch(/--cert-file.*--subject/);
    expect(usage('kube-rootca-update', { certFile: 'ca.pem', expiryDate: '2030-01-01' })).toMatch(/--cert-file.*--expiry-date/);
  });

  test('subject and expiry date together are fine; --cert-file adds the start and upload states', () => {
    expect(typeExtraArgs('kube-rootca-update', { subject: 'C=CA', expiryDate: '2030-01-01' })).toEqual({
      subject: 'C=CA',
      expiry_date: '2030-01-01',
      cert_file: null,
    });
    const extra = typeExtraArgs('kube-rootca-update', { certFile: 'ca.pem' });
    expect(statesOf('kube-rootca-update', extra as { cert_file: string })).toEqual([
      'kube rootca update pre check',
      'kube rootca update start',
      'kube rootca update upload cert',
      'creating vim kube rootca update strategy',
      'applying vim kube rootca update strategy',
    ]);
    expect(statesOf('kube-rootca-update')).not.toContain('kube rootca update start');
  });
});

describe('prestage rules', () => {
  test('--for-install and --for-sw-deploy exclude each other; for-install is the default', () => {
    expect(client('prestage', { forInstall: true, forSwDeploy: true })).toMatch(/--for-install.*--for-sw-deploy/);
    expect(typeExtraArgs('prestage', {})).toMatchObject({ for_install: true, for_sw_deploy: false });
    expect(typeExtraArgs('prestage', { forSwDeploy: true })).toMatchObject({ for_install: false, for_sw_deploy: true });
  });

  // The server's check (utils.get_validated_sw_version_for_prestage, from its controller): MM.mm
  // only, refused with a 400 (exit 1); for software deploy, no release before 24.09.
  test('--release is MM.mm', () => {
    for (const good of ['24.09', '25.03']) {
      expect(typeExtraArgs('prestage', { release: good })).toMatchObject({ prestage_software_version: good });
    }
    for (const bad of ['24', '2409', '24.9', 'v24.09', '24.09.', '24.09.1', '24.09.1.2']) {
      expect(() => typeExtraArgs('prestage', { release: bad })).toThrow(
        new OperationError('Specified release format is not supported. Version format must be MM.mm.'),
      );
    }
    expect(() => typeExtraArgs('prestage', { release: '22.12', forSwDeploy: true })).toThrow(
      new OperationError('The requested software version is not supported, cannot prestage for software deploy.'),
    );
    expect(typeExtraArgs('prestage', { release: '22.12' })).toMatchObject({ prestage_software_version: '22.12' });
  });
});

describe('options of another type', () => {
  test('are refused, naming the option and the type', () => {
    expect(usage('patch', { toVersion: 'v1.29' })).toBe('--to-version is not an option of strategy type patch');
    expect(usage('kubernetes', { releaseId: 'r' })).toBe('--release-id is not an option of strategy type kubernetes');
    expect(usage('firmware', { patchId: 'p' })).toBe('--patch-id is not an option of strategy type firmware');
    expect(usage('sw-deploy', { forSwDeploy: true, releaseId: 'r' })).toMatch(/--for-sw-deploy/);
  });

  test('each type keeps its own option', () => {
    expect(typeExtraArgs('patch', { patchId: 'p1' })).toEqual({ patch_id: 'p1', upload_only: false, remove: false });
    expect(typeExtraArgs('patch', { patchId: 'p1', uploadOnly: true, remove: true })).toMatchObject({ upload_only: true, remove: true });
    expect(typeExtraArgs('kubernetes', { toVersion: 'v1.29.2' })).toEqual({ to_version: 'v1.29.2' });
    expect(typeExtraArgs('firmware', {})).toEqual({});
  });
});

describe('state timeout', () => {
  test('the type default, and a bad value is a usage error', () => {
    expect(timeoutExtraArgs('patch', {})).toEqual({ state_timeout_ms: 3_600_000 });
    expect(timeoutExtraArgs('patch', { stateTimeout: '30s' })).toEqual({ state_timeout_ms: 30_000 });
    for (const stateTimeout of ['0', 'soon', '-1s']) expect(() => timeoutExtraArgs('patch', { stateTimeout })).toThrow(UsageError);
  });
});

test('every type has its states, ending before complete', () => {
  for (const t of STRATEGY_TYPES) {
    // custom: the exec config names the states, stored with the strategy.
    const states = statesOf(t, { exec_states: ['one', 'two'] });
    expect(states.length).toBeGreaterThan(0);
    expect(states).not.toContain('initial');
    expect(states).not.toContain('complete');
  }
});

describe('the type options as a report shows them', () => {
  test('each by its flag, as stored: None unset, True or False for a flag; the password said to be given, never shown', () => {
    expect(shownTypeOptions('patch', typeExtraArgs('patch', { patchId: 'P1' }))).toEqual([
      ['--patch-id', 'P1'],
      ['--upload-only', 'False'],
      ['--remove', 'False'],
    ]);
    expect(shownTypeOptions('sw-deploy', typeExtraArgs('sw-deploy', { releaseId: 'R2', snapshot: true, withPrestage: true, sysadminPassword: 'hunter2' }))).toEqual([
      ['--release-id', 'R2'],
      ['--snapshot', 'True'],
      ['--rollback', 'False'],
      ['--delete', 'False'],
      ['--cleanup', 'False'],
      ['--with-prestage', 'True'],
      ['--kube-upgrade', 'None'],
      ['--sysadmin-password', 'given (not shown)'],
    ]);
    expect(JSON.stringify(shownTypeOptions('prestage', typeExtraArgs('prestage', { release: '24.09', sysadminPassword: 'hunter2' })))).not.toContain('hunter2');
    expect(shownTypeOptions('firmware', {})).toEqual([]);
  });

  test('every option a type stores is shown (none of typeExtraArgs\' keys is left out)', () => {
    for (const t of STRATEGY_TYPES) {
      const stored = Object.keys(typeExtraArgs(t, t === 'sw-deploy' ? { releaseId: 'R' } : {}));
      expect({ t, n: shownTypeOptions(t, typeExtraArgs(t, t === 'sw-deploy' ? { releaseId: 'R' } : {})).length }).toEqual({ t, n: stored.length });
    }
  });
});
