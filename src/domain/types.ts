/**
 * Strategy types, their states and the words dcmanager uses for them (SPEC §3). Pure data.
 */
export const ENDPOINTS = ['patching', 'usm', 'kubernetes', 'kube-rootca', 'firmware'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

export const SYNC_STATUSES = ['in-sync', 'out-of-sync', 'unknown'] as const;
export type SyncStatus = (typeof SYNC_STATUSES)[number];

export const STRATEGY_TYPES = [
  'patch',
  'sw-deploy',
  'kubernetes',
  'kube-rootca-update',
  'firmware',
  'prestage',
  // The config's own states, run by the exec driver (SPEC §7.2); no sync endpoint.
  'custom',
] as const;
export type StrategyType = (typeof STRATEGY_TYPES)[number];

export const APPLY_TYPES = ['parallel', 'serial'] as const;
export type ApplyType = (typeof APPLY_TYPES)[number];

/**
 * A strategy in one of these states is an apply's (running, or left by one that died): apply
 * resumes it, and the end of an apply moves it on. The strategy states are dcmanager's spelling:
 * initial, then these, then one of STRATEGY_ENDED.
 */
export const STRATEGY_RUNNING: readonly string[] = ['applying', 'paused', 'abort requested', 'aborting'];

/** A strategy in one of these states has no orchestrator work left and may be deleted. */
export const STRATEGY_ENDED: readonly string[] = ['complete', 'failed', 'aborted'];

export const STEP_INITIAL = 'initial';
export const STEP_COMPLETE = 'complete';
export const STEP_FAILED = 'failed';
export const STEP_ABORTED = 'aborted';
/** A step whose site did not answer, waiting to be tried again (domain/deferral.ts): not ended. */
export const STEP_DEFERRED = 'deferred';
export const STEP_ENDED: readonly string[] = [STEP_COMPLETE, STEP_FAILED, STEP_ABORTED];

export interface TypeInfo {
  type: StrategyType;
  alias: string;
  /** The sync endpoint a step of this type brings in-sync; null for prestage and custom. */
  endpoint: Endpoint | null;
  /** Label in "Subcloud X does not require <label>". */
  requireLabel: string;
  /** Label in "<label> sync status is unknown for one or more subclouds". */
  syncLabel: string;
  /** Upper bound of --max-parallel-subclouds. */
  maxParallelLimit: number;
  /** Whether --force takes in-sync subclouds too. */
  forceAllowed: boolean;
  /** Default per-state timeout in milliseconds (--state-timeout overrides). */
  defaultStateTimeoutMs: number;
}

const MINUTE = 60_000;

export const TYPES: Record<StrategyType, TypeInfo> = {
  patch: {
    type: 'patch',
    alias: 'patch-strategy',
    endpoint: 'patching',
    requireLabel: 'patching',
    syncLabel: 'Patching',
    maxParallelLimit: 5000,
    forceAllowed: false,
    defaultStateTimeoutMs: 60 * MINUTE,
  },
  'sw-deploy': {
    type: 'sw-deploy',
    alias: 'sw-deploy-strategy',
    endpoint: 'usm',
    requireLabel: 'software deploy',
    syncLabel: 'Software deploy',
    maxParallelLimit: 5000,
    forceAllowed: false,
    defaultStateTimeoutMs: 120 * MINUTE,
  },
  kubernetes: {
    type: 'kubernetes',
    alias: 'kube-upgrade-strategy',
    endpoint: 'kubernetes',
    requireLabel: 'kubernetes update',
    syncLabel: 'Kubernetes',
    maxParallelLimit: 5000,
    forceAllowed: true,
    defaultStateTimeoutMs: 120 * MINUTE,
  },
  'kube-rootca-update': {
    type: 'kube-rootca-update',
    alias: 'kube-rootca-update-strategy',
    endpoint: 'kube-rootca',
    requireLabel: 'kube rootca update',
    syncLabel: 'Kube rootca update',
    maxParallelLimit: 5000,
    forceAllowed: true,
    defaultStateTimeoutMs: 60 * MINUTE,
  },
  firmware: {
    type: 'firmware',
    alias: 'fw-update-strategy',
    endpoint: 'firmware',
    requireLabel: 'firmware update',
    syncLabel: 'Firmware',
    maxParallelLimit: 5000,
    forceAllowed: false,
    defaultStateTimeoutMs: 60 * MINUTE,
  },
  prestage: {
    type: 'prestage',
    alias: 'prestage-strategy',
    endpoint: null,
    requireLabel: 'prestage',
    syncLabel: 'Prestage',
    maxParallelLimit: 250,
    forceAllowed: false,
    defaultStateTimeoutMs: 180 * MINUTE,
  },
  custom: {
    type: 'custom',
    alias: 'custom-strategy',
    endpoint: null,
    requireLabel: 'custom',
    syncLabel: 'Custom',
    maxParallelLimit: 5000,
    forceAllowed: false,
    defaultStateTimeoutMs: 60 * MINUTE,
  },
};

/**
 * A state of a type's walk. `onlyWith`: the state is walked only when the strategy has this type
 * option (kube-rootca-update uploads a certificate only when created with --cert-file).
 */
export interface StateDef {
  state: string;
  onlyWith?: 'cert_file';
}

/**
 * The states a step of each type walks, in order, between `initial` and `complete` (SPEC §3):
 * the one list statesOf and `strategy types` read. `custom` has none of its own: the exec config
 * names them.
 */
export const TYPE_STATES: Record<Exclude<StrategyType, 'custom'>, readonly StateDef[]> = {
  patch: [
    { state: 'pre check' },
    { state: 'updating patches' },
    { state: 'creating VIM patch strategy' },
    { state: 'applying VIM patch strategy' },
    { state: 'finishing patch strategy' },
  ],
  'sw-deploy': [
    { state: 'sw-deploy pre-check' },
    { state: 'sw-deploy install license' },
    { state: 'create VIM sw-deploy strategy' },
    { state: 'apply VIM sw-deploy strategy' },
    { state: 'finish sw-deploy strategy' },
  ],
  kubernetes: [
    { state: 'kube upgrade pre check' },
    { state: 'kube creating vim kube upgrade strategy' },
    { state: 'kube applying vim kube upgrade strategy' },
  ],
  'kube-rootca-update': [
    { state: 'kube rootca update pre check' },
    { state: 'kube rootca update start', onlyWith: 'cert_file' },
    { state: 'kube rootca update upload cert', onlyWith: 'cert_file' },
    { state: 'creating vim kube rootca update strategy' },
    { state: 'applying vim kube rootca update strategy' },
  ],
  firmware: [
    { state: 'importing firmware' },
    { state: 'creating fw update strategy' },
    { state: 'applying fw update strategy' },
    { state: 'finishing fw update' },
  ],
  prestage: [
    { state: 'prestage-precheck' },
    { state: 'prestage-prepare' },
    { state: 'prestaging-packages' },
    { state: 'prestaging-images' },
  ],
};

/** The states a step of this type walks, in order, between `initial` and `complete`. */
export function statesOf(type: StrategyType, extra: { cert_file?: string | null; exec_states?: unknown } = {}): string[] {
  // Named by the exec config, in its order, and stored with the strategy at create.
  if (type === 'custom') return Array.isArray(extra.exec_states) ? (extra.exec_states as string[]) : [];
  return TYPE_STATES[type].filter((d) => !d.onlyWith || extra[d.onlyWith]).map((d) => d.state);
}

/** The role a state plays on the subcloud's side: the simulator models VIM strategies by it. */
export type StateRole = 'vim-create' | 'vim-apply' | 'plain';

export function roleOf(state: string): StateRole {
  const s = state.toLowerCase();
  if (s.includes('vim') && s.includes('creat')) return 'vim-create';
  if (s.includes('vim') && s.includes('apply')) return 'vim-apply';
  return 'plain';
}
