/**
 * The drivers a strategy can name (`--driver sim|exec`, stored in its extra args). Each driver's
 * module owns its create options: their declaration (for commander), their check (into extra
 * args) and their help; apply asks here for the strategy's driver.
 */
import path from 'node:path';
import { isPgUrl, urlWithoutPassword } from '../domain/db-url.js';
import { UsageError } from '../domain/errors.js';
import type { ExtraArgs } from '../domain/options.js';
import type { StrategyType } from '../domain/types.js';
import type { Driver } from './driver.js';
import type { PreviewInput, RunPreview } from './exec/preview.js';
import { SIM_OPTIONS } from './sim/flags.js';
import { EXEC_OPTIONS } from './exec/flags.js';

export const DRIVER_NAMES = ['sim', 'exec'] as const;
export type DriverName = (typeof DRIVER_NAMES)[number];

export interface DriverOption {
  flags: string;
  /** The option's name as commander gives it (`--sim-fail-rate` → `simFailRate`). */
  key: string;
  help: string;
  repeatable?: boolean;
}

export interface DriverCreateInput {
  type: StrategyType;
  /** The type's states; null for `custom`, whose states the driver's config names. */
  states: readonly string[] | null;
  raw: Record<string, unknown>;
  /** The strategy's type options as stored (a type's option not given is null). */
  typeOptions: ExtraArgs;
  dbPath: string;
  /** A fresh random seed, for drivers that draw outcomes. */
  seed: number;
}

/** What a driver is made from: the strategy as stored. */
export interface StoredStrategy {
  created_at: string;
  extra: ExtraArgs;
}

/** What the apply that runs the driver tells it. */
export interface DriverRunOptions {
  /** The worker's lease (a server's store): how long its runs' launcher may be away before it asks whether the worker was taken over. */
  leaseMs?: number;
}

interface DriverModule {
  options: DriverOption[];
  /** Loaded only when a strategy is created: --help need not load a YAML parser. */
  extraArgs(input: DriverCreateInput): Promise<ExtraArgs>;
  create(dbPath: string, strategy: StoredStrategy, opts?: DriverRunOptions): Promise<Driver>;
  /**
   * Its runs outlive their worker and their ends reach a server's store from the host that ran
   * them (Driver.remote): a worker on another host waits for them rather than running them again.
   */
  endsReachStore?: boolean;
}

const MODULES: Record<DriverName, DriverModule> = {
  sim: {
    options: SIM_OPTIONS,
    extraArgs: async (input) => (await import('./sim/options.js')).simExtraArgs(input),
    async create(dbPath, { extra }) {
      const { SimDriver, simSettings } = await import('./sim/index.js');
      return await SimDriver.open(dbPath, simSettings(extra));
    },
  },
  exec: {
    options: EXEC_OPTIONS,
    endsReachStore: true,
    extraArgs: async (input) => (await import('./exec/options.js')).execExtraArgs(input),
    async create(dbPath, strategy, opts) {
      const { ExecDriver } = await import('./exec/index.js');
      const { execConfigOf } = await import('./exec/options.js');
      // Loaded here, not at the top: `--help` and the lists have no use for it.
      const { layoutOf } = await import('../domain/logs.js');
      const extra = strategy.extra;
      return new ExecDriver({
        config: execConfigOf(extra),
        // The folder is always stored at create (absolute), the default included; the layout is
        // the one the strategy was created with.
        logs: layoutOf(strategy, dbPath),
        dbPath: absoluteDb(dbPath),
        storeUrl: isPgUrl(dbPath) ? dbPath : undefined,
        sysadminPassword: typeof extra.sysadmin_password === 'string' ? extra.sysadmin_password : undefined,
        leaseMs: opts?.leaseMs,
      });
    },
  },
};

/** Every driver's create options, for `strategy create`. */
export function driverOptions(): DriverOption[] {
  return DRIVER_NAMES.flatMap((n) => MODULES[n].options);
}

export function parseDriverName(text: string | undefined): DriverName {
  const name = text ?? 'sim';
  if (!(DRIVER_NAMES as readonly string[]).includes(name)) {
    throw new UsageError(`invalid driver '${name}': choose from ${DRIVER_NAMES.join(', ')}`);
  }
  return name as DriverName;
}

/** Check the chosen driver's options (and that no other driver's were given); its extra args. */
export async function driverExtraArgs(name: DriverName, input: DriverCreateInput): Promise<ExtraArgs> {
  for (const other of DRIVER_NAMES) {
    if (other === name) continue;
    for (const o of MODULES[other].options) {
      const v = input.raw[o.key];
      if (v !== undefined && !(Array.isArray(v) && v.length === 0)) {
        throw new UsageError(`${o.flags.split(' ')[0]} is an option of the ${other} driver, not of --driver ${name}`);
      }
    }
  }
  return { driver: name, ...(await MODULES[name].extraArgs(input)) };
}

/** The strategy's driver; a strategy stored before drivers were named is a sim one. */
/**
 * The database as a run's `{db}` and DCM_DB name it: a file's absolute path, or the server's
 * address without its password (which never reaches a run's argv or environment).
 */
function absoluteDb(dbPath: string): string {
  return isPgUrl(dbPath) ? urlWithoutPassword(dbPath) : path.resolve(dbPath);
}

/** Whether the strategy's driver tells a run's end to the store from the host that ran it. */
export function endsReachStore(extra: ExtraArgs): boolean {
  return MODULES[parseDriverName(typeof extra.driver === 'string' ? extra.driver : undefined)].endsReachStore === true;
}

/** The strategy's driver as its module makes it: the apply wraps it (visible.ts, the audit) itself. */
export async function createRawDriver(dbPath: string, strategy: StoredStrategy, opts?: DriverRunOptions): Promise<Driver> {
  const extra = strategy.extra;
  return await MODULES[parseDriverName(typeof extra.driver === 'string' ? extra.driver : undefined)].create(dbPath, strategy, opts);
}


/**
 * The runs the exec driver would start for one subcloud, as a function to call once the plan is
 * known (inside the dry run's read transaction, which cannot wait for a module to load).
 */
export async function loadPreview(): Promise<(extra: ExtraArgs, input: Omit<PreviewInput, 'extra'>) => RunPreview[]> {
  const [{ previewRuns }, { execConfigOf }] = await Promise.all([import('./exec/preview.js'), import('./exec/options.js')]);
  return (extra, input) => previewRuns(execConfigOf(extra), { ...input, extra });
}

/** A driver that audits sites, for `subcloud audit`: the sim's sites, or an exec config's `audit`. */
export type Auditor = Driver & { audit: NonNullable<Driver['audit']> };

/**
 * The auditor `subcloud audit --driver NAME [--exec-config FILE]` asks. The exec config is read
 * and checked here (a usage error naming the file and the key); only its `audit` is used.
 */
export async function createAuditor(dbPath: string, name: DriverName, execConfig: string | undefined): Promise<Auditor> {
  if (name === 'sim') {
    if (execConfig !== undefined) throw new UsageError('--exec-config is an option of the exec driver, not of --driver sim');
    const [{ SimDriver, simSettings }, { visibleDriver }] = await Promise.all([import('./sim/index.js'), import('./visible.js')]);
    return visibleDriver(await SimDriver.open(dbPath, simSettings({})) as Auditor);
  }
  if (!execConfig) throw new UsageError('--driver exec needs --exec-config FILE (a config with "audit")');
  const [{ parseConfigText, resolveAuditConfig }, { readConfigFile }, { auditOnlyDriver }, { checkAuditAlone }, { visibleDriver }] = await Promise.all([
    import('./exec/config.js'),
    import('./exec/read-config.js'),
    import('./exec/audit.js'),
    import('./exec/lint.js'),
    import('./visible.js'),
  ]);
  const spec = resolveAuditConfig(parseConfigText(readConfigFile(execConfig), execConfig), execConfig);
  checkAuditAlone(spec, execConfig);
  return visibleDriver(auditOnlyDriver(spec, { dbPath: absoluteDb(dbPath) }));
}
