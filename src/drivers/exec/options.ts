/** The exec driver's `strategy create` options (SPEC §7.2): the config is read and checked here. */
import crypto from 'node:crypto';
import path from 'node:path';
import { UsageError } from '../../domain/errors.js';
import type { ExtraArgs } from '../../domain/options.js';
import { defaultLogDir, LOG_LAYOUT } from '../../domain/logs.js';
import type { DriverCreateInput } from '../index.js';
import { parseConfigText, resolveConfig, type ExecConfig } from './config.js';
import { checkLogDir } from './logdir.js';
import { checkTypeOptions } from './lint.js';
import { readConfigFile } from './read-config.js';

export function execExtraArgs(input: DriverCreateInput): ExtraArgs {
  const raw = input.raw as { execConfig?: string; logDir?: string };
  if (!raw.execConfig) throw new UsageError('--driver exec needs --exec-config FILE');
  // One place for an exec run's timeout: the config (per state, or its defaults).
  if (input.raw.stateTimeout !== undefined) throw new UsageError('--state-timeout is not used by --driver exec: set timeout in the exec config');
  // As `--db ''`: an empty value is an unset variable in a script, not "the current folder".
  if (raw.logDir === '') throw new UsageError("option '--log-dir' is empty: name a folder");
  const text = readConfigFile(raw.execConfig);
  const config = resolveConfig(parseConfigText(text, raw.execConfig), raw.execConfig, input.type === 'custom' ? null : input.states);
  checkTypeOptions(config, raw.execConfig, input.type, input.typeOptions);
  const logDir = path.resolve(raw.logDir ?? defaultLogDir(input.dbPath));
  checkLogDir(logDir, raw.logDir ?? logDir);
  return {
    // The parsed config, not the path: editing the file later changes no strategy.
    exec_config: JSON.stringify(config),
    // The file's own digest, as read at create: what a post-mortem matches against the file a
    // person still has (`sha256sum FILE`; the text is the file's bytes, as YAML and JSON are UTF-8);
    // the parsed config above would not hash the same.
    exec_config_sha256: crypto.createHash('sha256').update(text).digest('hex'),
    exec_states: config.states.map((s) => s.state),
    log_dir: logDir,
    // The layout this strategy's runs write (domain/logs.ts): kept for its life, so that a later
    // dcm with another layout still finds and adopts the runs this one leaves going.
    log_layout: LOG_LAYOUT,
  };
}

export function execConfigOf(extra: ExtraArgs): ExecConfig {
  // JSON has no Infinity: a state's `timeout: none` was stored as null.
  return JSON.parse(String(extra.exec_config), (k, v: unknown) => (k === 'timeoutMs' && v === null ? Infinity : v)) as ExecConfig;
}
