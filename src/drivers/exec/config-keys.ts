/**
 * Every key of the exec config, as the reference documents it (docs/reference/exec-config.md is
 * generated from this table by `npm run docs`). The reader (config.ts) keeps its own key lists;
 * test/drivers/exec/config-keys.test.ts holds the two to each other, key for key and default for
 * default, so a key added to the reader without a line here fails there. Pure data: nothing at
 * run time reads it.
 */

/** Where a key goes: the file's top level, or an entry (a state's, `defaults`, `probe`, `audit`). */
export type KeyPlace = 'top' | 'entry';

export interface ConfigKey {
  key: string;
  place: KeyPlace;
  type: string;
  /** As the file would spell it; `—` for a key with no default (required, or absent means none). */
  default: string;
  example: string;
  /** The commit and day the key first appeared (dcm has no releases yet: 0.1.0 throughout). */
  since: string;
  meaning: string;
}

/** The first commit of the exec driver: the keys it came with. */
const FIRST = '1cd38a1 (2026-11-30)';

export const CONFIG_KEYS: readonly ConfigKey[] = [
  {
    key: 'states',
    place: 'top',
    type: 'mapping: state name, or `"*"` for every state not named, to an entry',
    default: '— (required)',
    example: '`"*": [./step.sh, "{state}", "{cloud}"]`',
    since: FIRST,
    meaning: "each state of the strategy's type by its exact name; with `--type custom`, the states themselves, in file order (no `\"*\"`)",
  },
  {
    key: 'defaults',
    place: 'top',
    type: 'mapping of entry keys (all but `run`)',
    default: '`{}`',
    example: '`{timeout: 2h, retries: 1}`',
    since: FIRST,
    meaning: "what every entry that does not set a key takes (an audit takes only its `env`, `cwd` and `kill_grace`)",
  },
  {
    key: 'probe',
    place: 'top',
    type: 'a command, or an entry',
    default: '— (none: `subcloud probe --driver exec` and `create --probe` refuse)',
    example: '`ssh -o ConnectTimeout=5 -o BatchMode=yes {oam_floating_ip} true`',
    since: '0758cac (2026-12-01)',
    meaning: 'exit 0 when the site answers (`dcm subcloud probe`, `strategy create --probe`); its timeout is 30s unless it or `defaults` sets one',
  },
  {
    key: 'defer_exit_codes',
    place: 'top',
    type: 'list of exit codes, 1 to 255',
    default: '`[75]`',
    example: '`[75, 255]`',
    since: '0758cac (2026-12-01)',
    meaning: 'a state that exits with one of these defers its step (tried again after `--defer-delay`) instead of failing it; ssh exits 255 when it cannot connect',
  },
  {
    key: 'fail_exit_codes',
    place: 'top',
    type: 'list of exit codes, 1 to 255',
    default: '`[]`',
    example: '`[77]`',
    since: 'ec300cd (2026-12-07)',
    meaning: 'a state that exits with one of these fails its step at once, its `retries` left unused (a refusal no retry mends: a wrong key, a host key that changed); none may be in `defer_exit_codes` too',
  },
  {
    key: 'defer_on_timeout',
    place: 'top',
    type: 'boolean',
    default: '`false`',
    example: '`true`',
    since: '420d839 (2026-12-01)',
    meaning: 'a state that runs past its `timeout` defers its step as exit 75 does, instead of spending its retries and failing',
  },
  {
    key: 'audit',
    place: 'top',
    type: 'a command, or a mapping of `run`, `timeout`, `kill_grace`, `env`, `cwd`',
    default: '— (none: no audit)',
    example: '`ssh {oam_floating_ip} sudo /usr/local/bin/site-state.sh`',
    since: '60083b6 (2026-12-01)',
    meaning: "prints the site's state as one JSON object; run after each subcloud's last state and by `dcm subcloud audit`; its timeout is 1m unless it sets one",
  },
  {
    key: 'gate_check',
    place: 'top',
    type: 'string, run by `/bin/sh -c`',
    default: '— (none)',
    example: '`./healthy.sh`',
    since: '291e049 (2026-12-01)',
    meaning: "the stage gate's health command (`--stage-gate check`) when `--gate-check` is not given: exit 0 starts the next stage",
  },
  {
    key: 'on_event',
    place: 'top',
    type: 'a command: a list (run directly) or a string (`/bin/sh -c`)',
    default: '— (none)',
    example: '`[./page-oncall.sh]`',
    since: '9dbd2c1 (2026-12-04)',
    meaning: 'told of a stage held, the strategy failed or complete, a worker taken over: the event as one line of JSON on stdin, `DCM_EVENT` its notice',
  },
  {
    key: 'metrics_textfile',
    place: 'top',
    type: 'path',
    default: '— (none)',
    example: '`/var/lib/node_exporter/textfile/dcm.prom`',
    since: '2204757 (2026-12-07)',
    meaning: 'a Prometheus text file `strategy apply` keeps up to date, as `--metrics-textfile` does (docs/guide/rate-plan-metrics-traces.md)',
  },
  {
    key: 'run',
    place: 'entry',
    type: 'a list (run directly, no shell) or a string (`/bin/sh -c`, each value single-quoted)',
    default: '— (required)',
    example: '`[./vim.sh, "{state}", "{cloud}"]`',
    since: FIRST,
    meaning: 'the command; an entry that is only a command (`pre check: [./pre.sh]`) is `{run: …}`',
  },
  {
    key: 'timeout',
    place: 'entry',
    type: 'duration with its unit, or `none` (since 6af33c1, 2026-12-06)',
    default: '`1h` (a probe `30s`, an audit `1m`)',
    example: '`2h`',
    since: FIRST,
    meaning: "per run: then SIGTERM to the run's processes, SIGKILL after `kill_grace`; `none`: no timeout (on several hosts, held as unknown when its host is lost)",
  },
  {
    key: 'retries',
    place: 'entry',
    type: 'whole number, 0 to 100',
    default: '`0`',
    example: '`2`',
    since: FIRST,
    meaning: 'further runs after a failure or a timeout, each a new attempt with its own history row',
  },
  {
    key: 'backoff',
    place: 'entry',
    type: 'duration range `MIN[..MAX]`',
    default: '`5s..5m`',
    example: '`30s..10m`',
    since: FIRST,
    meaning: 'the wait before a retry: MIN, then doubling, at most MAX',
  },
  {
    key: 'kill_grace',
    place: 'entry',
    type: 'duration',
    default: '`10s`',
    example: '`30s`',
    since: FIRST,
    meaning: 'after a timeout (or a second Ctrl-C), the time between SIGTERM and SIGKILL',
  },
  {
    key: 'env',
    place: 'entry',
    type: 'mapping `NAME: value` (placeholders allowed)',
    default: '`{}`',
    example: '`{SITE_USER: admin}`',
    since: FIRST,
    meaning: "added to the run's environment; a state's own `env` adds to the defaults'",
  },
  {
    key: 'cwd',
    place: 'entry',
    type: 'path (placeholders allowed)',
    default: "`.` (the config file's folder)",
    example: '`sites/{cloud}`',
    since: FIRST,
    meaning: "the run's working folder, relative to the config file's folder",
  },
  {
    key: 'reason',
    place: 'entry',
    type: "JavaScript regular expression (`^` and `$` match at each line)",
    default: "— (the last line of the run's stderr, else of its stdout)",
    example: "`'^error: (.*)'`",
    since: 'f5578ac (2026-12-01)',
    meaning: "a failed run's details: the pattern's last match in its output (its first group that took part, if it has groups); not for an audit",
  },
  {
    key: 'on_lost_host',
    place: 'entry',
    type: '`hold` or `rerun`',
    default: '`hold`',
    example: '`rerun`',
    since: 'b2c6956 (2026-12-07)',
    meaning: "several hosts: a run whose host has not said how it ended within its timeout and grace is held as of unknown outcome (`hold`), or run again, at least once, with a new `DCM_FENCE` the site must check (`rerun`; needs a timeout)",
  },
];
