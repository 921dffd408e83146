/**
 * A config checked against the strategy it runs for, at create: a type option that a command, an
 * env value or a cwd names but the strategy lacks would reach every run as an empty string (a
 * patch strategy without --patch-id running `sw-patch apply ''` on every site). Pure.
 */
import { UsageError } from '../../domain/errors.js';
import type { ExtraArgs } from '../../domain/options.js';
import type { StrategyType } from '../../domain/types.js';
import type { ExecConfig } from './config.js';
import { placeholdersIn, TYPE_OPTION_KEYS } from './placeholders.js';

/** Where in a state's entry each text is: `run`, `env: NAME`, `cwd`. */
function textsOf(spec: ExecConfig['states'][number]): [string, string][] {
  const run: [string, string][] = Array.isArray(spec.run) ? spec.run.map((a) => ['run', a]) : [['run', spec.run]];
  return [...run, ...Object.entries(spec.env).map(([k, v]): [string, string] => [`env: ${k}`, v]), ['cwd', spec.cwd]];
}

/**
 * `typeOptions` are the strategy's type options as stored (a key present with null: an option of
 * the type not given; a key absent: not an option of the type). The first problem is the error.
 */
export function checkTypeOptions(config: ExecConfig, file: string, type: StrategyType, typeOptions: ExtraArgs): void {
  // The audit runs for the strategy too (after each subcloud's last state), with its options.
  for (const spec of config.audit ? [...config.states, config.audit] : config.states) {
    for (const [where, text] of textsOf(spec)) {
      for (const name of placeholdersIn(text)) {
        const key = TYPE_OPTION_KEYS[name];
        if (key === undefined) continue;
        const at = `exec config ${file}: ${spec === config.audit ? 'audit' : `state "${spec.state}"`}: ${where}`;
        if (!(key in typeOptions)) throw new UsageError(`${at}: {${name}} is not an option of strategy type ${type}`);
        const v = typeOptions[key];
        if (v === null || v === undefined || v === '') {
          throw new UsageError(`${at}: {${name}} is used but the strategy has no --${name.replace(/_/g, '-')}: give it, or read $DCM_ARG_${name.toUpperCase()}, set only when given`);
        }
      }
    }
  }
}

/**
 * `subcloud audit` runs the audit for no strategy: a type option it names would be an empty
 * string on every site. Refused, pointing at the variable that is set only when apply runs it.
 */
export function checkAuditAlone(spec: ExecConfig['states'][number], file: string): void {
  for (const [where, text] of textsOf(spec)) {
    for (const name of placeholdersIn(text)) {
      if (TYPE_OPTION_KEYS[name] === undefined) continue;
      throw new UsageError(
        `exec config ${file}: audit: ${where}: {${name}} is a strategy's option, and subcloud audit runs for none: read $DCM_ARG_${name.toUpperCase()}, set only when apply runs the audit`,
      );
    }
  }
}
