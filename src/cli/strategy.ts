/** Commander wiring of `dcm strategy …` and the per-type aliases (`dcm patch-strategy …`). */
import { Option, type Command } from './commander.js';

/** The command modules (SQLite, the orchestrator) load only when a command runs, not for --help. */
const commands = () => import('../commands/strategy.js');
const applyCommand = () => import('../commands/apply.js');
const abortCommand = () => import('../commands/abort.js');
import { deprecationNotices, typeOptionFlags, type RawDriverOptions, type RawTypeOptions } from '../domain/options.js';
import { STRATEGY_TYPES, TYPES, type ApplyType, type StrategyType } from '../domain/types.js';
import { applyType, collect, integer, lease, maxFailures, positiveInteger, progressInterval, strategyType } from './parsers.js';
import { DRIVER_NAMES, driverOptions } from '../drivers/index.js';
import type { Runner } from './runner.js';
import { YES_HELP } from './confirm.js';
import { parseLabelSelector } from '../domain/inventory.js';

interface CreateOpts extends RawTypeOptions, RawDriverOptions {
  type?: StrategyType;
  group?: string;
  subcloudApplyType?: ApplyType;
  maxParallelSubclouds?: number;
  stopOnFailure?: boolean;
  maxFailures?: string;
  force?: boolean;
  targetVersion?: string;
  dryRun?: boolean;
  showCommands?: string | true;
  sysadminPasswordFile?: string;
  label?: string[];
  requireAudit?: boolean;
  auditDisagreesOk?: boolean;
  stageMaxFailures?: string;
  stageGate?: string;
  gateCheck?: string;
  probe?: boolean;
  skipUnreachable?: boolean;
  deferDelay?: string;
  deferUntil?: string;
  onEvent?: string;
  startRate?: string;
  ramp?: string;
  rampAfter?: string;
  plan?: string;
}

/** The stage gate options (README "Stage gates"), the same at create and update. */
const STAGE_GATE_OPTIONS: [string, string][] = [
  ['--stage-max-failures <N|P%>', "each stage's own failure budget: once more than N of its steps (or P % of them) have failed, it starts no more and the strategy pauses (default: the group's, else none)"],
  ['--stage-gate <gate>', "before the next stage starts: none | pause | soak=DURATION | check (default: the group's, else none)"],
  ['--gate-check <cmd>', "the check gate's command (sh -c; DCM_STAGE, DCM_STAGE_CLOUDS): exit 0 starts the next stage, else the strategy pauses (default: the exec config's gate_check)"],
];

/** The start rate (README "Start rate"; docs/guide/rate-plan-metrics-traces.md), the same at create and update. */
const START_RATE_OPTIONS: [string, string][] = [
  ['--start-rate <N/min>', 'at most N subclouds start their first state a minute, spaced evenly (60/N s apart; also N/s, N/h); a brake on top of the window, held across every worker (default: the group\'s, else none)'],
  ['--ramp <factor>', 'with --start-rate and --ramp-after: multiply the rate by FACTOR (1 to 100) after each K complete subclouds of the strategy'],
  ['--ramp-after <k>', 'with --ramp: the complete subclouds per ramp step'],
];

const TYPE_OPTIONS: [string, string][] = [
  ['--patch-id <id>', 'patch: the patch to apply'],
  ['--upload-only', "patch: stop after uploading the patch (the old client's option; shown as 'upload only')"],
  ['--remove', "patch: remove the patch (the old client's option)"],
  ['--to-version <version>', 'kubernetes: target version'],
  ['--subject <subject>', 'kube-rootca-update: certificate subject'],
  ['--expiry-date <date>', 'kube-rootca-update: certificate expiry date'],
  ['--cert-file <file>', 'kube-rootca-update: certificate file (excludes --subject, --expiry-date)'],
  ['--release <YY.MM[.nn]>', 'prestage: software release'],
  ['--for-install', 'prestage: prestage for install (default)'],
  ['--for-sw-deploy', 'prestage: prestage for software deploy'],
  ['--release-id <id>', 'sw-deploy: release to deploy'],
  ['--snapshot', 'sw-deploy: take a snapshot'],
  ['--rollback', 'sw-deploy: roll back'],
  ['--delete', 'sw-deploy: delete the release after deploy'],
  ['--cleanup', 'sw-deploy: clean up'],
  ['--with-prestage', 'sw-deploy: prestage first'],
  ['--kube-upgrade <version>', 'sw-deploy: also upgrade kubernetes to this version'],
  ['--with-delete', 'sw-deploy: deprecated, the same as --delete'],
  ['--delete-only', 'sw-deploy: deprecated, the same as --cleanup'],
  ['--sysadmin-password [password]', "prestage, sw-deploy with --with-prestage: the subclouds' sysadmin password (stored, never printed; without a value: asked on the terminal)"],
  ['--sysadmin-password-file <file>', 'the sysadmin password from a file (else $DCM_SYSADMIN_PASSWORD, else asked on a terminal)'],
];


const STRATEGY_ID: [string, string] = ['--strategy <id>', 'a deleted strategy, by the id strategy list shows (or its created_at)'];
const REASON: [string, string] = ['--reason <text>', 'why, in words: kept in the event record, shown by strategy status and the report'];

function registerVerbs(parent: Command, run: Runner, fixed?: StrategyType): void {
  const withType = (cmd: Command, required: boolean): Command => {
    if (fixed) return cmd;
    const opt = new Option('--type <type>', `strategy type: ${STRATEGY_TYPES.join(', ')} (their states and options: dcm strategy types)`).argParser(strategyType);
    if (required) opt.makeOptionMandatory();
    return cmd.addOption(opt);
  };
  const typeOf = (o: { type?: StrategyType }) => fixed ?? o.type;

  // dcm's `strategy create` takes several clouds; an alias is dcmanager's command, whose client takes
  // one (argparse refuses a second, exit 2), and for patch the old client's positional patch id.
  const createCmd = parent.command('create');
  if (!fixed) createCmd.argument('[cloud_name...]', 'only these subclouds (one stage, in the order given)');
  else createCmd.argument('[cloud_name]', 'only this subcloud');
  if (fixed === 'patch') createCmd.argument('[patch_id]', "the patch (the old client's positional; a lone word that names no subcloud is one too)");
  const create = withType(createCmd, true)
    .description('create the strategy and its steps')
    .option('--group <group>', 'only this subcloud group')
    .option('--label <key=value>', 'only subclouds with this label (key= for those without it; repeatable, all must hold)', collect)
    .option('--subcloud-apply-type <type>', 'parallel | serial', applyType)
    .addOption(new Option('--max-parallel-subclouds <n>', 'subclouds in flight at once').argParser(integer))
    .option('--stop-on-failure', 'start no new subcloud after a failure (--max-failures 1)')
    .option('--max-failures <N|P%>', 'start no new subcloud once N steps (or P % of the steps) have failed', maxFailures)
    .option('--force', 'include in-sync subclouds (kubernetes, kube-rootca-update)')
    .option('--target-version <version>', "patch, sw-deploy: plan by target, not by the last sync: every managed, online subcloud whose software_version is not this one")
    .option('--require-audit', "fail a step whose site's audit (after its last state) disagrees or fails, instead of completing it with a warning")
    .option('--audit-disagrees-ok', 'a strategy complete whose audits disagreed exits 0, not 5 (it is still said: summary, status, report, event)');
  for (const [flags, help] of STAGE_GATE_OPTIONS) create.option(flags, help);
  for (const [flags, help] of START_RATE_OPTIONS) create.option(flags, help);
  for (const [flags, help] of TYPE_OPTIONS) {
    const name = flags.split(' ')[0];
    // The password's file goes wherever the password does.
    const flag = name === '--sysadmin-password-file' ? '--sysadmin-password' : name;
    if (!fixed || typeOptionFlags(fixed).includes(flag)) create.option(flags, help);
  }
  create.option('--driver <name>', `who performs each state: ${DRIVER_NAMES.join(' | ')} (default sim)`);
  for (const o of driverOptions()) {
    if (o.repeatable) create.option(o.flags, o.help, collect);
    else create.option(o.flags, o.help);
  }
  create
    .option('--state-timeout <duration>', "fail a state operation that takes longer (default per type; exec: the config's timeout)")
    .option('--probe', 'probe the chosen subclouds first (subcloud probe); refuse if one does not answer')
    .option('--skip-unreachable', 'with --probe: leave out the subclouds that do not answer (recorded offline), listed on stderr')
    .option('--defer-delay <duration>', 'a subcloud whose state exits 75 (does not answer) is deferred and tried again after this (default 60s)')
    .option('--defer-until <duration|time>', "deferred subclouds fail unreachable after this: a duration from the apply's start, or an ISO time (default: once the rest of their stage is done)")
    .option('--on-event <cmd>', 'sim driver: told of a stage held, the strategy failed or complete, a worker taken over (the event as JSON on stdin; sh -c); the exec config has on_event')
    .option('--dry-run', 'every check, then the plan (stages, windows, steps, estimated duration) and its digest on stderr; nothing written')
    .option('--plan <digest>', 'create only the plan a --dry-run printed this digest for: refused, naming what changed (a subcloud, a stage, an option), when the plan differs')
    .option('--show-commands [cloud]', "with --dry-run and --driver exec: instead of the plan, each state's argv, cwd and environment for this subcloud (default: the plan's first); the sysadmin password masked")
    .action((...args: unknown[]) =>
      run(async (ctx) => {
        // The positionals, then the options and the command (commander's order).
        const o = args[args.length - 2] as CreateOpts;
        const positionals = args.slice(0, -2);
        const clouds = (fixed ? positionals.slice(0, 1) : positionals).flat().filter((x): x is string => typeof x === 'string');
        const patchIdArg = fixed === 'patch' ? (positionals[1] as string | undefined) : undefined;
        const password = await (await import('./sysadmin-password.js')).sysadminPassword(
          { type: typeOf(o)!, option: o.sysadminPassword, file: o.sysadminPasswordFile, withPrestage: o.withPrestage, dryRun: o.dryRun },
          ctx.secretIo ?? { stdin: process.stdin, stderr: process.stderr },
        );
        // dcmanager's client prints the deprecation notice on stdout, before the record, and goes on.
        const notice = deprecationNotices(o);
        const warnings: string[] = [];
        const result = await (await commands()).strategyCreate(ctx, {
          type: typeOf(o)!,
          cloudNames: clouds,
          positionalPatchId: patchIdArg,
          loneWordMayBePatchId: fixed === 'patch',
          groupName: o.group,
          labels: o.label?.length ? parseLabelSelector(o.label) : undefined,
          subcloudApplyType: o.subcloudApplyType,
          // dcmanager's client sends the option only when it is truthy: 0 means not given.
          maxParallelSubclouds: o.maxParallelSubclouds === 0 ? undefined : o.maxParallelSubclouds,
          stopOnFailure: o.stopOnFailure,
          maxFailures: o.maxFailures,
          force: o.force,
          targetVersion: o.targetVersion,
          requireAudit: o.requireAudit,
          auditDisagreesOk: o.auditDisagreesOk,
          typeOptions: { ...o, sysadminPassword: password as string | undefined },
          driverOptions: o,
          dryRun: o.dryRun,
          showCommands: o.showCommands,
          stageMaxFailures: o.stageMaxFailures,
          stageGate: o.stageGate,
          gateCheck: o.gateCheck,
          probe: o.probe,
          skipUnreachable: o.skipUnreachable,
          deferDelay: o.deferDelay,
          deferUntil: o.deferUntil,
          onEvent: o.onEvent,
          startRate: o.startRate,
          ramp: o.ramp,
          rampAfter: o.rampAfter,
          plan: o.plan,
          warn: (text: string) => warnings.push(text),
        });
        return notice ? { text: notice, warnings, result } : { warnings, result };
      }),
    );

  withType(parent.command('show'), false)
    .description('show the strategy')
    .action((o: { type?: StrategyType }) => run(async (ctx) => await (await commands()).strategyShow_(ctx, typeOf(o))));
  withType(parent.command('list'), false)
    .description('the strategies the file holds: those deleted (kept until db prune) and the current one; id, type, state, counts, when')
    .action((o: { type?: StrategyType }) => run(async (ctx) => await (await import('../commands/archive.js')).strategyList(ctx, typeOf(o))));
  withType(parent.command('apply'), false)
    .description('run the strategy in the foreground until it ends (exit 0 complete, 1 failed, 3 aborted, 5 complete but an audit disagreed)')
    .option('--yes', YES_HELP)
    .option('-v, --verbose', 'one progress line per step transition')
    .option('--progress-interval <duration>', 'off a terminal, a summary line this often (default 10s; 0s: none)', progressInterval)
    .option('--max-local <n>', 'PostgreSQL store: at most N subclouds in flight in this worker (the stage window counts all workers)', positiveInteger)
    .option('--lease <duration>', "PostgreSQL store: how long this worker may go unheard before the others take its subclouds over (default 30s)", lease)
    .option('--metrics-textfile <path>', "keep a Prometheus text file of the rollout up to date (node_exporter's textfile collector: name it *.prom in its folder), written whole at the start, every --metrics-interval and at the end (default: the exec config's metrics_textfile)")
    .option('--metrics-interval <duration>', 'how often the metrics file is written (default 5s, at least 100ms)')
    .action((o: { type?: StrategyType; yes?: boolean; verbose?: boolean; progressInterval?: number; maxLocal?: number; lease?: number; metricsTextfile?: string; metricsInterval?: string }) =>
      run(async (ctx) => {
        await ctx.confirm(o.yes);
        return await (await applyCommand()).strategyApply(ctx, typeOf(o), {
          verbose: o.verbose,
          progressIntervalMs: o.progressInterval,
          maxLocal: o.maxLocal,
          leaseMs: o.lease,
          metricsTextfile: o.metricsTextfile,
          metricsInterval: o.metricsInterval,
        });
      }),
    );
  withType(parent.command('status'), false)
    .summary('where the strategy stands: stage, window, steps per state, in flight, failures, elapsed, ETA, orchestrator')
    .description(
      'where the strategy stands: stage, window, steps per state, in flight, failures, elapsed, ETA, orchestrator\n\n' +
        // The two counts the issue found unexplained: one counts steps, the other operations.
        '"in progress" counts steps started and not ended; "in flight" counts operations running now. ' +
        'They differ while a step waits out a retry\'s backoff, or was left mid-state by an apply that ' +
        'stopped (the next apply runs it again). "elapsed" counts from started_at, the first step\'s ' +
        'start, across resumes; while paused, "eta" is the time the rest takes once resumed.',
    )
    .option('-w, --watch', 'redraw on change until the strategy ends, then exit as apply would')
    .action((o: { type?: StrategyType; watch?: boolean }) =>
      run(async (ctx) => {
        const status = await import('../commands/status.js');
        if (o.watch) return { watch: await status.watchStatus(ctx, typeOf(o)) };
        return await status.strategyStatus(ctx, typeOf(o));
      }),
    );
  withType(parent.command('report'), false)
    .description('write the strategy as one HTML page: summary, timeline per stage, failures, durations per state')
    .requiredOption('--html <file>', 'the HTML file to write (- for standard output)')
    .option(...STRATEGY_ID)
    .action((o: { type?: StrategyType; html: string; strategy?: string }) =>
      run(async (ctx) =>
        await (await import('../commands/report.js')).strategyReport(ctx, typeOf(o), o.html, (await import('./output/report-html.js')).renderHtmlReport, o.strategy),
      ),
    );
  withType(parent.command('events'), false)
    .description('the event record: apply start and end, pause, resume, update, abort, retry, lock takeover, runs adopted; when and who')
    .option(...STRATEGY_ID)
    .action((o: { type?: StrategyType; strategy?: string }) => run(async (ctx) => await (await import('../commands/events.js')).strategyEvents(ctx, typeOf(o), o.strategy)));
  withType(parent.command('abort'), false)
    .description('abort the strategy being applied: start nothing new, let the runs in flight end (--now: stop them)')
    .option('--now', 'stop the runs in flight as a second Ctrl-C does (SIGTERM, SIGKILL after their kill grace); their steps end aborted, with the reason')
    .option(...REASON)
    .action((o: { type?: StrategyType; reason?: string; now?: boolean }) =>
      run(async (ctx) => await (await abortCommand()).strategyAbort(ctx, typeOf(o), o.reason, { now: o.now })));
  const control = () => import('../commands/control.js');
  withType(parent.command('pause'), false)
    .description('applying -> paused: start no new subcloud; those in flight run to their end')
    .option(...REASON)
    .action((o: { type?: StrategyType; reason?: string }) => run(async (ctx) => await (await control()).strategyPause(ctx, typeOf(o), o.reason)));
  withType(parent.command('resume'), false)
    .description('paused -> applying: the orchestrator goes on')
    .option(...REASON)
    .action((o: { type?: StrategyType; reason?: string }) => run(async (ctx) => await (await control()).strategyResume(ctx, typeOf(o), o.reason)));
  const update = withType(parent.command('update'), false)
    .description('change the window (of every stage, or of stage K), the start rate, the failure budget or the stage gates; a running apply follows within 1 s')
    .addOption(new Option('--max-parallel-subclouds <n>', 'subclouds in flight at once').argParser(integer))
    .addOption(new Option('--stage <k>', 'only this stage\'s window or gate (refused for a stage that has ended)').argParser(integer))
    .option('--max-failures <N|P%>', 'start no new subcloud once N steps (or P % of the steps) have failed', maxFailures);
  for (const [flags, help] of STAGE_GATE_OPTIONS) update.option(flags, help);
  update
    .option('--start-rate <N/min|none>', 'at most N first starts a minute (of every stage not ended, or of stage K); none removes the rate; the next start waits the new spacing from the last one')
    .option('--ramp <factor>', START_RATE_OPTIONS[1][1])
    .option('--ramp-after <k>', START_RATE_OPTIONS[2][1]);
  update.option(...REASON);
  update.action(
    (o: {
      type?: StrategyType;
      maxParallelSubclouds?: number;
      stage?: number;
      maxFailures?: string;
      stageMaxFailures?: string;
      stageGate?: string;
      gateCheck?: string;
      reason?: string;
      startRate?: string;
      ramp?: string;
      rampAfter?: string;
    }) =>
      run(async (ctx) =>
        await (await control()).strategyUpdate(ctx, typeOf(o), {
          maxParallelSubclouds: o.maxParallelSubclouds,
          stage: o.stage,
          maxFailures: o.maxFailures,
          stageMaxFailures: o.stageMaxFailures,
          stageGate: o.stageGate,
          gateCheck: o.gateCheck,
          reason: o.reason,
          startRate: o.startRate,
          ramp: o.ramp,
          rampAfter: o.rampAfter,
        }),
      ),
  );
  withType(parent.command('retry').argument('[cloud...]', 'only these subclouds'), false)
    .description('failed steps back to the state they failed in, aborted ones to initial; then apply')
    .option('--failed', 'only failed steps')
    .option('--aborted', 'only aborted steps')
    .option('--wait', 'wait while a run of the strategy still goes (after a kill of apply) instead of refusing')
    .option(...REASON)
    .action((clouds: string[], o: { type?: StrategyType; failed?: boolean; aborted?: boolean; wait?: boolean; reason?: string }) =>
      run(async (ctx) => await (await control()).strategyRetry(ctx, typeOf(o), { clouds, failed: o.failed, aborted: o.aborted, wait: o.wait, reason: o.reason })),
    );
  withType(parent.command('delete'), false)
    .description('delete the strategy; its record (steps, history, events, options) is kept: strategy list, report and events --strategy ID')
    .option('--yes', YES_HELP)
    .option('--wait', 'wait while a run of the strategy still goes (after a kill of apply) instead of refusing')
    .option(...REASON)
    .action((o: { type?: StrategyType; yes?: boolean; wait?: boolean; reason?: string }) =>
      run(async (ctx) => {
        await ctx.confirm(o.yes);
        return await (await commands()).strategyDelete(ctx, typeOf(o), { wait: o.wait, reason: o.reason });
      }),
    );
}

export function registerStrategy(program: Command, run: Runner): void {
  const strategy = program.command('strategy').description('create, show, apply, pause, resume, update, retry, abort, delete the strategy; the types');
  registerVerbs(strategy, run);
  // Of no strategy in particular: the aliases, each one type, do not take it.
  strategy
    .command('types')
    .argument('[type]', `only this type: ${STRATEGY_TYPES.join(', ')}`, strategyType)
    .description('each strategy type: its alias, sync endpoint, states in order, options and required options')
    .action((type: StrategyType | undefined) => run(async () => (await import('../commands/types.js')).strategyTypes(type)));
  for (const t of STRATEGY_TYPES) {
    registerVerbs(program.command(TYPES[t].alias).description(`the ${t} strategy (strategy --type ${t})`), run, t);
  }
}
