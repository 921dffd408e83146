/** Commander wiring of `dcm subcloud-group …` (dcmanager's underscore spellings, dashed ones too). */
import { Option, type Command } from './commander.js';
import type { GroupInput } from '../commands/groups.js';
import { groupMaxParallel } from './parsers.js';
import type { Runner } from './runner.js';
import { YES_HELP } from './confirm.js';

/** The command module (and SQLite with it) loads only when a command runs, not for --help. */
const commands = () => import('../commands/groups.js');

interface RawGroupOpts {
  name?: string;
  description?: string;
  update_apply_type?: string;
  updateApplyType?: string;
  max_parallel_subclouds?: number;
  maxParallelSubclouds?: number;
  stageMaxFailures?: string;
  stageGate?: string;
  maintenanceWindow?: string;
  maintenanceTz?: string;
  reason?: string;
  startRate?: string;
  ramp?: string;
  rampAfter?: string;
}

function groupOptions(cmd: Command): Command {
  return cmd
    .option('--description <text>', 'description')
    // Taken as typed, as the client passes it on: the server refuses what is not parallel or serial (exit 1).
    .option('--update_apply_type <type>', 'parallel | serial')
    .addOption(new Option('--update-apply-type <type>').hideHelp())
    .option('--max_parallel_subclouds <n>', 'subclouds of this group in flight at once (1..5000)', groupMaxParallel)
    .addOption(new Option('--max-parallel-subclouds <n>').argParser(groupMaxParallel).hideHelp())
    // dcm's own (README "Stage gates"): the defaults of the stages this group makes.
    .option('--stage-max-failures <N|P%>', "the default failure budget of this group's stage: more failed steps than this and it starts no more, the strategy pauses")
    .option('--stage-gate <gate>', 'the default gate before the next stage: none | pause | soak=DURATION | check')
    // dcm's own (dcmanager has no such option): the group's subclouds start only inside it. Checked
    // by the command module (domain/maintenance.ts is not loaded for --help).
    .option(
      '--maintenance-window <spans>',
      'start this group\'s subclouds only inside: "Sat 22:00-Sun 06:00", "22:00-06:00", several comma-separated, or none',
    )
    .option('--maintenance-tz <zone>', 'IANA time zone of the maintenance window (default: UTC)')
    // dcm's own: the default start rate of the stages this group makes (strategy create --start-rate wins).
    .option('--start-rate <N/min|none>', "the default start rate of this group's stage: at most N subclouds start a minute (none removes it)")
    .option('--ramp <factor>', 'with --start-rate and --ramp-after: multiply the rate by FACTOR after each K complete subclouds')
    .option('--ramp-after <k>', 'with --ramp: the complete subclouds per ramp step');
}

function input(o: RawGroupOpts): GroupInput {
  return {
    name: o.name,
    description: o.description,
    updateApplyType: o.update_apply_type ?? o.updateApplyType,
    maxParallelSubclouds: o.max_parallel_subclouds ?? o.maxParallelSubclouds,
    stageMaxFailures: o.stageMaxFailures,
    stageGate: o.stageGate,
    maintenanceWindow: o.maintenanceWindow,
    maintenanceTz: o.maintenanceTz,
    reason: o.reason,
    startRate: o.startRate,
    ramp: o.ramp,
    rampAfter: o.rampAfter,
  };
}

export function registerGroup(program: Command, run: Runner): void {
  const g = program.command('subcloud-group').description('manage subcloud groups');
  groupOptions(g.command('add').requiredOption('--name <name>', 'group name').description('add a group')).action(
    (o: RawGroupOpts) => run(async (ctx) => await (await commands()).groupAdd(ctx, { ...input(o), name: o.name! })),
  );
  g.command('list')
    .description('list groups')
    .action(() => run(async (ctx) => await (await commands()).groupList_(ctx)));
  g.command('show')
    .argument('<group>', 'name or id')
    .description('show a group')
    .action((ref: string) => run(async (ctx) => await (await commands()).groupShow_(ctx, ref)));
  groupOptions(g.command('update').argument('<group>', 'name or id').option('--name <name>', 'new name'))
    .option('--reason <text>', "why, in words: kept in the strategy's event record while a strategy exists")
    .description('change a group')
    .action((ref: string, o: RawGroupOpts) => run(async (ctx) => await (await commands()).groupUpdateWarned(ctx, ref, input(o))));
  g.command('delete')
    .argument('<group>', 'name or id')
    .option('--yes', YES_HELP)
    .description('delete an empty group (never Default)')
    .action((ref: string, o: { yes?: boolean }) =>
      run(async (ctx) => {
        await ctx.confirm(o.yes);
        return await (await commands()).groupDelete(ctx, ref);
      }),
    );
  g.command('list-subclouds')
    .argument('<group>', 'name or id')
    .description('list the subclouds of a group')
    .action((ref: string) => run(async (ctx) => await (await commands()).groupListSubclouds(ctx, ref)));
}
