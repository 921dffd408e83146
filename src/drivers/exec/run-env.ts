/**
 * What a run is handed: its argv, cwd and environment, made from the request and the config
 * alone. The driver starts runs with them, and `strategy create --dry-run --show-commands` prints
 * them, so that what is shown is what runs.
 */
import type { OperationRequest } from '../driver.js';
import type { StateSpec } from './config.js';
import { LABEL_PREFIX, render, SUBCLOUD_FIELDS, TYPE_OPTION_KEYS } from './placeholders.js';
import { labelEnvName } from '../../domain/inventory.js';

/** The parts of a request a run's argv and environment are made of. */
export type RunRequest = Pick<OperationRequest, 'cloud' | 'state' | 'type' | 'attempt' | 'stage' | 'extra' | 'subcloud' | 'labels' | 'options' | 'fence' | 'resumed'>;

export interface RunSettings {
  /** Absolute. */
  dbPath: string;
  sysadminPassword?: string;
}

/** Type options that are flags rather than placeholders, exported as DCM_ARG_* too. */
const TYPE_FLAGS: Record<string, string> = {
  for_install: 'for_install',
  for_sw_deploy: 'for_sw_deploy',
  snapshot: 'snapshot',
  rollback: 'rollback',
  delete: 'delete_option',
  cleanup: 'cleanup',
  with_prestage: 'with_prestage',
  kube_upgrade: 'kube_upgrade',
};

/** The type options' placeholders with their request keys, and the DCM_ARG_* and DCM_SUB_* names: made once, not each run. */
const OPTION_KEYS = Object.entries(TYPE_OPTION_KEYS);
const ARG_ENV: readonly (readonly [string, string])[] = Object.entries({ ...TYPE_OPTION_KEYS, ...TYPE_FLAGS }).map(([name, key]) => [`DCM_ARG_${name.toUpperCase()}`, key]);
const SUB_ENV: readonly (readonly [string, string])[] = SUBCLOUD_FIELDS.map((f) => [f, `DCM_SUB_${f.toUpperCase()}`]);

/** The placeholders' values for this run. */
export function runValues(req: RunRequest, settings: RunSettings): Record<string, string> {
  const v: Record<string, string> = {
    cloud: req.cloud,
    state: req.state,
    type: req.type,
    attempt: String(req.attempt),
    stage: String(req.stage ?? ''),
    db: settings.dbPath,
  };
  for (const [name, key] of OPTION_KEYS) {
    const x = req.extra[key];
    v[name] = x === null || x === undefined ? '' : String(x);
  }
  for (const f of SUBCLOUD_FIELDS) v[f] = req.subcloud?.[f] ?? '';
  for (const [k, x] of Object.entries(req.labels ?? {})) v[`${LABEL_PREFIX}${k}`] = x;
  return v;
}

/** A list runs directly; a string through /bin/sh -c, each value single-quoted. */
export function runArgv(spec: StateSpec, values: Record<string, string>): string[] {
  return Array.isArray(spec.run) ? spec.run.map((a) => render(a, values, false)) : ['/bin/sh', '-c', render(spec.run, values, true)];
}

export function runCwd(spec: StateSpec, values: Record<string, string>): string {
  return render(spec.cwd, values, false);
}

/** What a run's environment adds to the launcher's (which is dcm's without DCM_*). */
export function runEnv(
  req: RunRequest,
  spec: StateSpec,
  values: Record<string, string>,
  files: { base: string; runId: string },
  settings: RunSettings,
): Record<string, string> {
  const env: Record<string, string> = {};
  // Inherited by every process of the run, even one that leaves its process group: how dcm
  // finds them all, and how a site can refuse a stale attempt or a displaced orchestrator.
  env.DCM_RUN_ID = files.runId;
  env.DCM_FENCE = req.fence ?? '';
  env.DCM_CLOUD = req.cloud;
  env.DCM_STATE = req.state;
  env.DCM_TYPE = req.type;
  env.DCM_ATTEMPT = String(req.attempt);
  env.DCM_STAGE = values.stage;
  env.DCM_DB = settings.dbPath;
  env.DCM_LOG = `${files.base}.log`;
  env.DCM_NEXT = `${files.base}.next`;
  env.DCM_PROGRESS = `${files.base}.progress`;
  if (req.resumed) env.DCM_RESUMED = '1';
  for (const [name, key] of ARG_ENV) {
    const x = req.extra[key];
    if (x !== null && x !== undefined) env[name] = String(x);
  }
  for (const [k, x] of Object.entries(req.options ?? {})) env[`DCM_OPT_${k.toUpperCase()}`] = String(x);
  // Only the fields that are set: a script can tell "no address" (`${DCM_SUB_OAM_FLOATING_IP:?}`)
  // from an empty one.
  for (const [f, name] of SUB_ENV) {
    const x = req.subcloud?.[f];
    if (x !== null && x !== undefined) env[name] = x;
  }
  for (const [k, x] of Object.entries(req.labels ?? {})) env[labelEnvName(k)] = x;
  if (settings.sysadminPassword) env.DCM_SYSADMIN_PASSWORD = settings.sysadminPassword;
  for (const [k, x] of Object.entries(spec.env)) env[k] = render(x, values, false);
  return env;
}
