/**
 * Subcloud and group fields, and subcloud labels, as people give them (options or import rows),
 * validated. Pure.
 */
import { UsageError } from './errors.js';
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

/*
 * Labels: free labels of a subcloud (`--label rack=r12`), what a site's command needs that
 * dcmanager has no field for (an ssh port, a jump host, a rack).
 *
 * A key is what the exec driver names it by, `{label.KEY}` and `DCM_LABEL_<KEY>`, and what an
 * Ansible inventory makes a host variable of: so it is a lowercase identifier (the placeholders'
 * own alphabet, which keeps `${HOME}` a shell's), and `DCM_LABEL_<KEY>` is a valid variable name.
 */

/** Labels as stored: key to value. */
export type Labels = Record<string, string>;
/** Changes asked for: a value sets the label, null removes it (`--label k=`). */
export type LabelChanges = Record<string, string | null>;
/** A selection: a value must be the label's, null means the subcloud has no such label. */
export type LabelSelector = Record<string, string | null>;

export const MAX_LABEL_KEY = 63;
export const MAX_LABEL_VALUE = 255;
const KEY = /^[a-z][a-z0-9_]*$/;

/** Why `key` cannot be a label's key, or null. */
export function labelKeyProblem(key: string): string | null {
  if (!KEY.test(key)) return 'a key is a lowercase letter, then lowercase letters, digits or _';
  if (key.length > MAX_LABEL_KEY) return `a key is at most ${MAX_LABEL_KEY} characters`;
  return null;
}

/** Why `value` cannot be a label's value, or null. */
export function labelValueProblem(value: string): string | null {
  if (value.length > MAX_LABEL_VALUE) return `a value is at most ${MAX_LABEL_VALUE} characters`;
  // A newline or tab would split a `-f value` row; `;` separates labels in the `labels` column.
  if (/\p{Cc}/u.test(value)) return 'a value may not hold control characters (newline, tab, NUL…)';
  if (value.includes(';')) return "a value may not hold ';' (it separates labels)";
  if (value !== value.trim()) return 'a value may not start or end with a space';
  return null;
}

function shown(item: string): string {
  return `'${JSON.stringify(item.length > 60 ? `${item.slice(0, 57)}...` : item).slice(1, -1)}'`;
}

/** One `KEY=VALUE` (an empty VALUE: null), checked; `how` is said when `=` is missing. */
function parseOne(item: string, how: string): [string, string | null] {
  const eq = item.indexOf('=');
  if (eq < 0) throw new UsageError(`invalid label ${shown(item)}: use ${how}`);
  const key = item.slice(0, eq);
  const value = item.slice(eq + 1);
  const problem = labelKeyProblem(key) ?? (value === '' ? null : labelValueProblem(value));
  if (problem) throw new UsageError(`invalid label ${shown(item)}: ${problem}`);
  return [key, value === '' ? null : value];
}

/** `--label k=v` (repeatable) on add and update: `k=` removes the label; a later one wins. */
export function parseLabelChanges(items: readonly string[]): LabelChanges {
  const out: LabelChanges = {};
  for (const item of items) {
    const [k, v] = parseOne(item, 'KEY=VALUE, or KEY= to remove it');
    out[k] = v;
  }
  return out;
}

/** `--label k=v` (repeatable) on list, inventory and strategy create: every one must hold. */
export function parseLabelSelector(items: readonly string[]): LabelSelector {
  const out: LabelSelector = {};
  for (const item of items) {
    const [k, v] = parseOne(item, 'KEY=VALUE, or KEY= for the subclouds without it');
    if (k in out && out[k] !== v) throw new UsageError(`invalid label ${shown(item)}: ${k} is selected twice with different values`);
    out[k] = v;
  }
  return out;
}

/** The import column `labels`: `k=v;k2=v2` (blank items are skipped). */
export function parseLabelList(text: string): LabelChanges {
  return parseLabelChanges(text.split(';').map((x) => x.trim()).filter((x) => x !== ''));
}

/** `k=v;k2=v2`, keys sorted: how `subcloud show` prints them and the import column reads them. */
export function formatLabels(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(';');
}

/** The stored `k=v;k2=v2` back to labels (values hold no `;`, keys no `=`). */
export function readLabels(text: string | null | undefined): Labels {
  const out: Labels = {};
  if (!text) return out;
  for (const item of text.split(';')) {
    const eq = item.indexOf('=');
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

/** The environment variable a label reaches a run as. */
export function labelEnvName(key: string): string {
  return `DCM_LABEL_${key.toUpperCase()}`;
}
