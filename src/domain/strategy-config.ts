/**
 * Strategy config: dcmanager's sw-update-options (SPEC §4). The options a subcloud's update runs
 * with: its own row if it has one, else the default row, else dcmanager's built-in defaults. Pure.
 */

/** The name dcmanager gives the default row (`dccommon.consts.SW_UPDATE_DEFAULT_TITLE`). */
export const DEFAULT_CLOUD = 'all clouds default';

/**
 * The names by which dcmanager's API means the default row: its client sends `RegionOne` when no
 * cloud is given, and newer dcmanager also takes `SystemController`.
 */
export const DEFAULT_REFS: readonly string[] = ['RegionOne', 'SystemController'];

export const STORAGE_APPLY_TYPES = ['parallel', 'serial'] as const;
export const WORKER_APPLY_TYPES = ['parallel', 'serial'] as const;
export const ALARM_RESTRICTION_TYPES = ['strict', 'relaxed'] as const;
export const INSTANCE_ACTIONS = ['stop-start', 'migrate'] as const;

/** The five options, keyed as drivers receive them (`DCM_OPT_<KEY>` for exec runs). */
export interface ConfigOptions {
  storage_apply_type: (typeof STORAGE_APPLY_TYPES)[number];
  worker_apply_type: (typeof WORKER_APPLY_TYPES)[number];
  max_parallel_workers: number;
  alarm_restriction_type: (typeof ALARM_RESTRICTION_TYPES)[number];
  default_instance_action: (typeof INSTANCE_ACTIONS)[number];
}

/** What the default row holds until it is updated (SPEC §4). */
export const BUILTIN_DEFAULTS: Readonly<ConfigOptions> = Object.freeze({
  storage_apply_type: 'parallel',
  worker_apply_type: 'parallel',
  max_parallel_workers: 10,
  alarm_restriction_type: 'relaxed',
  default_instance_action: 'stop-start',
});

export function isDefaultRef(ref: string | undefined): boolean {
  return ref === undefined || DEFAULT_REFS.includes(ref);
}

/** The five options alone (a stored row also carries its times), frozen. */
export function pickOptions(o: ConfigOptions): Readonly<ConfigOptions> {
  return Object.freeze({
    storage_apply_type: o.storage_apply_type,
    worker_apply_type: o.worker_apply_type,
    max_parallel_workers: o.max_parallel_workers,
    alarm_restriction_type: o.alarm_restriction_type,
    default_instance_action: o.default_instance_action,
  });
}

/**
 * The options of every subcloud of an apply, held as dcmanager resolves them: the few subclouds
 * with a row of their own, and the default for everyone else. Memory follows the rows, not the fleet.
 */
export class ConfigBook {
  private readonly own: ReadonlyMap<number, Readonly<ConfigOptions>>;
  private readonly fallback: Readonly<ConfigOptions>;

  constructor(defaults: ConfigOptions | undefined, own: Iterable<[number, ConfigOptions]>) {
    this.fallback = Object.freeze(pickOptions(defaults ?? BUILTIN_DEFAULTS));
    this.own = new Map([...own].map(([id, o]) => [id, Object.freeze(pickOptions(o))]));
  }

  /**
   * The options that apply to this subcloud: one frozen object per row, shared by every operation
   * of its subclouds (a copy per operation costs more than a zero-latency operation itself).
   */
  optionsFor(subcloudId: number): Readonly<Record<string, string | number>> {
    return this.own.get(subcloudId) ?? this.fallback;
  }
}
