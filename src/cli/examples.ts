/**
 * The "Examples:" block that ends every command's --help, kept in one place so that the examples
 * read as one manual. Applied by walking the program once it is built: a command without an
 * entry here has no examples, and test/cli/examples.test.ts fails until it gets some.
 */
import type { Command } from 'commander';
import { STRATEGY_TYPES, TYPES, type StrategyType } from '../domain/types.js';

/** dcmanager's name for strategy-config before its client of 2025-05-14, still in old scripts. */
export const OLD_CONFIG_NAME = 'patch-strategy-config';

/** Example lines by command path ('' is the program itself). */
export const EXAMPLES: Record<string, string[]> = {
  '': [
    'dcm subcloud add subcloud{1..100} --group fleet',
    'dcm strategy create --type patch --dry-run',
    'dcm strategy create --type patch --stop-on-failure && dcm strategy apply',
    'dcm strategy-step list --state failed',
    'source <(dcm completion bash)',
  ],
  subcloud: ['dcm subcloud add east{001..200} --group east', 'dcm subcloud list -f json', 'dcm subcloud --help'],
  'subcloud add': [
    'dcm subcloud add subcloud1',
    'dcm subcloud add east{001..200} --group east --sync all=out-of-sync',
    'dcm subcloud add lab1 --availability offline --management unmanaged --location "rack 4"',
    'dcm subcloud add site07 --oam-floating-ip 10.20.0.7 --label ssh_port=2207 --label rack=r12',
  ],
  'subcloud import': [
    'dcm subcloud import fleet.csv',
    'dcm subcloud import fleet.jsonl',
    "printf 'name,group\\ns1,canary\\n' | dcm subcloud import -",
  ],
  'subcloud list': [
    'dcm subcloud list',
    'dcm subcloud list --group canary -f value -c name',
    'dcm subcloud list --label rack=r12 -f value -c name -c oam_floating_ip -c label.ssh_port',
  ],
  'subcloud inventory': [
    'dcm subcloud inventory --ansible > inventory.yaml',
    'dcm subcloud inventory --ansible --group canary --label rack=r12',
  ],
  'subcloud audit': [
    'dcm subcloud audit --all',
    'dcm subcloud audit --group canary --driver exec --exec-config sites.yaml --max-parallel 50',
    'dcm subcloud audit subcloud1 subcloud2 --driver exec --exec-config sites.yaml -f json',
  ],
  'subcloud show': ['dcm subcloud show subcloud1', 'dcm subcloud show subcloud1 -f json'],
  'subcloud update': [
    'dcm subcloud update subcloud1 subcloud2 --group canary',
    'dcm subcloud update subcloud7 --availability offline --sync kubernetes=in-sync',
    'dcm subcloud update site07 --label rack=r14 --label ssh_port=',
  ],
  'subcloud delete': ['dcm subcloud delete subcloud9', 'dcm subcloud delete lab{1..4}', 'dcm subcloud delete 12 --yes'],
  'subcloud manage': ['dcm subcloud manage subcloud1', 'dcm subcloud manage lab1 --force'],
  'subcloud unmanage': ['dcm subcloud unmanage subcloud1', 'dcm subcloud unmanage 8 --yes'],
  'subcloud errors': ['dcm subcloud errors subcloud7'],
  'subcloud probe': [
    'dcm subcloud probe --all',
    'dcm subcloud probe --group canary --driver exec --exec-config rollout.yaml --max-parallel 50',
    'dcm subcloud probe subcloud1 subcloud7 -f value -c name -c availability',
  ],
  'subcloud prestage': [
    'dcm subcloud prestage subcloud1 --release 24.09 --sysadmin-password "$PW"',
    'dcm subcloud prestage subcloud1 --for-sw-deploy --driver exec --exec-config prestage.yaml',
  ],
  alarm: ['dcm alarm summary'],
  'alarm summary': ['dcm alarm summary', 'dcm alarm summary -f value -c NAME'],
  'bash-completion': ['dcm bash-completion'],
  'subcloud-group': ['dcm subcloud-group add --name canary --max_parallel_subclouds 5', 'dcm subcloud-group list'],
  'subcloud-group add': [
    'dcm subcloud-group add --name canary --max_parallel_subclouds 5',
    'dcm subcloud-group add --name edge --update_apply_type serial --description "one at a time"',
    'dcm subcloud-group add --name canary --max_parallel_subclouds 1 --stage-max-failures 0 --stage-gate pause',
    'dcm subcloud-group add --name fleet --maintenance-window "22:00-06:00"',
  ],
  'subcloud-group list': ['dcm subcloud-group list', 'dcm subcloud-group list -f value -c name'],
  'subcloud-group show': ['dcm subcloud-group show canary', 'dcm subcloud-group show 1'],
  'subcloud-group update': [
    'dcm subcloud-group update canary --max_parallel_subclouds 10',
    'dcm subcloud-group update 2 --name pilot',
    'dcm subcloud-group update canary --stage-gate soak=30m',
    'dcm subcloud-group update canary --maintenance-window "Sat 22:00-Sun 06:00" --maintenance-tz Europe/Berlin',
    'dcm subcloud-group update canary --maintenance-window none',
  ],
  'subcloud-group delete': ['dcm subcloud-group delete canary', 'dcm subcloud-group delete 3 --yes'],
  'subcloud-group list-subclouds': ['dcm subcloud-group list-subclouds canary', 'dcm subcloud-group list-subclouds 1 -f json'],
  strategy: [
    'dcm strategy create --type patch --dry-run',
    'dcm strategy create --type patch && dcm strategy apply',
    'dcm strategy report --html rollout.html',
  ],
  'strategy create': [
    'dcm strategy create --type patch --dry-run',
    'dcm strategy create --type patch --stop-on-failure',
    'dcm strategy create --type patch --max-failures 5%',
    'dcm strategy create --type patch --stage-max-failures 0 --stage-gate pause   # resume promotes each stage',
    "dcm strategy create --type patch --stage-gate check --gate-check './healthy.sh \"$DCM_STAGE_CLOUDS\"'",
    'dcm strategy create --type patch subcloud1 subcloud7 subcloud9',
    'dcm strategy create --type kubernetes --to-version v1.29.2 --group canary',
    'dcm strategy create --type sw-deploy --release-id stx-10.0.1 --max-parallel-subclouds 50',
    'dcm strategy create --type patch --sim-latency 50ms..2s --sim-fail subcloud7="applying VIM patch strategy"',
    'dcm strategy create --type sw-deploy --release-id stx-10.0.1 --driver exec --exec-config sites.yaml --require-audit',
    'dcm strategy create --type patch --driver exec --exec-config rollout.yaml --probe --skip-unreachable --defer-delay 2m --defer-until 4h',
  ],
  'strategy show': ['dcm strategy show', 'dcm strategy show --type patch -f json'],
  'strategy apply': [
    'dcm strategy apply',
    'dcm strategy apply -q; echo "exit $?"   # 0 complete, 1 failed, 3 aborted, 5 an audit disagreed',
    'dcm strategy apply -v 2> apply.log      # one line per transition',
  ],
  'strategy status': ['dcm strategy status', 'dcm strategy status --watch; echo "exit $?"', 'dcm strategy status -f json'],
  'strategy abort': ['dcm strategy abort', 'dcm strategy abort --type patch'],
  'strategy pause': ['dcm strategy pause', 'dcm strategy pause && dcm strategy status'],
  'strategy resume': ['dcm strategy resume', 'dcm strategy resume -f value -c state'],
  'strategy update': [
    'dcm strategy update --max-parallel-subclouds 50',
    'dcm strategy update --max-parallel-subclouds 5 --stage 2',
    'dcm strategy update --max-failures 5%',
    'dcm strategy update --stage 2 --stage-gate soak=1h --stage-max-failures 10%',
  ],
  'strategy retry': [
    'dcm strategy retry && dcm strategy apply',
    'dcm strategy retry --failed',
    'dcm strategy retry subcloud7 subcloud19',
  ],
  'strategy events': [
    'dcm strategy events',
    'dcm strategy events -f csv -c time -c event -c user',
    'dcm strategy events -f json --sort-column user',
    'dcm strategy events --strategy 20261201175353123456',
  ],
  'strategy delete': ['dcm strategy delete', 'dcm strategy delete --type patch -f json', 'dcm strategy delete --reason "re-create with the canary fixed"'],
  'strategy list': ['dcm strategy list', 'dcm strategy list -f value -c id -c state', 'dcm patch-strategy list -f json'],
  'strategy types': ['dcm strategy types', 'dcm strategy types patch -f value -c states', 'dcm strategy types -f json'],
  'strategy report': [
    'dcm strategy report --html rollout.html',
    'dcm strategy report --html - > rollout.html',
    'dcm strategy report --html before.html --strategy 20261201175353123456',
  ],
  'strategy-step': ['dcm strategy-step list --state failed', 'dcm strategy-step history subcloud7'],
  'strategy-step list': [
    'dcm strategy-step list',
    'dcm strategy-step list --state failed --state aborted',
    'dcm strategy-step list --stage 2 -f value -c cloud',
    'dcm strategy-step list --state failed --watch',
  ],
  'strategy-step show': ['dcm strategy-step show subcloud1', 'dcm strategy-step show subcloud1 -f json'],
  'strategy-step history': ['dcm strategy-step history', 'dcm strategy-step history subcloud7'],
  'strategy-step resolve': ['dcm strategy-step resolve subcloud7 --as ok --reason "host-a is gone; the site reports the patch applied"'],
  'strategy-step logs': [
    'dcm strategy-step logs subcloud7',
    'dcm strategy-step logs subcloud7 --state "pre check" --attempt 2',
    'dcm strategy-step logs subcloud7 --follow',
    'dcm strategy-step logs subcloud7 --strategy 20261201175353123456',
  ],
  'strategy-config': ['dcm strategy-config list', 'dcm strategy-config show subcloud1'],
  'strategy-config update': [
    'dcm strategy-config update --storage-apply-type parallel --worker-apply-type serial --max-parallel-workers 5 --alarm-restriction-type relaxed --default-instance-action migrate',
    'dcm strategy-config update subcloud1 --storage-apply-type serial --worker-apply-type serial --max-parallel-workers 1 --alarm-restriction-type strict --default-instance-action stop-start',
  ],
  'strategy-config list': ['dcm strategy-config list', 'dcm strategy-config list -f json'],
  'strategy-config show': ['dcm strategy-config show', 'dcm strategy-config show subcloud1 -f value -c "max parallel workers"'],
  'strategy-config delete': ['dcm strategy-config delete subcloud1 --yes', 'dcm strategy-config delete RegionOne'],
  db: ['dcm db check', 'dcm db backup fleet-$(date +%F).db', 'dcm db prune --older 90d', 'dcm db prune-logs --older 30d'],
  'db check': ['dcm db check', 'dcm --db fleet.db db check || echo "restore a backup"'],
  'db backup': ['dcm db backup fleet-$(date +%F).db', 'dcm --db fleet.db db backup /backups/fleet.db'],
  'db prune': ['dcm db prune --older 90d --dry-run', 'dcm db prune --older 90d'],
  'db prune-logs': ['dcm db prune-logs --older 30d --dry-run', 'dcm db prune-logs --older 12h'],
  completion: [
    'source <(dcm completion bash)                          # this shell',
    'dcm completion bash > /etc/bash_completion.d/dcm       # every new shell',
    'dcm completion zsh > "${fpath[1]}/_dcm"                 # zsh',
  ],
};

/** `dcm patch-strategy create` and its kin: the examples of `dcm strategy <verb>`, for one type. */
const TYPE_CREATE: Record<StrategyType, string> = {
  patch: '--patch-id PATCH_0001',
  'sw-deploy': '--release-id stx-10.0.1',
  kubernetes: '--to-version v1.29.2',
  'kube-rootca-update': '--subject "C=CA O=Example CN=example.com" --expiry-date 2030-01-01',
  firmware: '',
  prestage: '--release 24.09 --for-sw-deploy',
  custom: '--driver exec --exec-config rollout.yaml',
};

function aliasExamples(type: StrategyType, verb: string): string[] | undefined {
  const alias = TYPES[type].alias;
  const opts = TYPE_CREATE[type] ? ` ${TYPE_CREATE[type]}` : '';
  switch (verb) {
    case '':
      return [`dcm ${alias} create${opts}`, `dcm ${alias} apply`, `dcm ${alias} show -f json`];
    case 'create':
      return [`dcm ${alias} create${opts}`, `dcm ${alias} create${opts} --dry-run`, `dcm ${alias} create subcloud1${opts}`];
    default: {
      // Every other verb: the generic examples without --type, under the alias.
      const generic = EXAMPLES[`strategy ${verb}`];
      return generic?.map((line) => line.replace(/^dcm strategy /, `dcm ${alias} `).replace(/ --type \S+/, ''));
    }
  }
}

/** The command path of `cmd`, without the program's own name ('' for the program). */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Example lines for a command path, or undefined when it has none. */
export function examplesFor(path: string): string[] | undefined {
  if (EXAMPLES[path]) return EXAMPLES[path];
  const [first, verb = ''] = path.split(' ');
  // The old name of strategy-config: its examples, under that name.
  if (first === OLD_CONFIG_NAME) {
    return EXAMPLES[['strategy-config', verb].filter(Boolean).join(' ')]?.map((l) => l.replace(/^dcm strategy-config/, `dcm ${OLD_CONFIG_NAME}`));
  }
  const type = STRATEGY_TYPES.find((t) => TYPES[t].alias === first);
  return type ? aliasExamples(type, verb) : undefined;
}

/** The block after a blank line, without the final newline (commander's addHelpText adds it). */
export function examplesText(path: string): string {
  const lines = examplesFor(path);
  return lines ? `\nExamples:\n${lines.map((l) => `  ${l}`).join('\n')}` : '';
}

/** Add the Examples block to the help of `program` and of every command below it. */
export function addExamples(program: Command): void {
  const visit = (cmd: Command) => {
    addExamplesTo(cmd);
    cmd.commands.forEach(visit);
  };
  visit(program);
}

/** One command's Examples block (main adds it only to the commands a command line can reach). */
export function addExamplesTo(cmd: Command): void {
  const text = examplesText(commandPath(cmd));
  if (text) cmd.addHelpText('after', text);
}
