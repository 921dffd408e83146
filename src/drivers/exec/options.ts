/** The exec driver's `strategy create` options (SPEC §7.2): the config is read and checked here. */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from '../../domain/errors.js';
import type { ExtraArgs } from '../../domain/options.js';
import { defaultLogDir } from '../../domain/logs.js';
import type { DriverCreateInput } from '../index.js';
import { parseConfigText, resolveConfig, type ExecConfig } from './config.js';


export function execExtraArgs(input: DriverCreateInput): ExtraArgs {
  const raw = input.raw as { execConfig?: string; logDir?: string };
  if (!raw.execConfig) throw new UsageError('--driver exec needs --exec-config FILE');
  // One place for an exec run's timeout: the config (per state, or its defaults).
  if (input.raw.stateTimeout !== undefined) throw new UsageError('--state-timeout is not used by --driver exec: set timeout in the exec config');
  let text: string;
  try {
    text = fs.readFileSync(raw.execConfig, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read exec config ${raw.execConfig}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const config = resolveConfig(parseConfigText(text, raw.execConfig), raw.execConfig, input.type === 'custom' ? null : input.states);
  const logDir = path.resolve(raw.logDir ?? defaultLogDir(input.dbPath));
  return {
    // The parsed config, not the path: editing the file later changes no strategy.
    exec_config: JSON.stringify(config),
    exec_states: config.states.map((s) => s.state),
    log_dir: logDir,
  };
}

export function execConfigOf(extra: ExtraArgs): ExecConfig {
  return JSON.parse(String(extra.exec_config)) as ExecConfig;
}
