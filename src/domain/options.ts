/**
 * Type options and driver settings of `strategy create` (SPEC §4, §7): validated here, stored in
 * the strategy's extra args, handed to drivers. Pure.
 */
import { ClientCheckError, OperationError, UsageError } from './errors.js';
import { prestageReleaseRefusal } from './prestage-rules.js';
import { durationOption } from './durations.js';
import { TYPES, type StrategyType } from './types.js';

/** Raw values as the command line gave them; `undefined` = not given. */
export interface RawTypeOptions {
  patchId?: string;
  /** The old client's patch strategy flags: stop after uploading, or remove the patch. */
  uploadOnly?: boolean;
  remove?: boolean;
  toVersion?: string;
  subject?: string;
  expiryDate?: string;
  certFile?: string;
  release?: string;
  forInstall?: boolean;
  forSwDeploy?: boolean;
  releaseId?: string;
  snapshot?: boolean;
  rollback?: boolean;
  delete?: boolean;
  cleanup?: boolean;
  withPrestage?: boolean;
  kubeUpgrade?: string;
  sysadminPassword?: string;
  /** dcmanager's deprecated spellings of --delete and --cleanup, still accepted by its client. */
  withDelete?: boolean;
  deleteOnly?: boolean;
}

/** Strategy options that are not a type's: today the per-state timeout. */
export interface RawDriverOptions {
  driver?: string;
  stateTimeout?: string;
  /** Each driver's own options, as commander names them (`simLatency`, `execConfig`, …). */
  [option: string]: unknown;
}

/** The flag each raw option came from, for messages. */
const FLAG: Record<keyof RawTypeOptions, string> = {
  patchId: '--patch-id',
  uploadOnly: '--upload-only',
  remove: '--remove',
  toVersion: '--to-version',
  subject: '--subject',
  expiryDate: '--expiry-date',
  certFile: '--cert-file',
  release: '--release',
  forInstall: '--for-install',
  forSwDeploy: '--for-sw-deploy',
  releaseId: '--release-id',
  snapshot: '--snapshot',
  rollback: '--rollback',
  delete: '--delete',
  cleanup: '--cleanup',
  withPrestage: '--with-prestage',
  kubeUpgrade: '--kube-upgrade',
  sysadminPassword: '--sysadmin-password',
  withDelete: '--with-delete',
  deleteOnly: '--delete-only',
};

/** Deprecated sw-deploy options and what they now are (dcmanager maps them the same way). */
const DEPRECATED: Partial<Record<keyof RawTypeOptions, keyof RawTypeOptions>> = { withDelete: 'delete', deleteOnly: 'cleanup' };

/**
 * The notice dcmanager's client prints on stdout, before the record, for each deprecated option
 * given (CreateSwDeployStrategy.process_custom_params): the option and the client's own message,
 * WITH_DELETE_DEPRECATION_MSG or DELETE_ONLY_DEPRECATION_MSG, in a block of a banner, the option
 * with its message, a rule and a blank line.
 */
export function deprecationNotices(raw: RawTypeOptions): string {
  return (Object.keys(DEPRECATED) as (keyof RawTypeOptions)[])
    .filter((k) => given(raw, k))
    .map(
      (k) =>
        '### DEPRECATION NOTICE ###\n' +
        `${FLAG[k]}: This option is deprecated and will be removed in a future release. Please use ${FLAG[DEPRECATED[k]!]} instead.\n` +
        '##########################\n\n',
    )
    .join('');
}

/** The raw options with each deprecated one folded into the option that replaced it. */
function undeprecated(raw: RawTypeOptions): RawTypeOptions {
  const { withDelete, deleteOnly, ...rest } = raw;
  return { ...rest, delete: raw.delete || withDelete || undefined, cleanup: raw.cleanup || deleteOnly || undefined };
}

const ALLOWED: Record<StrategyType, (keyof RawTypeOptions)[]> = {
  patch: ['patchId', 'uploadOnly', 'remove'],
  'sw-deploy': ['releaseId', 'snapshot', 'rollback', 'delete', 'cleanup', 'withPrestage', 'kubeUpgrade', 'sysadminPassword', 'withDelete', 'deleteOnly'],
  kubernetes: ['toVersion'],
  'kube-rootca-update': ['subject', 'expiryDate', 'certFile'],
  firmware: [],
  custom: [],
  prestage: ['release', 'forInstall', 'forSwDeploy', 'sysadminPassword'],
};

/** The type-option flags a strategy type takes (for the per-type aliases' help). */
export function typeOptionFlags(type: StrategyType): string[] {
  return ALLOWED[type].map((key) => FLAG[key]);
}

/** What an option's value is, as `strategy types` and the README write it; a flag takes none. */
const VALUE: Partial<Record<keyof RawTypeOptions, string>> = {
  patchId: 'ID',
  toVersion: 'V',
  subject: 'S',
  expiryDate: 'D',
  certFile: 'F',
  release: 'YY.MM[.nn]',
  releaseId: 'R',
  kubeUpgrade: 'V',
  sysadminPassword: 'P',
};

/** An option a type cannot do without, unless one of `unless` is given; `message` is dcmanager's. */
interface Required {
  key: keyof RawTypeOptions;
  unless: (keyof RawTypeOptions)[];
  message: string;
}

const REQUIRED: Partial<Record<StrategyType, Required[]>> = {
  'sw-deploy': [{ key: 'releaseId', unless: ['rollback', 'cleanup'], message: 'The --release-id is required to create a deploy strategy.' }],
};

/**
 * A type's options as `strategy types` lists them: each flag with its value (`--patch-id ID`), a
 * deprecated one with what replaced it; and the required ones with their exceptions.
 */
export function describeTypeOptions(type: StrategyType): { options: string[]; required: string[] } {
  const options = ALLOWED[type].map((key) => {
    const replaced = DEPRECATED[key];
    return `${FLAG[key]}${VALUE[key] ? ` ${VALUE[key]}` : ''}${replaced ? ` (deprecated: ${FLAG[replaced]})` : ''}`;
  });
  const required = (REQUIRED[type] ?? []).map(
    (r) => `${FLAG[r.key]}${r.unless.length ? ` unless ${r.unless.map((k) => FLAG[k]).join(' or ')}` : ''}`,
  );
  return { options, required };
}

function checkRequired(type: StrategyType, raw: RawTypeOptions): void {
  for (const r of REQUIRED[type] ?? []) {
    if (!given(raw, r.key) && !r.unless.some((k) => given(raw, k))) throw new ClientCheckError(r.message);
  }
}

export type ExtraArgs = Record<string, string | number | boolean | null | string[]>;

function given(raw: RawTypeOptions, key: keyof RawTypeOptions): boolean {
  const v = raw[key];
  return v !== undefined && v !== false;
}

function exclusive(raw: RawTypeOptions, a: keyof RawTypeOptions, others: (keyof RawTypeOptions)[]): void {
  if (!given(raw, a)) return;
  for (const b of others) {
    if (given(raw, b)) throw new UsageError(`${FLAG[a]} cannot be used with ${FLAG[b]}`);
  }
}

/**
 * The sysadmin password is kept in the extra args under this one key, for the exec driver to hand
 * to runs; no command prints extra args.
 */
function password(raw: RawTypeOptions): ExtraArgs {
  return raw.sysadminPassword !== undefined ? { sysadmin_password: raw.sysadminPassword } : {};
}

/** Validate type options against the type and dcmanager's rules; returns the stored extra args. */
export function typeExtraArgs(type: StrategyType, raw: RawTypeOptions): ExtraArgs {
  for (const key of Object.keys(FLAG) as (keyof RawTypeOptions)[]) {
    if (given(raw, key) && !ALLOWED[type].includes(key)) {
      throw new UsageError(`${FLAG[key]} is not an option of strategy type ${type}`);
    }
  }
  switch (type) {
    case 'patch':
      // The old client sends both flags as given and the server takes them as they come.
      return { patch_id: raw.patchId ?? null, upload_only: Boolean(raw.uploadOnly), remove: Boolean(raw.remove) };
    case 'kubernetes':
      return { to_version: raw.toVersion ?? null };
    case 'kube-rootca-update':
      exclusive(raw, 'certFile', ['subject', 'expiryDate']);
      return {
        subject: raw.subject ?? null,
        expiry_date: raw.expiryDate ?? null,
        cert_file: raw.certFile ?? null,
      };
    case 'prestage': {
      // dcmanager's client's words for this pair.
      if (raw.forInstall && raw.forSwDeploy) throw new ClientCheckError('Options --for-install and --for-sw-deploy cannot be combined');
      // The server's checks of the release (its controller's 400: exit 1). The system
      // controller's release, the default, is known only with the file (commands/system-controller.ts).
      const refused = prestageReleaseRefusal(raw.release, Boolean(raw.forSwDeploy), null);
      if (refused) throw new OperationError(refused);
      return {
        prestage_software_version: raw.release ?? null,
        for_sw_deploy: Boolean(raw.forSwDeploy),
        for_install: !raw.forSwDeploy,
        ...password(raw),
      };
    }
    case 'sw-deploy': {
      raw = undeprecated(raw);
      // dcmanager's client checks, in its order and with its words.
      if (given(raw, 'sysadminPassword') && !raw.withPrestage) {
        throw new ClientCheckError('--sysadmin-password can only be used with --with-prestage');
      }
      checkRequired(type, raw);
      if (raw.snapshot && (raw.rollback || raw.cleanup)) {
        throw new ClientCheckError('Option --snapshot cannot be used with any of the following options: --rollback or --cleanup.');
      }
      if (raw.delete && (raw.rollback || raw.cleanup)) {
        throw new ClientCheckError('Option --delete cannot be used with any of the following options: --rollback or --cleanup.');
      }
      if (raw.rollback && (given(raw, 'releaseId') || raw.cleanup || raw.withPrestage || given(raw, 'kubeUpgrade'))) {
        throw new ClientCheckError(
          'Option --rollback cannot be used with any of the following options: --release-id, --cleanup, --with-prestage or --kube-upgrade.',
        );
      }
      if (raw.cleanup && (given(raw, 'releaseId') || raw.withPrestage || given(raw, 'kubeUpgrade'))) {
        throw new ClientCheckError('Option --cleanup cannot be used with any of the following options: --release-id, --with-prestage or --kube-upgrade.');
      }
      return {
        release_id: raw.releaseId ?? null,
        snapshot: Boolean(raw.snapshot),
        rollback: Boolean(raw.rollback),
        delete_option: Boolean(raw.delete),
        cleanup: Boolean(raw.cleanup),
        with_prestage: Boolean(raw.withPrestage),
        kube_upgrade: raw.kubeUpgrade ?? null,
        ...password(raw),
      };
    }
    case 'firmware':
    case 'custom':
      return {};
  }
}

/**
 * The per-state timeout, a strategy setting whatever the driver. Each driver's own options are
 * declared and checked by the driver's module (src/drivers/<name>/options.ts).
 */
export function timeoutExtraArgs(type: StrategyType, raw: RawDriverOptions): ExtraArgs {
  const timeout =
    raw.stateTimeout === undefined ? TYPES[type].defaultStateTimeoutMs : durationOption('--state-timeout', raw.stateTimeout);
  return { state_timeout_ms: timeout };
}

/** Where typeExtraArgs keeps an option: its name in snake case (`patchId` → `patch_id`), but for these. */
const STORED_AS: Partial<Record<keyof RawTypeOptions, string>> = { release: 'prestage_software_version', delete: 'delete_option' };
const storedKey = (key: keyof RawTypeOptions): string => STORED_AS[key] ?? key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * A strategy's type options as stored, each by its flag (`--patch-id`, `P1`; `None` unset, `True`
 * or `False` for a flag), for a reader of what was rolled out (the report). The sysadmin password
 * is said to have been given, never shown.
 */
export function shownTypeOptions(type: StrategyType, extra: ExtraArgs): [flag: string, value: string][] {
  const shown = (v: ExtraArgs[string] | undefined) =>
    v === null || v === undefined ? 'None' : typeof v === 'boolean' ? (v ? 'True' : 'False') : Array.isArray(v) ? v.join(', ') : String(v);
  const out: [string, string][] = ALLOWED[type]
    .filter((key) => key !== 'sysadminPassword' && DEPRECATED[key] === undefined)
    .map((key) => [FLAG[key], shown(extra[storedKey(key)])]);
  if (typeof extra.sysadmin_password === 'string') out.push(['--sysadmin-password', 'given (not shown)']);
  return out;
}
