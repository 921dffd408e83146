/**
 * The exit codes and the environment variables, as data: the reference pages' tables and the man
 * page's EXIT STATUS and ENVIRONMENT are generated from them (`npm run docs`), and
 * test/docs/reference.test.ts holds them to the code (every code of EXIT, every DCM_ name src/
 * uses).
 */
import { EXIT } from '../../domain/errors.js';

export interface ExitCode {
  code: string;
  name: keyof typeof EXIT | 'sigint/sigterm';
  meaning: string;
}

export const EXIT_CODES: readonly ExitCode[] = [
  { code: '0', name: 'ok', meaning: 'success; `apply` (and `strategy status --watch`): the strategy completed' },
  {
    code: '1',
    name: 'failed',
    meaning:
      "the operation failed: not found, wrong state, a bad or busy file, a site that did not answer a probe or an audit, or the applied strategy failed; and the checks dcmanager's client makes itself (options that exclude each other, sw-deploy's missing `--release-id`, an unknown `-c` column), which exit 1 there",
  },
  { code: '2', name: 'usage', meaning: "usage: an unknown command or option, a bad option value, a positional too many, dcm's own options that exclude each other" },
  { code: '3', name: 'aborted', meaning: '`apply` (and `status --watch`): the strategy was aborted' },
  {
    code: '4',
    name: 'locked',
    meaning:
      '`apply`: another orchestrator holds the file (the message names its pid, host and start time), or this one lost the lock (`lost the apply lock to pid P on host H`) or, on PostgreSQL, its lease',
  },
  {
    code: '5',
    name: 'auditDisagrees',
    meaning:
      '`apply` (and `status --watch`): the strategy completed, but the audit after the last state of some site disagreed or did not answer (each step completed with the warning); `--audit-disagrees-ok` at create makes that exit 0, `--require-audit` fails those steps instead',
  },
  {
    code: '130 / 143',
    name: 'sigint/sigterm',
    meaning:
      'interrupted by SIGINT / SIGTERM: `apply` (the strategy stays `applying`; `dcm strategy apply` resumes it), `subcloud audit` (what answered is written), `strategy-step logs --follow`',
  },
];

export type EnvGroup = 'dcm' | 'run' | 'gate' | 'event' | 'test';

export interface EnvVar {
  name: string;
  group: EnvGroup;
  meaning: string;
}

export const ENV_GROUPS: Record<EnvGroup, string> = {
  dcm: 'What dcm reads',
  run: "What an exec run gets (besides dcm's own environment, without dcm's DCM_ settings, and the config's `env`)",
  gate: 'What a stage gate check gets (with apply\'s environment)',
  event: "What an `on_event` command gets (the event's JSON on stdin)",
  test: 'Test hooks (refused unless `DCM_TEST_HOOKS=1` is set too: a stray export never touches a real rollout)',
};

export const ENVIRONMENT: readonly EnvVar[] = [
  { name: 'DCM_DB', group: 'dcm', meaning: 'the database when `--db` is not given: a file path, or a `postgresql://` address; else `./dcm.db`. An empty value is a usage error' },
  { name: 'DCM_HOST', group: 'dcm', meaning: "this machine's name for the apply lock, the workers and the event record (containers often share a host name); else the host name" },
  { name: 'DCM_SYSADMIN_PASSWORD', group: 'dcm', meaning: "the sysadmin password of prestage (and sw-deploy `--with-prestage`) when neither `--sysadmin-password` nor `--sysadmin-password-file` is given" },
  { name: 'DCM_SYSTEM_CONTROLLER_RELEASE', group: 'dcm', meaning: "the system controller's release (`MM.mm`) that `subcloud prestage` and a prestage strategy name when `--release` is not given; else the newest release in the inventory" },
  { name: 'DCM_DRAIN_MS', group: 'dcm', meaning: 'how long the first Ctrl-C (or SIGTERM) of `apply` waits for the operations in flight, in milliseconds (default 60000)' },
  { name: 'DCM_RUN_WRAPPER', group: 'dcm', meaning: '`sh`: start exec runs under the sh wrapper instead of the compiled `native/dcm-run`' },
  { name: 'DCM_DEBUG', group: 'dcm', meaning: '`1`: an error line is followed by its stack' },
  { name: 'USER', group: 'dcm', meaning: "who, in the event record and `deleted_by` (else the effective user's name)" },
  { name: 'NO_COLOR', group: 'dcm', meaning: 'set: no live view (`apply` prints one line per subcloud instead); set and not empty: no colour' },
  { name: 'TERM', group: 'dcm', meaning: '`dumb`: no colour and no live view' },
  { name: 'CLI_CONFIRMATIONS', group: 'dcm', meaning: "`enabled` (dcmanager's switch): apply and the deletes ask on a terminal, and are refused off one, unless `--yes`" },
  { name: 'CLIFF_MAX_TERM_WIDTH', group: 'dcm', meaning: 'as `--max-width N`' },
  { name: 'CLIFF_FIT_WIDTH', group: 'dcm', meaning: '`1`: as `--fit-width`' },
  { name: 'PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGOPTIONS, PGPASSFILE, PGSERVICE, PGSERVICEFILE, PGSYSCONFDIR, PGSSLMODE…', group: 'dcm', meaning: "libpq's variables, read by dcm as libpq reads them: what a `postgresql://` address leaves out (node-postgres reads none of its own). `PGPASSWORD` is not passed on to runs; `PGPASSFILE`, `PGSERVICEFILE` and `PGSERVICE` are" },
  { name: 'CC', group: 'dcm', meaning: 'at install: the C compiler of the run wrapper, `native/dcm-run.c` (default `cc`)' },
  { name: 'DCM_CLOUD, DCM_STATE, DCM_TYPE, DCM_STAGE', group: 'run', meaning: 'the subcloud, the state, the strategy type, the stage' },
  { name: 'DCM_ATTEMPT', group: 'run', meaning: '1 for the first run of this state, 2, 3, … for each run after it' },
  { name: 'DCM_RESUMED', group: 'run', meaning: '`1` when the previous run of this state was cut off (dcm killed, a second Ctrl-C, a lost host)' },
  { name: 'DCM_RUN_ID', group: 'run', meaning: 'this run: `<strategy>/<cloud>/<state>/<attempt>`, names URI-encoded; the same after a kill -9 and adoption, never the same for two runs; every process of the run inherits it' },
  { name: 'DCM_FENCE', group: 'run', meaning: "the apply lock's token of the orchestrator that started the run, new for every `apply` (on PostgreSQL `<worker token>.<claims>`): a site can refuse an older one" },
  { name: 'DCM_DB', group: 'run', meaning: 'the database (on a server, its address without the password)' },
  { name: 'DCM_LOG', group: 'run', meaning: "this run's log file" },
  { name: 'DCM_ARG_<NAME>', group: 'run', meaning: 'each type option given (`DCM_ARG_PATCH_ID`, `DCM_ARG_TO_VERSION`, …)' },
  { name: 'DCM_OPT_<NAME>', group: 'run', meaning: "the subcloud's strategy-config options (`DCM_OPT_STORAGE_APPLY_TYPE`, …)" },
  { name: 'DCM_SUB_<FIELD>', group: 'run', meaning: 'each field of the subcloud that is set, named as its placeholder (`DCM_SUB_OAM_FLOATING_IP`, `DCM_SUB_REGION_NAME`, `DCM_SUB_GROUP`, …); a field not set is not in the environment, so `${DCM_SUB_OAM_FLOATING_IP:?}` stops a script that has no address' },
  { name: 'DCM_LABEL_<KEY>', group: 'run', meaning: 'each label of the subcloud (`DCM_LABEL_SSH_PORT`)' },
  { name: 'DCM_SYSADMIN_PASSWORD', group: 'run', meaning: 'when the strategy has a sysadmin password' },
  { name: 'DCM_NEXT', group: 'run', meaning: "a file the run may write to skip forward: a later state's name, or `complete`" },
  { name: 'DCM_PROGRESS', group: 'run', meaning: "a file the run may write to say how far it is: its last line is the step's details while the run goes on" },
  { name: 'DCM_STAGE, DCM_NEXT_STAGE', group: 'gate', meaning: 'the stage that ended, and the one the gate holds' },
  { name: 'DCM_STAGE_CLOUDS', group: 'gate', meaning: "the ended stage's subclouds, space-separated, in step order" },
  { name: 'DCM_STRATEGY_TYPE', group: 'gate', meaning: 'the strategy type' },
  { name: 'DCM_GATE_CHECK', group: 'gate', meaning: "`<strategy's created_at>/<stage>`: the tag by which the next apply finds (and stops) a check a killed apply left running" },
  { name: 'DCM_EVENT', group: 'event', meaning: "the event's notice: `stage held`, `strategy failed`, `strategy complete`, `worker taken over`" },
  { name: 'DCM_TEST_HOOKS', group: 'test', meaning: '`1`: allow the hooks below' },
  { name: 'DCM_TEST_CLOCK', group: 'test', meaning: 'an ISO time: the clock maintenance windows are decided by starts there and runs on at the real pace' },
  { name: 'DCM_CRASH_AFTER_COMMIT', group: 'test', meaning: '`N`: `apply` SIGKILLs itself right after its Nth commit' },
  { name: 'DCM_BUSY_AT_COMMIT', group: 'test', meaning: "`N:S`: the Nth commit finds the store held by another connection for S seconds" },
  { name: 'DCM_STOP_IN_COMMIT, DCM_STOP_AFTER_COMMIT', group: 'test', meaning: '`N`: `apply` SIGSTOPs itself inside, or right after, its Nth commit' },
  { name: 'DCM_COUNTERS', group: 'test', meaning: "a file: the apply's exact cost (commits, statements, reads, /proc passes) is written there" },
  { name: 'DCM_CHECK_TURNS', group: 'test', meaning: '`1` (the suite sets it): a statement through a connection inside its own transaction fails at once instead of waiting for ever' },
  { name: 'DCM_SIM_LIVE', group: 'test', meaning: 'the simulator (`npm run sim`) prints its trace as it goes' },
  { name: 'DCM_SIM_EVENTS', group: 'test', meaning: 'the simulator prints, for each schedule, the events it ran and its virtual time' },
];

/** Every single name an entry documents (`PGHOST, PGPORT` is two; `DCM_ARG_<NAME>` stands for a family). */
export function documentedNames(): Set<string> {
  return new Set(ENVIRONMENT.flatMap((v) => v.name.split(', ').map((n) => n.replace(/<[A-Z]+>$/, ''))));
}
