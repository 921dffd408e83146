/**
 * Command results turned into the columns dcmanager's client prints (SPEC §4): which fields,
 * in which order, under which names. A result that is already a table (list/show) passes through.
 */
import { isRowStream, type GroupRecord, type RowStream, type Strategy, type SubcloudRow } from '../../commands/results.js';
import { overallSync } from '../../domain/sync.js';
import { ENDPOINTS, type Endpoint, type SyncStatus } from '../../domain/types.js';
import { list, show, type Table, type Value } from './result.js';
import { readLabels } from '../../domain/inventory.js';
import { dcmanagerStage, STAGE_NUMBER_COLUMN } from '../../domain/step-stage.js';
import type { StepLine } from '../../commands/results.js';

export type { Printable } from '../../commands/results.js';
import type { Printable } from '../../commands/results.js';

export interface ViewOptions {
  /** `-c` was given: dcmanager's `subcloud list` then picks from its detail columns. */
  columnsGiven: boolean;
  /** The names `-c` gave: a subcloud list adds the columns of its own only when named (LIST_EXTRAS). */
  columns?: readonly string[];
}

const SYNC_FIELD: Record<Endpoint, keyof SubcloudRow> = {
  patching: 'patching_sync',
  usm: 'usm_sync',
  kubernetes: 'kubernetes_sync',
  'kube-rootca': 'kube_rootca_sync',
  firmware: 'firmware_sync',
};

function sync(r: SubcloudRow): SyncStatus {
  const s = {} as Record<Endpoint, SyncStatus>;
  for (const e of ENDPOINTS) s[e] = r[SYNC_FIELD[e]] as SyncStatus;
  return overallSync(s);
}

export const SUBCLOUD_COLUMNS = ['id', 'name', 'management', 'availability', 'deploy status', 'sync', 'backup status', 'prestage status'];

function basicLine(r: SubcloudRow): Value[] {
  return [r.id, r.name, r.management, r.availability, r.deploy_status, sync(r), r.backup_status, r.prestage_status];
}

/** dcmanager's basic_detail_format: the detail columns, in its order. */
function detailFields(r: SubcloudRow): [string, Value][] {
  return [
    ['id', r.id],
    ['name', r.name],
    ['description', r.description],
    ['location', r.location],
    ['software_version', r.software_version],
    ['management', r.management],
    ['availability', r.availability],
    ['deploy_status', r.deploy_status],
    ['management_subnet', r.management_subnet],
    ['management_start_ip', r.management_start_ip],
    ['management_end_ip', r.management_end_ip],
    ['management_gateway_ip', r.management_gateway_ip],
    ['systemcontroller_gateway_ip', r.systemcontroller_gateway_ip],
    ['group_id', r.group_id],
    ['peer_group_id', r.peer_group_id],
    ['created_at', r.created_at],
    ['updated_at', r.updated_at],
    ['backup_status', r.backup_status],
    ['backup_datetime', r.backup_datetime],
    ['prestage_status', r.prestage_status],
    ['prestage_versions', r.prestage_versions],
  ];
}

const DETAIL_COLUMNS = detailFields({} as SubcloudRow).map(([k]) => k);
/** dcmanager's detail_list_format: the detail columns with `sync` after deploy_status. */
const DETAIL_LIST_COLUMNS = [...DETAIL_COLUMNS.slice(0, 8), 'sync', ...DETAIL_COLUMNS.slice(8)];

function detailListLine(r: SubcloudRow): Value[] {
  const v = detailFields(r).map(([, x]) => x);
  return [...v.slice(0, 8), sync(r), ...v.slice(8)];
}

/** The server's order of the endpoint rows: its query sorts them by endpoint type. */
const SHOW_ORDER = [...ENDPOINTS].sort();

/**
 * The server's reply to manage, unmanage and prestage: a subcloud without its endpoint statuses,
 * which the client prints up to prestage_versions; prestage adds the release it prestages. Labels,
 * dcm's own, are not part of it.
 */
function subcloudReply(r: SubcloudRow, reply: { prestageSoftwareVersion?: string | null }): Table {
  const fields = detailFields(r);
  // detail_prestage_format adds the release only when the reply has one.
  if (reply.prestageSoftwareVersion) fields.push(['prestage_software_version', reply.prestageSoftwareVersion]);
  return show(fields);
}

/** dcmanager's detail_show_format (and, with -d, the fields of subcloud_additional_details). */
function subcloudShow(r: SubcloudRow, detail: boolean): Table {
  const fields = detailFields(r);
  for (const e of SHOW_ORDER) fields.push([`${e}_sync_status`, r[SYNC_FIELD[e]] as string]);
  // dcmanager's client leaves these out when the server could not tell (`unavailable`, `unknown`);
  // a value dcm was never given is one it cannot tell either.
  if (detail && r.oam_floating_ip !== null && r.oam_floating_ip !== 'unavailable') fields.push(['oam_floating_ip', r.oam_floating_ip]);
  if (detail && r.deploy_config_sync_status !== null && r.deploy_config_sync_status !== 'unknown') {
    fields.push(['deploy_config_sync_status', r.deploy_config_sync_status]);
  }
  fields.push(['region_name', r.region_name]);
  // dcm's own field, printed only when there is something to print, so that a subcloud without
  // labels shows exactly what dcmanager's client shows.
  if (r.labels) fields.push(['labels', r.labels]);
  return show(fields);
}

function groupShow(g: GroupRecord): Table {
  return show([
    ['id', g.id],
    ['name', g.name],
    ['description', g.description],
    ['update apply type', g.update_apply_type],
    ['max parallel subclouds', g.max_parallel_subclouds],
    ['created_at', g.created_at],
    ['updated_at', g.updated_at],
    // dcm's own fields, printed only for a group that has a window: without one, exactly what
    // dcmanager's client shows.
    ...(g.maintenance_window
      ? ([
          ['maintenance window', g.maintenance_window],
          ['maintenance tz', g.maintenance_tz ?? 'UTC'],
        ] as [string, Value][])
      : []),
  ]);
}

/** The strategy record; sw-deploy and prestage add dcmanager's fields for their type. */
export function strategyShow(s: Strategy): Table {
  const x = s.extra;
  const fields: [string, Value][] = [
    ['strategy type', s.type],
    ['subcloud apply type', s.subcloud_apply_type],
    ['max parallel subclouds', s.max_parallel_subclouds],
    ['stop on failure', s.stop_on_failure],
  ];
  if (s.type === 'sw-deploy') {
    fields.push(
      ['release_id', (x.release_id as string | null) ?? null],
      ['snapshot', Boolean(x.snapshot)],
      ['rollback', Boolean(x.rollback)],
      // dcmanager names the option given: delete (or the deprecated with_delete), cleanup.
      ['delete_option', x.delete_option === true ? 'delete' : x.cleanup === true ? 'cleanup' : null],
      ['with_prestage', x.with_prestage ? 'with_prestage' : null],
      // The client's extract_extra_args drops a null, and the column's default is an empty string.
      ['kube_upgrade', (x.kube_upgrade as string | null) ?? ''],
    );
  }
  // The old client's patch strategy says whether it stops after the upload (its 'upload only').
  if (s.type === 'patch') fields.push(['upload only', Boolean(x.upload_only)]);
  // dcmanager prints the prestage release only when one was given.
  if (s.type === 'prestage' && x.prestage_software_version) {
    fields.push(['prestage software version', x.prestage_software_version as string]);
  }
  fields.push(['state', s.state], ['created_at', s.created_at], ['updated_at', s.updated_at]);
  return show(fields);
}

export const STEP_COLUMNS = ['cloud', 'stage', 'state', 'details', 'started_at', 'finished_at'];

/**
 * The step list's columns and a row of it: dcmanager's, the stage as the server's word
 * (domain/step-stage.ts); dcm's own stage number only when `-c` names it, after dcmanager's
 * columns, so that any listing that does not ask for it is the client's byte for byte.
 */
function stepLines(wanted: readonly string[] = []): { columns: string[]; line: (r: StepLine) => Value[] } {
  const own = wanted.includes(STAGE_NUMBER_COLUMN);
  return {
    columns: own ? [...STEP_COLUMNS, STAGE_NUMBER_COLUMN] : STEP_COLUMNS,
    line: ([cloud, stage, state, details, started, finished]) => {
      const row: Value[] = [cloud, dcmanagerStage(state), state, details, started, finished];
      if (own) row.push(stage);
      return row;
    },
  };
}
export const HISTORY_COLUMNS = ['cloud', 'state', 'attempt', 'started_at', 'finished_at', 'outcome', 'details'];

/**
 * Columns of `subcloud list` that dcmanager's client does not list, added after the detail
 * columns only when `-c` names them (`-c name -c oam_floating_ip -c label.port`, to write an
 * ssh_config from): any other listing stays byte for byte the client's.
 */
const LIST_EXTRAS: [string, (r: SubcloudRow) => Value][] = [
  ['oam_floating_ip', (r) => r.oam_floating_ip],
  ['deploy_config_sync_status', (r) => r.deploy_config_sync_status],
  ['region_name', (r) => r.region_name],
  ['labels', (r) => r.labels],
  // Each endpoint's sync status by the name `subcloud show` prints it (issue 34: `-c
  // patching_sync_status` was dropped without a word), in show's order.
  ...SHOW_ORDER.map((e): [string, (r: SubcloudRow) => Value] => [`${e}_sync_status`, (r) => r[SYNC_FIELD[e]] as string]),
];

function subcloudLines(detail: boolean, wanted: readonly string[] = []): { columns: string[]; line: (r: SubcloudRow) => Value[] } {
  if (!detail) return { columns: SUBCLOUD_COLUMNS, line: basicLine };
  const extras = LIST_EXTRAS.filter(([c]) => wanted.includes(c));
  const labelKeys = [...new Set(wanted.filter((c) => c.startsWith('label.')).map((c) => c.slice('label.'.length)))];
  if (extras.length === 0 && labelKeys.length === 0) return { columns: DETAIL_LIST_COLUMNS, line: detailListLine };
  return {
    columns: [...DETAIL_LIST_COLUMNS, ...extras.map(([c]) => c), ...labelKeys.map((k) => `label.${k}`)],
    line: (r) => {
      const labels = labelKeys.length ? readLabels(r.labels) : {};
      return [...detailListLine(r), ...extras.map(([, get]) => get(r)), ...labelKeys.map((k) => labels[k] ?? null)];
    },
  };
}

/** A list whose rows are made one at a time, as they are read (a streamed list). */
export interface LazyList {
  columns: string[];
  rows: AsyncIterable<Value[]>;
}

/** The lazy form of a list result read as it is printed (RowStream), or null for any other. */
export function toLazyList(r: Printable, opts: ViewOptions): LazyList | null {
  if (r.kind === 'steps' && isRowStream(r.rows)) {
    const v = stepLines(opts.columns);
    const rows = r.rows;
    return {
      columns: v.columns,
      rows: {
        async *[Symbol.asyncIterator]() {
          for await (const x of rows) yield v.line(x);
        },
      },
    };
  }
  if (r.kind === 'subclouds' && isRowStream(r.rows)) {
    const v = subcloudLines(r.detail || opts.columnsGiven, opts.columns);
    const rows = r.rows;
    return {
      columns: v.columns,
      rows: {
        async *[Symbol.asyncIterator]() {
          for await (const x of rows) yield v.line(x);
        },
      },
    };
  }
  return null;
}

/**
 * The result with a list read as it is printed (a RowStream) gathered into its rows: a table is as
 * wide as its widest cell, and a sort takes every row.
 */
export async function gathered(r: Printable): Promise<Printable> {
  if ((r.kind === 'steps' || r.kind === 'subclouds') && isRowStream<unknown>(r.rows)) {
    const rows: unknown[] = [];
    for await (const x of r.rows) rows.push(x);
    return { ...r, rows } as Printable;
  }
  return r;
}

/** A list's rows, gathered already (`gathered`). */
function rowsOf<T>(rows: readonly T[] | RowStream<T>): readonly T[] {
  if (isRowStream(rows)) throw new Error('a list read as it is printed is gathered first (views.ts: gathered)');
  return rows;
}

/** The table to print, or null when the command prints nothing. */
export function toTable(r: Printable, opts: ViewOptions): Table | null {
  switch (r.kind) {
    case 'list':
    case 'show':
      return r;
    case 'subclouds': {
      const v = subcloudLines(r.detail || opts.columnsGiven, opts.columns);
      return list(v.columns, rowsOf(r.rows).map(v.line));
    }
    case 'group-subclouds':
      return list(DETAIL_COLUMNS, r.rows.map((x) => detailFields(x).map(([, v]) => v)));
    case 'subcloud':
      return r.reply ? subcloudReply(r.row, r.reply) : subcloudShow(r.row, r.detail);
    case 'groups':
      // The window is dcm's own column, there only when some group has one (dcmanager's three otherwise).
      return r.rows.some((g) => g.maintenance_window)
        ? list(
            ['id', 'name', 'description', 'maintenance window'],
            r.rows.map((g) => [g.id, g.name, g.description, g.maintenance_window ? `${g.maintenance_window} (${g.maintenance_tz ?? 'UTC'})` : null]),
          )
        : list(['id', 'name', 'description'], r.rows.map((g) => [g.id, g.name, g.description]));
    case 'group':
      return groupShow(r.row);
    case 'strategy':
      return strategyShow(r.strategy);
    case 'steps': {
      const v = stepLines(opts.columns);
      return list(v.columns, rowsOf(r.rows).map(v.line));
    }
    case 'step':
      return show([
        ['cloud', r.row.cloud],
        ['stage', dcmanagerStage(r.row.state)],
        ['state', r.row.state],
        ['details', r.row.details],
        ['started_at', r.row.started_at],
        ['finished_at', r.row.finished_at],
        ['created_at', r.row.created_at],
        ['updated_at', r.row.updated_at],
        // dcm's own, only when named (as in the list).
        ...(opts.columns?.includes(STAGE_NUMBER_COLUMN) ? ([[STAGE_NUMBER_COLUMN, r.row.stage]] as [string, Value][]) : []),
      ]);
    case 'history':
      return list(HISTORY_COLUMNS, r.rows.map((h) => [h.cloud, h.state, h.attempt, h.started_at, h.finished_at, h.outcome, h.details]));
    case 'imported':
      return list(['imported'], [[r.count]]);
    case 'nothing':
      return null;
  }
}
