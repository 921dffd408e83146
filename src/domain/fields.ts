/**
 * A subcloud's fields by the names `subcloud show -d` prints them, for what hands a site's data to
 * something else: the exec driver's placeholders and `DCM_SUB_*` variables, and the host variables
 * of a generated Ansible inventory. One list, so that the two never name a field differently. Pure.
 */
import type { Endpoint, SyncStatus } from './types.js';

/** The stored subcloud, as the store reads it (`group_name` is its group's name). */
export interface SubcloudSource {
  id: number;
  name: string;
  description: string | null;
  location: string | null;
  group_id: number;
  group_name: string;
  management: string;
  availability: string;
  deploy_status: string;
  software_version: string | null;
  prestage_status: string | null;
  patching_sync: SyncStatus;
  usm_sync: SyncStatus;
  kubernetes_sync: SyncStatus;
  kube_rootca_sync: SyncStatus;
  firmware_sync: SyncStatus;
  created_at: string;
  updated_at: string | null;
  management_subnet: string | null;
  management_start_ip: string | null;
  management_end_ip: string | null;
  management_gateway_ip: string | null;
  systemcontroller_gateway_ip: string | null;
  peer_group_id: number | null;
  backup_status: string | null;
  backup_datetime: string | null;
  prestage_versions: string | null;
  region_name: string | null;
  oam_floating_ip: string | null;
  deploy_config_sync_status: string | null;
}

type Get = (r: SubcloudSource) => string | number | null;
const sync = (e: Endpoint): Get => (r) => r[`${e === 'kube-rootca' ? 'kube_rootca' : e}_sync` as keyof SubcloudSource] as string;

/**
 * Every field, in `subcloud show -d`'s order, but the record's own times (created_at, updated_at),
 * which say nothing of the site and would make a generated inventory, or what a run is handed,
 * differ at every edit. `group` is the group's name (as `--group` takes it); the endpoints' names
 * are written with `_` (`kube_rootca_sync_status`), as a placeholder is.
 */
const FIELDS: [string, Get][] = [
  ['id', (r) => r.id],
  ['name', (r) => r.name],
  ['description', (r) => r.description],
  ['location', (r) => r.location],
  ['software_version', (r) => r.software_version],
  ['management', (r) => r.management],
  ['availability', (r) => r.availability],
  ['deploy_status', (r) => r.deploy_status],
  ['management_subnet', (r) => r.management_subnet],
  ['management_start_ip', (r) => r.management_start_ip],
  ['management_end_ip', (r) => r.management_end_ip],
  ['management_gateway_ip', (r) => r.management_gateway_ip],
  ['systemcontroller_gateway_ip', (r) => r.systemcontroller_gateway_ip],
  ['group', (r) => r.group_name],
  ['group_id', (r) => r.group_id],
  ['peer_group_id', (r) => r.peer_group_id],
  ['backup_status', (r) => r.backup_status],
  ['backup_datetime', (r) => r.backup_datetime],
  ['prestage_status', (r) => r.prestage_status],
  ['prestage_versions', (r) => r.prestage_versions],
  ['firmware_sync_status', sync('firmware')],
  ['kube_rootca_sync_status', sync('kube-rootca')],
  ['kubernetes_sync_status', sync('kubernetes')],
  ['patching_sync_status', sync('patching')],
  ['usm_sync_status', sync('usm')],
  ['oam_floating_ip', (r) => r.oam_floating_ip],
  ['deploy_config_sync_status', (r) => r.deploy_config_sync_status],
  ['region_name', (r) => r.region_name],
];

export const FIELD_NAMES: readonly string[] = FIELDS.map(([n]) => n);

/** Every field's value (numbers stay numbers; null when unset), in FIELD_NAMES order. */
export function fieldValues(r: SubcloudSource): [string, string | number | null][] {
  return FIELDS.map(([n, get]) => [n, get(r)]);
}

/** The same as text, for a command line or an environment. */
export function fieldTexts(r: SubcloudSource): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const [n, v] of fieldValues(r)) out[n] = v === null ? null : String(v);
  return out;
}
