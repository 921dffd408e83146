/**
 * An Ansible inventory made from the fleet (`dcm subcloud inventory --ansible`): a host per
 * subcloud, its fields and labels as host variables. Pure: subclouds in, the inventory's data out.
 *
 * - Fields are `dcm_<field>` (`dcm_oam_floating_ip`, `dcm_group`): prefixed, so that a field never
 *   takes the name of a variable a playbook or a role has (`location`, `description`) nor one Ansible
 *   reserves (`name`).
 * - Labels keep their own key, so that a label can be a connection variable itself
 *   (`--label ansible_port=2222`, `--label ansible_user=sysadmin`), as Ansible's host_vars are.
 * - `ansible_host` is the OAM floating IP when one is set, unless a label gives it.
 * - A subcloud group is an Ansible group (`-l canary`) when its name is one Ansible takes (a letter
 *   or `_`, then letters, digits, `_`; not `all` or `ungrouped`).
 */
import { fieldValues, type SubcloudSource } from './fields.js';
import type { Labels } from './inventory.js';

export interface AnsibleHost {
  name: string;
  /** Host variables, sorted by name. */
  vars: [string, string | number][];
}

export interface AnsibleInventory {
  hosts: AnsibleHost[];
  /** Ansible groups (the subcloud groups whose names Ansible takes), each with its hosts. */
  groups: { name: string; hosts: string[] }[];
  /** Subcloud groups left out of the groups, their names not Ansible's. */
  skippedGroups: string[];
}

const GROUP_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED_GROUPS = new Set(['all', 'ungrouped']);

export function ansibleGroupName(name: string): boolean {
  return GROUP_NAME.test(name) && !RESERVED_GROUPS.has(name);
}

export function ansibleHost(row: SubcloudSource, labels: Labels): AnsibleHost {
  const vars = new Map<string, string | number>();
  for (const [name, value] of fieldValues(row)) if (value !== null) vars.set(`dcm_${name}`, value);
  if (row.oam_floating_ip) vars.set('ansible_host', row.oam_floating_ip);
  // The operator's own word wins over what dcm derives.
  for (const [k, v] of Object.entries(labels)) vars.set(k, v);
  return { name: row.name, vars: [...vars].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) };
}

/** The inventory of these subclouds (in the order given), each with its labels. */
export function ansibleInventory(rows: Iterable<{ row: SubcloudSource; labels: Labels }>): AnsibleInventory {
  const hosts: AnsibleHost[] = [];
  const groups = new Map<string, string[]>();
  const skipped = new Set<string>();
  for (const { row, labels } of rows) {
    hosts.push(ansibleHost(row, labels));
    if (!ansibleGroupName(row.group_name)) {
      skipped.add(row.group_name);
      continue;
    }
    let g = groups.get(row.group_name);
    if (!g) groups.set(row.group_name, (g = []));
    g.push(row.name);
  }
  return { hosts, groups: [...groups].map(([name, h]) => ({ name, hosts: h })), skippedGroups: [...skipped] };
}
