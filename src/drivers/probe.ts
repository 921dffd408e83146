/**
 * Probing sites (issue 18, "Sites that answer"): whether a site answers now, asked of the driver
 * that would update it. The sim's sites answer unless marked unreachable (sim/unreachable.ts); the
 * exec driver runs the config's `probe` command (exec/probe.ts). Each probe is one site; the
 * window over many is the caller's.
 */
import { UsageError } from '../domain/errors.js';
import { visible } from '../domain/outside-text.js';
import type { ExtraArgs } from '../domain/options.js';
import type { DriverName } from './index.js';

/** A site as a probe sees it: its name, fields and labels (for the command's placeholders). */
export interface ProbeSite {
  cloud: string;
  fields: Record<string, string | null>;
  labels: Readonly<Record<string, string>>;
}

export interface ProbeResult {
  answered: boolean;
  detail: string;
}

export type Prober = (site: ProbeSite) => Promise<ProbeResult>;

/** The prober of `--driver NAME` with `--exec-config FILE` (for `dcm subcloud probe`). */
export async function proberFromOptions(driver: DriverName, raw: { execConfig?: string }, dbPath: string): Promise<Prober> {
  if (driver === 'sim') {
    if (raw.execConfig !== undefined) throw new UsageError('--exec-config is an option of the exec driver, not of --driver sim');
    return simProber();
  }
  if (!raw.execConfig) throw new UsageError('--driver exec needs --exec-config FILE (its probe command)');
  const [{ readConfigFile }, { parseConfigText, probeOfConfig }, { execProber }] = await Promise.all([
    import('./exec/read-config.js'),
    import('./exec/config.js'),
    import('./exec/probe.js'),
  ]);
  const spec = probeOfConfig(parseConfigText(readConfigFile(raw.execConfig), raw.execConfig), raw.execConfig);
  const probe = execProber(spec, dbPath);
  // A site's answer is outside text: escaped and cut before it is printed or kept (outside-text.ts).
  return async (site) => {
    const r = await probe(site);
    return { ...r, detail: visible(r.detail) };
  };
}

/**
 * The prober of a strategy being created (`strategy create --probe`), from its extra args: the exec
 * config as stored must have a probe.
 */
export async function proberOfStrategy(extra: ExtraArgs, dbPath: string): Promise<Prober> {
  if (extra.driver !== 'exec') return simProber();
  const { execConfigOf } = await import('./exec/options.js');
  const config = execConfigOf(extra);
  if (!config.probe) throw new UsageError('--probe with --driver exec needs a probe command in the exec config (top-level key probe)');
  const { execProber } = await import('./exec/probe.js');
  return execProber(config.probe, dbPath);
}

async function simProber(): Promise<Prober> {
  const { simUnreachable, SIM_UNREACHABLE_LABEL } = await import('./sim/unreachable.js');
  return async (site) =>
    simUnreachable(site.labels) ? { answered: false, detail: `no answer (label ${SIM_UNREACHABLE_LABEL})` } : { answered: true, detail: '' };
}
