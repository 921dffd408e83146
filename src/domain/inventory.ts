/**
 * Subcloud and group fields as people give them (options or import rows), validated. Pure.
 */
import { UsageError } from './errors.js';
import { parseLabelChanges, type LabelChanges } from './labels.js';
import { APPLY_TYPES, ENDPOINTS, SYNC_STATUSES, type ApplyType, type Endpoint, type SyncStatus } from './types.js';

export interface RawSubcloudFields {
  group?: string;
  management?: string;
  availability?: string;
  deployStatus?: string;
  softwareVersion?: string;
  prestageStatus?: string;
  description?: string;
  location?: string;
  sync?: string[];
  managementSubnet?: string;
  managementStartIp?: string;
  managementEndIp?: string;
  managementGatewayIp?: string;
  systemcontrollerGatewayIp?: string;
  peerGroupId?: string;
  backupStatus?: string;
  backupDatetime?: string;
  prestageVersions?: string;
  regionName?: string;
  oamFloatingIp?: string;
  deployConfigSyncStatus?: string;
  /** `--label k=v` (repeatable; `k=` removes it). */
  label?: string[];
}

/**
 * Fields dcmanager shows that dcm keeps without acting on them: accepted by add, update and
 * import, stored, printed by show and the detail lists (None until given).
 */
export const UNTRACKED_FIELDS = [
  'management_subnet',
  'management_start_ip',
  'management_end_ip',
  'management_gateway_ip',
  'systemcontroller_gateway_ip',
  'peer_group_id',
  'backup_status',
  'backup_datetime',
  'prestage_versions',
  'region_name',
  'oam_floating_ip',
  'deploy_config_sync_status',
] as const;
export type UntrackedField = (typeof UNTRACKED_FIELDS)[number];

/** `management_subnet` → `managementSubnet`: the key commander gives for `--management-subnet`. */
export function camel(snake: string): string {
  return snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

export interface SubcloudInput extends Partial<Record<Exclude<UntrackedField, 'peer_group_id'>, string>> {
  peer_group_id?: number;
  group?: string;
  management?: 'managed' | 'unmanaged';
  availability?: 'online' | 'offline';
  deploy_status?: string;
  software_version?: string;
  prestage_status?: string;
  description?: string;
  location?: string;
  sync?: Partial<Record<Endpoint, SyncStatus>>;
  labels?: LabelChanges;
}

function oneOf<T extends string>(what: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`invalid ${what} '${value}': choose from ${allowed.join(', ')}`);
  }
  return value as T;
}

/** `ENDPOINT=STATUS`, where ENDPOINT may be `all`. Later entries override earlier ones. */
export function parseSync(items: readonly string[]): Partial<Record<Endpoint, SyncStatus>> {
  const out: Partial<Record<Endpoint, SyncStatus>> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq < 0) throw new UsageError(`invalid --sync '${item}': use ENDPOINT=STATUS`);
    const endpoint = item.slice(0, eq).trim();
    const status = oneOf('sync status', item.slice(eq + 1).trim(), SYNC_STATUSES);
    if (endpoint === 'all') {
      for (const e of ENDPOINTS) out[e] = status;
    } else {
      out[oneOf('sync endpoint', endpoint, [...ENDPOINTS, 'all'] as const) as Endpoint] = status;
    }
  }
  return out;
}

/** Each untracked field with its camel-case key, made once (an import checks every row). */
let UNTRACKED_KEYS_MEMO: [UntrackedField, keyof RawSubcloudFields][] | undefined;
const UNTRACKED_KEYS_OF = () => (UNTRACKED_KEYS_MEMO ??= UNTRACKED_FIELDS.map((f) => [f, camel(f) as keyof RawSubcloudFields]));

export function parseSubcloudFields(raw: RawSubcloudFields): SubcloudInput {
  const UNTRACKED_KEYS = UNTRACKED_KEYS_OF();
  const out: SubcloudInput = {};
  if (raw.group !== undefined) out.group = raw.group;
  if (raw.management !== undefined) out.management = oneOf('management', raw.management, ['managed', 'unmanaged'] as const);
  if (raw.availability !== undefined) out.availability = oneOf('availability', raw.availability, ['online', 'offline'] as const);
  if (raw.deployStatus !== undefined) out.deploy_status = raw.deployStatus;
  if (raw.softwareVersion !== undefined) out.software_version = raw.softwareVersion;
  if (raw.prestageStatus !== undefined) out.prestage_status = raw.prestageStatus;
  if (raw.description !== undefined) out.description = raw.description;
  if (raw.location !== undefined) out.location = raw.location;
  if (raw.sync !== undefined && raw.sync.length) out.sync = parseSync(raw.sync);
  if (raw.label !== undefined && raw.label.length) out.labels = parseLabelChanges(raw.label);
  for (const [f, key] of UNTRACKED_KEYS) {
    const v = raw[key] as string | undefined;
    if (v === undefined) continue;
    if (f === 'peer_group_id') out.peer_group_id = parseIntIn('peer group id', v, 0, Number.MAX_SAFE_INTEGER);
    else out[f] = v;
  }
  return out;
}

/** Why `name` is not a valid subcloud or group name (SPEC §2.1), or null. */
export function nameProblem(name: string): string | null {
  if (name.length === 0) return 'a name may not be empty';
  if (name.length > MAX_NAME) return `a name is at most ${MAX_NAME} characters (this one has ${name.length})`;
  // A newline or tab would split a `-f value` row; a NUL cuts the name short in C tools.
  if (/\p{Cc}/u.test(name)) return 'a name may not hold control characters (newline, tab, NUL…)';
  if (name.trim() === '') return 'a name may not be blank';
  if (name !== name.trim()) return 'a name may not start or end with a space';
  return null;
}

export const MAX_NAME = 255;

/** The name as shown in a message: quoted, with control characters escaped, and cut if huge. */
export function quoteName(name: string): string {
  const shown = name.length > 60 ? `${name.slice(0, 57)}...` : name;
  return `'${JSON.stringify(shown).slice(1, -1)}'`;
}

export function checkName(kind: string, name: string): void {
  const problem = nameProblem(name);
  if (problem) throw new UsageError(`invalid ${kind} name ${quoteName(name)}: ${problem}`);
}

/** A group is found by name or by id, so a name may not be a number. */
export function checkGroupName(name: string): void {
  checkName('subcloud group', name);
  if (/^\d+$/.test(name)) throw new UsageError(`invalid subcloud group name '${name}': a name may not be a number (it would read as an id)`);
}

export function parseApplyType(value: string): ApplyType {
  return oneOf('apply type', value, APPLY_TYPES);
}

/** A whole number in [min, max]; `what` names the option in the message. */
export function parseIntIn(what: string, text: string, min: number, max: number): number {
  if (!/^-?\d+$/.test(text.trim())) throw new UsageError(`invalid ${what} '${text}': not an integer`);
  const n = Number(text);
  if (n < min || n > max) throw new UsageError(`invalid ${what} '${text}': must be between ${min} and ${max}`);
  return n;
}
