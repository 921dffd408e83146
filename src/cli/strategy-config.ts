/** Commander wiring of `dcm strategy-config …` (dcmanager's sw-update-options). */
import { Option, type Command } from './commander.js';
import {
  ALARM_RESTRICTION_TYPES,
  INSTANCE_ACTIONS,
  STORAGE_APPLY_TYPES,
  WORKER_APPLY_TYPES,
  type ConfigOptions,
} from '../domain/strategy-config.js';
import { integer } from './parsers.js';
import { OLD_CONFIG_NAME } from './examples.js';
import type { Runner } from './runner.js';
import { YES_HELP } from './confirm.js';

/** The command module (and SQLite with it) loads only when a command runs, not for --help. */
const commands = () => import('../commands/strategy-config.js');

interface RawConfigOpts {
  storageApplyType: ConfigOptions['storage_apply_type'];
  workerApplyType: ConfigOptions['worker_apply_type'];
  maxParallelWorkers: number;
  alarmRestrictionType: ConfigOptions['alarm_restriction_type'];
  defaultInstanceAction: ConfigOptions['default_instance_action'];
}

const CLOUD_HELP = 'subcloud name or id; omit (or RegionOne) for the default options';

export function registerStrategyConfig(program: Command, run: Runner): void {
  configCommands(program.command('strategy-config').description('update options per subcloud, or their defaults (sw-update-options)'), run);
  configCommands(program.command(OLD_CONFIG_NAME).description('strategy-config under its old name, for old scripts'), run);
}

function configCommands(c: Command, run: Runner): void {
  c.command('update')
    .argument('[cloud]', CLOUD_HELP)
    .description('set the options of a subcloud, or the defaults (all five are required, as in dcmanager)')
    .addOption(new Option('--storage-apply-type <type>', 'storage node apply type').choices(STORAGE_APPLY_TYPES).makeOptionMandatory())
    .addOption(new Option('--worker-apply-type <type>', 'worker node apply type').choices(WORKER_APPLY_TYPES).makeOptionMandatory())
    .addOption(new Option('--max-parallel-workers <n>', 'worker nodes updated at once').argParser(integer).makeOptionMandatory())
    .addOption(
      new Option('--alarm-restriction-type <type>', 'whether alarms on the subcloud stop an update')
        .choices(ALARM_RESTRICTION_TYPES)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--default-instance-action <action>', 'how instances are handled').choices(INSTANCE_ACTIONS).makeOptionMandatory(),
    )
    .action((cloud: string | undefined, o: RawConfigOpts) =>
      run(async (ctx) =>
        await (await commands()).configUpdate(ctx, cloud, {
          storage_apply_type: o.storageApplyType,
          worker_apply_type: o.workerApplyType,
          max_parallel_workers: o.maxParallelWorkers,
          alarm_restriction_type: o.alarmRestrictionType,
          default_instance_action: o.defaultInstanceAction,
        }),
      ),
    );
  c.command('list')
    .description('the default options, then every subcloud with options of its own')
    .action(() => run(async (ctx) => await (await commands()).configListAll(ctx)));
  c.command('show')
    .argument('[cloud]', CLOUD_HELP)
    .description("show a subcloud's own options, or the defaults")
    .action((cloud: string | undefined) => run(async (ctx) => await (await commands()).configShowOne(ctx, cloud)));
  c.command('delete')
    .argument('<cloud>', 'subcloud name or id (RegionOne: put the built-in defaults back)')
    .option('--yes', YES_HELP)
    .description("delete a subcloud's own options: it uses the defaults again")
    .action((cloud: string, o: { yes?: boolean }) =>
      run(async (ctx) => {
        await ctx.confirm(o.yes);
        await (await commands()).configDelete(ctx, cloud);
        return {};
      }),
    );
}
