/**
 * `strategy create --dry-run --show-commands`: per state, the argv, cwd and environment a run of
 * one subcloud would be handed at its first attempt, made by the functions the driver starts runs
 * with (run-env.ts). Pure. What only an apply knows is written in angle brackets: the strategy's
 * id (in DCM_RUN_ID) and the apply lock's token (DCM_FENCE). The sysadmin password is masked.
 */
import type { ExtraArgs } from '../../domain/options.js';
import { layoutOf, runBase } from '../../domain/logs.js';
import type { StrategyType } from '../../domain/types.js';
import type { ExecConfig } from './config.js';
import { runIdOf } from './run-id.js';
import { runArgv, runCwd, runEnv, runValues } from './run-env.js';

export const MASKED = '********';

export interface RunPreview {
  state: string;
  argv: string[];
  cwd: string;
  env: [string, string][];
}

export interface PreviewInput {
  cloud: string;
  type: StrategyType;
  stage: number;
  /** The strategy's extra args as create would store them (type options, the driver's settings). */
  extra: ExtraArgs;
  subcloud: Record<string, string | null>;
  labels: Readonly<Record<string, string>>;
  options: Readonly<Record<string, string | number>>;
  /** Absolute, as the driver gets it. */
  dbPath: string;
}

export function previewRuns(config: ExecConfig, input: PreviewInput): RunPreview[] {
  const password = typeof input.extra.sysadmin_password === 'string' ? input.extra.sysadmin_password : undefined;
  const settings = { dbPath: input.dbPath, sysadminPassword: password === undefined ? undefined : MASKED };
  return config.states.map((spec) => {
    const req = { ...input, state: spec.state, attempt: 1, fence: "<the apply lock's token>" };
    const values = runValues(req, settings);
    // The strategy's part of the id is its creation time's digits, unknown before create.
    const runId = `<strategy>${runIdOf({ ...req, campaign: '' })}`;
    // The strategy's folder (layout 2) is named by its id as well: unknown before create.
    const logs = { ...layoutOf({ created_at: '', extra: input.extra }, input.dbPath), strategy: '<strategy>' };
    const base = runBase(logs, input.cloud, 1, spec.state);
    const env = runEnv(req, spec, values, { base, runId }, settings);
    return { state: spec.state, argv: runArgv(spec, values), cwd: runCwd(spec, values), env: Object.entries(env) };
  });
}
