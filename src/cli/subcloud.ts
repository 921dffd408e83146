/** Commander wiring of `dcm subcloud …`. */
import { Option, type Command } from './commander.js';
import { parseLabelSelector, parseSubcloudFields, quoteName, UNTRACKED_FIELDS, type RawSubcloudFields } from '../domain/inventory.js';
import { collect, integer } from './parsers.js';
import { UsageError } from '../domain/errors.js';
import { DRIVER_NAMES, driverOptions } from '../drivers/index.js';
import type { Runner } from './runner.js';
import { YES_HELP } from './confirm.js';

/** The command module (and SQLite with it) loads only when a command runs, not for --help. */
const commands = () => import('../commands/subclouds.js');
const ops = () => import('../commands/subcloud-ops.js');

function fieldOptions(cmd: Command): Command {
  cmd
    .option('--group <group>', 'subcloud group (name or id)')
    .option('--management <state>', 'managed | unmanaged')
    .option('--availability <state>', 'online | offline')
    .option('--deploy-status <status>', 'deploy status (default complete)')
    .option('--software-version <version>', 'software version')
    .option('--prestage-status <status>', 'prestage status')
    .option('--sync <endpoint=status>', 'endpoint sync status; endpoint may be all (repeatable)', collect)
    .option('--description <text>', 'description')
    .option('--location <text>', 'location')
    .option('--label <key=value>', 'a label of your own, for the exec driver and inventories; key= removes it (repeatable)', collect);
  // Fields dcmanager shows that dcm itself does not act on (SPEC §4): it keeps them, shows them,
  // and hands them to exec runs ({oam_floating_ip}, DCM_SUB_OAM_FLOATING_IP) and the Ansible inventory.
  for (const f of UNTRACKED_FIELDS) {
    const ansible = f === 'oam_floating_ip' ? "; the Ansible inventory's ansible_host" : '';
    cmd.option(`--${f.replace(/_/g, '-')} <value>`, `${f.replace(/_/g, ' ')} (kept and shown; exec runs get it as {${f}} and DCM_SUB_${f.toUpperCase()}${ansible})`);
  }
  return cmd;
}

export function registerSubcloud(program: Command, run: Runner): void {
  const sc = program.command('subcloud').description('manage the subcloud inventory');
  fieldOptions(sc.command('add').argument('<name...>').description('add one or more subclouds')).action(
    (names: string[], opts: RawSubcloudFields) => run(async (ctx) => await (await commands()).subcloudAdd(ctx, names, parseSubcloudFields(opts))),
  );
  sc.command('import')
    .argument('[file]', 'CSV, JSON array or JSON lines; - for standard input', '-')
    .description('add subclouds from a file: all rows or none')
    .action((file: string) => run(async (ctx) => await (await commands()).subcloudImport(ctx, file)));
  sc.command('list')
    .option('--group <group>', 'only this group')
    .option('--all', 'list all subclouds, including those whose deploy status is secondary or secondary-failed')
    .option('-d, --detail', 'list all columns of the subclouds')
    .option('--label <key=value>', 'only subclouds with this label (key= for those without it; repeatable, all must hold)', collect)
    .description('list subclouds')
    .action((opts: { group?: string; all?: boolean; detail?: boolean; label?: string[] }) =>
      run(async (ctx) => (await commands()).subcloudList_(ctx, { ...opts, labels: parseLabelSelector(opts.label ?? []) })),
    );
  sc.command('inventory')
    .option('--ansible', 'an Ansible inventory, in YAML (hosts: the subclouds; host vars: dcm_<field> and the labels)')
    .option('--group <group>', 'only this group')
    .option('--label <key=value>', 'only subclouds with this label (key= for those without it; repeatable, all must hold)', collect)
    .option('--all', 'also the subclouds whose deploy status is secondary or secondary-failed')
    .description('print the subclouds as an inventory for another tool (YAML, whatever -f says)')
    .action((o: { ansible?: boolean; group?: string; label?: string[]; all?: boolean }) =>
      run(async (ctx) => {
        // One format today; the option names it, so that another can come without changing this one.
        if (!o.ansible) throw new UsageError('give the inventory format: --ansible');
        const labels = parseLabelSelector(o.label ?? []);
        const inv = await (await import('../commands/subcloud-inventory.js')).subcloudInventory(ctx, { group: o.group, all: o.all, labels });
        const { renderAnsibleInventory } = await import('./output/ansible.js');
        const warnings = inv.skippedGroups.map(
          (g) => `subcloud group ${quoteName(g)} is not an Ansible group name (a letter or _, then letters, digits, _): its subclouds are in all only`,
        );
        return { text: renderAnsibleInventory(inv), warnings };
      }),
    );
  sc.command('show')
    .argument('<name>')
    .option('-d, --detail', 'show additional details for a subcloud')
    .description('show every field of a subcloud')
    .action((name: string, o: { detail?: boolean }) => run(async (ctx) => await (await commands()).subcloudShow_(ctx, name, Boolean(o.detail))));
  fieldOptions(sc.command('update').argument('<name...>').description('change subclouds')).action(
    (names: string[], opts: RawSubcloudFields) => run(async (ctx) => await (await commands()).subcloudUpdate(ctx, names, parseSubcloudFields(opts))),
  );
  sc.command('delete')
    .argument('<name...>', 'name or id')
    .option('--yes', YES_HELP)
    .description('delete subclouds (refused while one has a step)')
    .action((names: string[], o: { yes?: boolean }) =>
      run(async (ctx) => {
        await ctx.confirm(o.yes);
        return await (await commands()).subcloudDelete(ctx, names);
      }),
    );
  sc.command('manage')
    .argument('<subcloud>', 'name or id')
    .option('--force', 'manage the subcloud whatever its availability')
    .option('--yes', YES_HELP)
    .description('set a subcloud managed (refused while the strategy is updating it)')
    // Accepted for scripts that pass it everywhere; managing a site takes nothing away, so it
    // does not ask.
    .action((ref: string, o: { force?: boolean }) =>
      run(async (ctx) => await (await ops()).subcloudSetManagement(ctx, ref, 'managed', Boolean(o.force))),
    );
  sc.command('unmanage')
    .argument('<subcloud>', 'name or id')
    .option('--migrate', 'mark the subcloud for an upcoming migration (deploy status rehome-pending; needs deploy status complete)')
    .option('--yes', YES_HELP)
    .description('set a subcloud unmanaged (refused while the strategy is updating it)')
    .action((ref: string, o: { yes?: boolean; migrate?: boolean }) =>
      run(async (ctx) => {
        await ctx.confirm(o.yes);
        return await (await ops()).subcloudSetManagement(ctx, ref, 'unmanaged', false, Boolean(o.migrate));
      }),
    );
  sc.command('audit')
    .argument('[name...]', 'the subclouds to audit (name or id)')
    .option('--group <group>', "every subcloud of this group")
    .option('--all', 'every subcloud')
    .option('--max-parallel <n>', 'sites audited at once (default 20)')
    .option('--driver <name>', `who asks the sites: ${DRIVER_NAMES.join(' | ')} (default sim)`)
    .option('--exec-config <file>', 'exec driver: the config whose "audit" command prints a site\'s state as JSON')
    .description("ask each site what it is (software version, sync statuses, availability) and make the inventory say so; prints what changed")
    .action((names: string[], o: { group?: string; all?: boolean; maxParallel?: string; driver?: string; execConfig?: string }) =>
      run(async (ctx) => {
        const { auditProgress } = await import('./audit-progress.js');
        const progress = auditProgress(process.stderr, ctx.quiet);
        try {
          return await (await import('../commands/subcloud-audit.js')).subcloudAudit(ctx, { names, ...o, onProgress: progress.update });
        } finally {
          progress.done();
        }
      }),
    );
  sc.command('errors')
    .argument('<subcloud>', 'name or id')
    .description("the details of the subcloud's last failed operation (from the step history)")
    .action((ref: string) => run(async (ctx) => ({ text: await (await ops()).subcloudErrors(ctx, ref) })));
  sc.command('probe')
    .argument('[name...]', 'name or id')
    .option('--group <group>', "this group's subclouds")
    .option('--all', 'every subcloud')
    .addOption(new Option('--max-parallel <n>', 'probes at once (default 20)').argParser(integer))
    .option('--driver <name>', `who asks the sites: ${DRIVER_NAMES.join(' | ')} (default sim)`)
    .option('--exec-config <file>', "exec driver: the config whose probe command asks a site (exit 0: it answers)")
    .description('ask each site whether it answers; records availability online or offline (exit 1 if one did not answer)')
    .action((names: string[], o: { group?: string; all?: boolean; maxParallel?: number; driver?: string; execConfig?: string }) =>
      run(async (ctx) => await (await import('../commands/subcloud-probe.js')).subcloudProbe(ctx, { names, ...o })),
    );
  const prestage = sc
    .command('prestage')
    .argument('<subcloud>', 'name or id')
    .description('prestage one subcloud now: a one-subcloud prestage strategy, created and applied (deleted once complete)')
    .option('--release <YY.MM[.nn]>', 'software release to prestage')
    .option('--for-install', 'prestage for install (default)')
    .option('--for-sw-deploy', 'prestage for software deploy')
    .option('--sysadmin-password <password>', "the subcloud's sysadmin password (stored with the strategy, never printed)")
    .option('--force', "accepted as dcmanager's client takes it (dcm checks no alarms)")
    .option('--yes', YES_HELP)
    .option('--driver <name>', `who performs each state: ${DRIVER_NAMES.join(' | ')} (default sim)`);
  for (const o of driverOptions()) {
    if (o.repeatable) prestage.option(o.flags, o.help, collect);
    else prestage.option(o.flags, o.help);
  }
  // --yes is accepted and asks nothing: a prestage only adds to a site (as `strategy create`).
  prestage.action((ref: string, o: { release?: string; forInstall?: boolean; forSwDeploy?: boolean; sysadminPassword?: string } & Record<string, unknown>) =>
    run(async (ctx) => {
      const { release, forInstall, forSwDeploy, sysadminPassword } = o;
      return await (await ops()).subcloudPrestage(ctx, ref, { typeOptions: { release, forInstall, forSwDeploy, sysadminPassword }, driverOptions: o });
    }),
  );
}
