/** Queries of the subcloud table. */
import type { Db } from './open.js';
import { Params, sql } from './statements.js';
import { now } from './clock.js';
import type { Endpoint, SyncStatus } from '../domain/types.js';
import type { SubcloudRecord } from '../domain/planning.js';
import type { SubcloudSource } from '../domain/fields.js';
import type { LabelChanges, LabelSelector, Labels } from '../domain/inventory.js';

export const SYNC_COLUMN: Record<Endpoint, string> = {
  patching: 'patching_sync',
  usm: 'usm_sync',
  kubernetes: 'kubernetes_sync',
  'kube-rootca': 'kube_rootca_sync',
  firmware: 'firmware_sync',
};

/** A subcloud as stored (domain/fields.ts names its columns), with its labels. */
export interface SubcloudRow extends SubcloudSource {
  /** The subcloud's labels, `k=v;k2=v2` with keys sorted; null when it has none. */
  labels: string | null;
}

/** Every settable field of a subcloud, as stored. */
export interface SubcloudFields {
  description?: string | null;
  location?: string | null;
  group_id?: number;
  management?: string;
  availability?: string;
  deploy_status?: string;
  software_version?: string | null;
  prestage_status?: string | null;
  sync?: Partial<Record<Endpoint, SyncStatus>>;
  management_subnet?: string;
  management_start_ip?: string;
  management_end_ip?: string;
  management_gateway_ip?: string;
  systemcontroller_gateway_ip?: string;
  peer_group_id?: number;
  backup_status?: string;
  backup_datetime?: string;
  prestage_versions?: string;
  region_name?: string;
  oam_floating_ip?: string;
  deploy_config_sync_status?: string;
  /** Labels to set (a value) or remove (null). */
  labels?: LabelChanges;
}

/** Columns added after the first schema, null until given. */
const UNTRACKED = [
  'management_subnet', 'management_start_ip', 'management_end_ip', 'management_gateway_ip',
  'systemcontroller_gateway_ip', 'peer_group_id', 'backup_status', 'backup_datetime',
  'prestage_versions', 'region_name', 'oam_floating_ip', 'deploy_config_sync_status',
];

const SELECT = `SELECT s.*, g.name AS group_name, ${labelsColumn('s')} AS labels FROM subcloud s JOIN subcloud_group g ON g.id = s.group_id`;

export async function listSubclouds(db: Db, groupId?: number): Promise<SubcloudRow[]> {
  if (groupId === undefined) return (await sql(db, `${SELECT} ORDER BY s.id`).all()) as SubcloudRow[];
  return (await sql(db, `${SELECT} WHERE s.group_id = $1 ORDER BY s.id`).all(groupId)) as SubcloudRow[];
}

/**
 * `subcloud list` one row at a time: of one group or all, and without the secondary subclouds
 * unless `all` (dcmanager lists those only with --all); only those the label selector picks.
 */
export function iterateSubclouds(
  db: Db,
  groupId: number | undefined,
  all: boolean,
  hidden: readonly string[],
  labels: LabelSelector = {},
): AsyncIterableIterator<SubcloudRow> {
  const p = new Params();
  const conds = labelCondition('s', labels, p);
  if (groupId !== undefined) conds.push(`s.group_id = ${p.add(groupId)}`);
  if (!all && hidden.length) conds.push(`s.deploy_status NOT IN (${p.list(hidden)})`);
  const where = conds.length ? `WHERE ${conds.join(' AND ')}` : '';
  return sql(db, `${SELECT} ${where} ORDER BY s.id`).iterate(...p.values) as AsyncIterableIterator<SubcloudRow>;
}

export async function subcloudById(db: Db, id: number): Promise<SubcloudRow | undefined> {
  return (await sql(db, `${SELECT} WHERE s.id = $1`).get(id)) as SubcloudRow | undefined;
}

export async function findSubcloud(db: Db, name: string): Promise<SubcloudRow | undefined> {
  return (await sql(db, `${SELECT} WHERE s.name = $1`).get(name)) as SubcloudRow | undefined;
}

/**
 * A subcloud as dcmanager's API takes it (`subcloud show 8`): all digits is an id, anything else a
 * name. A name made of digits (dcm allows one) is found by name when no subcloud has that id.
 */
export async function findSubcloudByRef(db: Db, ref: string): Promise<SubcloudRow | undefined> {
  if (/^\d+$/.test(ref)) {
    const byId = await sql(db, `${SELECT} WHERE s.id = $1`).get(Number(ref)) as SubcloudRow | undefined;
    if (byId) return byId;
  }
  return await findSubcloud(db, ref);
}

/** The name `ref` stands for (an id of all digits becomes its subcloud's name); else `ref` as given. */
export async function subcloudNameOf(db: Db, ref: string): Promise<string> {
  return /^\d+$/.test(ref) ? ((await findSubcloudByRef(db, ref))?.name ?? ref) : ref;
}

export async function existingNames(db: Db, names: readonly string[]): Promise<string[]> {
  const stmt = sql(db, 'SELECT 1 FROM subcloud WHERE name = $1').pluck();
  const out: string[] = [];
  for (const n of names) if ((await stmt.get(n)) !== undefined) out.push(n);
  return out;
}

/**
 * Only what planning reads, for every subcloud in id order: `strategy create` over a large fleet
 * should not pay for the columns it never looks at.
 */
export async function planningRecords(db: Db, labels: LabelSelector = {}): Promise<SubcloudRecord[]> {
  const p = new Params();
  const conds = labelCondition('subcloud', labels, p);
  const rows = await sql(
    db,
    `SELECT id, name, group_id, management, availability, deploy_status,
       patching_sync, usm_sync, kubernetes_sync, kube_rootca_sync, firmware_sync, software_version
     FROM subcloud ${conds.length ? `WHERE ${conds.join(' AND ')}` : ''} ORDER BY id`,
  )
    .raw(true)
    .all(...p.values) as [number, string, number, string, string, string, SyncStatus, SyncStatus, SyncStatus, SyncStatus, SyncStatus, string | null][];
  return rows.map((r) => ({
    id: r[0],
    name: r[1],
    groupId: r[2],
    management: r[3],
    availability: r[4],
    deployStatus: r[5],
    sync: { patching: r[6], usm: r[7], kubernetes: r[8], 'kube-rootca': r[9], firmware: r[10] },
    softwareVersion: r[11],
  }));
}

/**
 * planningRecords in group id, then id order, a page at a time (of one group, when given; only the
 * subclouds the label selector picks): each page is read whole (`.all()`), so that the connection
 * is free to insert between pages.
 */
export async function* planningPages(
  db: Db,
  groupId: number | null,
  pageSize = 10_000,
  labels: LabelSelector = {},
): AsyncGenerator<SubcloudRecord, void, undefined> {
  const cols = `id, name, group_id, management, availability, deploy_status,
       patching_sync, usm_sync, kubernetes_sync, kube_rootca_sync, firmware_sync, software_version`;
  // The page's start and size are the first three parameters; the label selector's follow.
  const p = new Params(null, null, pageSize);
  const and = labelCondition('subcloud', labels, p).map((c) => ` AND ${c}`).join('');
  // Keyset paging on the (group_id, id) index: each page starts where the last one ended.
  const page = groupId === null
    ? sql(db, `SELECT ${cols} FROM subcloud WHERE (group_id, id) > ($1, $2)${and} ORDER BY group_id, id LIMIT $3`).raw(true)
    : sql(db, `SELECT ${cols} FROM subcloud WHERE group_id = $1 AND id > $2${and} ORDER BY group_id, id LIMIT $3`).raw(true);
  let g = groupId ?? -1;
  let id = -1;
  for (;;) {
    const rows = await page.all(g, id, pageSize, ...p.values.slice(3)) as [number, string, number, string, string, string, SyncStatus, SyncStatus, SyncStatus, SyncStatus, SyncStatus, string | null][];
    for (const r of rows) {
      yield {
        id: r[0],
        name: r[1],
        groupId: r[2],
        management: r[3],
        availability: r[4],
        deployStatus: r[5],
        sync: { patching: r[6], usm: r[7], kubernetes: r[8], 'kube-rootca': r[9], firmware: r[10] },
        softwareVersion: r[11],
      };
    }
    if (rows.length < pageSize) return;
    const last = rows[rows.length - 1];
    if (groupId === null) g = last[2];
    id = last[0];
  }
}

/**
 * The subclouds a `--group` or `--label` selection leaves out (issue 34: create names who it left
 * out, and why): how many, and the first `limit` names in id order. None without a selection.
 */
export async function outsideSelection(db: Db, groupId: number | null, labels: LabelSelector, limit: number): Promise<{ count: number; names: string[] }> {
  const p = new Params();
  const conds = [...(groupId === null ? [] : [`group_id = ${p.add(groupId)}`]), ...labelCondition('subcloud', labels, p)];
  if (conds.length === 0) return { count: 0, names: [] };
  const where = `NOT (${conds.join(' AND ')})`;
  const count = await sql(db, `SELECT count(*) FROM subcloud WHERE ${where}`).pluck().get(...p.values) as number;
  const limitAt = `$${p.values.length + 1}`;
  const names = count === 0 ? [] : await sql(db, `SELECT name FROM subcloud WHERE ${where} ORDER BY id LIMIT ${limitAt}`).pluck().all(...p.values, Math.min(limit, 2 ** 31 - 1)) as string[];
  return { count: Number(count), names };
}

function flatten(f: SubcloudFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(f)) if (k !== 'sync' && k !== 'labels' && v !== undefined) out[k] = v;
  for (const [e, v] of Object.entries(f.sync ?? {})) if (v !== undefined) out[SYNC_COLUMN[e as Endpoint]] = v;
  return out;
}

/**
 * Insert many subclouds with one prepared statement (the caller holds the transaction). With
 * `onTaken`, a name already in the table calls it with the row's index (it throws), instead of
 * failing with SQLite's constraint error; the id of the first row inserted is returned.
 */
export async function insertSubclouds(db: Db, rows: { name: string; fields: SubcloudFields }[], onTaken?: (index: number) => Promise<never>): Promise<number | null> {
  const cols = insertColumns();
  const stmt = sql(db, `INSERT INTO subcloud (${cols.names.join(', ')}) VALUES (${cols.names.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING id`).pluck();
  const created = now(db);
  let firstId: number | null = null;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    // Positional values, the defaults copied in: binding 25 named parameters per row cost more
    // than the insert itself on an import of a million rows.
    const values = cols.defaults.slice();
    for (const [k, v] of Object.entries(flatten(r.fields))) {
      const at = cols.index.get(k);
      if (at === undefined) throw new Error(`insertSubclouds: no column ${k}`);
      values[at] = v;
    }
    values[cols.index.get('name')!] = r.name;
    values[cols.index.get('created_at')!] = created;
    let id: number;
    try {
      id = Number(await stmt.get(...values));
    } catch (err) {
      if (onTaken && (err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') await onTaken(i);
      throw err;
    }
    if (r.fields.labels) await changeLabels(db, id, r.fields.labels);
    firstId ??= id;
  }
  return firstId;
}

/** The inserted columns in order, their defaults (when the input leaves them out), made once. */
let INSERT_COLUMNS: { names: string[]; defaults: unknown[]; index: Map<string, number> } | undefined;

function insertColumns(): NonNullable<typeof INSERT_COLUMNS> {
  if (INSERT_COLUMNS) return INSERT_COLUMNS;
  const defaults: Record<string, unknown> = {
    name: null,
    description: null,
    location: null,
    group_id: 1,
    management: 'managed',
    availability: 'online',
    deploy_status: 'complete',
    software_version: null,
    prestage_status: null,
    patching_sync: 'out-of-sync',
    usm_sync: 'out-of-sync',
    kubernetes_sync: 'out-of-sync',
    kube_rootca_sync: 'out-of-sync',
    firmware_sync: 'out-of-sync',
    created_at: null,
    ...Object.fromEntries(UNTRACKED.map((c) => [c, null])),
  };
  const names = Object.keys(defaults);
  INSERT_COLUMNS = { names, defaults: names.map((n) => defaults[n]), index: new Map(names.map((n, i) => [n, i])) };
  return INSERT_COLUMNS;
}

/** Every subcloud's name in id order (for a message that suggests one). */
export async function allSubcloudNames(db: Db): Promise<string[]> {
  return (await sql(db, 'SELECT name FROM subcloud ORDER BY id').pluck().all()) as string[];
}

/** The highest subcloud id (0 for none): new rows take the ids after it. */
export async function maxSubcloudId(db: Db): Promise<number> {
  return (await sql(db, 'SELECT coalesce(max(id), 0) FROM subcloud').pluck().get()) as number;
}

/** The id of the subcloud of that name, if there is one. */
export async function idOfName(db: Db, name: string): Promise<number | undefined> {
  return (await sql(db, 'SELECT id FROM subcloud WHERE name = $1').pluck().get(name)) as number | undefined;
}

export async function updateSubcloud(db: Db, id: number, fields: SubcloudFields): Promise<void> {
  const flat = flatten(fields);
  const keys = Object.keys(flat);
  if (fields.labels) await changeLabels(db, id, fields.labels);
  if (keys.length === 0 && !fields.labels) return;
  const p = new Params();
  const sets = [...keys.map((k) => `${k} = ${p.add(flat[k])}`), `updated_at = ${p.add(now(db))}`].join(', ');
  await sql(db, `UPDATE subcloud SET ${sets} WHERE id = ${p.add(id)}`).run(...p.values);
}

export async function deleteSubcloud(db: Db, id: number): Promise<void> {
  await sql(db, 'DELETE FROM subcloud WHERE id = $1').run(id);
}

export async function hasStep(db: Db, subcloudId: number): Promise<boolean> {
  return (await sql(db, 'SELECT 1 FROM strategy_step WHERE subcloud_id = $1').get(subcloudId)) !== undefined;
}

// Labels: the subcloud_label table, a subcloud's free labels, and selecting subclouds by them.

/** Set (a value) or remove (null) labels of one subcloud, inside the caller's transaction. */
export async function changeLabels(db: Db, subcloudId: number, changes: LabelChanges): Promise<void> {
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) await sql(db, 'DELETE FROM subcloud_label WHERE subcloud_id = $1 AND key = $2').run(subcloudId, key);
    else {
      await sql(db, 'INSERT INTO subcloud_label (subcloud_id, key, value) VALUES ($1, $2, $3) ON CONFLICT (subcloud_id, key) DO UPDATE SET value = excluded.value')
        .run(subcloudId, key, value);
    }
  }
}

/** The subclouds with a label of one of these keys (a driver's `labelKeys`). */
export async function subcloudsLabelled(db: Db, keys: readonly string[]): Promise<Set<number>> {
  if (keys.length === 0) return new Set();
  const p = new Params();
  const ids = await sql(db, `SELECT DISTINCT subcloud_id FROM subcloud_label WHERE key IN (${p.list(keys)})`).pluck().all(...p.values) as number[];
  return new Set(ids);
}

export async function labelsOf(db: Db, subcloudId: number): Promise<Labels> {
  const rows = await sql(db, 'SELECT key, value FROM subcloud_label WHERE subcloud_id = $1 ORDER BY key').raw(true).all(subcloudId) as [string, string][];
  return Object.fromEntries(rows);
}

/**
 * The labels of every subcloud as one `k=v;k2=v2` text (keys sorted), for a SELECT over `subcloud`
 * aliased `alias`: null for a subcloud without labels.
 */
export function labelsColumn(alias: string): string {
  return `(SELECT string_agg(l.key || '=' || l.value, ';' ORDER BY l.key) FROM subcloud_label l WHERE l.subcloud_id = ${alias}.id)`;
}

/**
 * WHERE conditions for a SELECT over `subcloud` aliased `alias` that hold for the subclouds the
 * selector picks (every label as given; null: the subcloud has no such label), their values
 * added to `p`.
 */
export function labelCondition(alias: string, selector: LabelSelector, p: Params): string[] {
  return Object.entries(selector).map(([key, value]) =>
    value === null
      ? `NOT EXISTS (SELECT 1 FROM subcloud_label l WHERE l.subcloud_id = ${alias}.id AND l.key = ${p.add(key)})`
      : `EXISTS (SELECT 1 FROM subcloud_label l WHERE l.subcloud_id = ${alias}.id AND l.key = ${p.add(key)} AND l.value = ${p.add(value)})`,
  );
}
