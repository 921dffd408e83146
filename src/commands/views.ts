/** Rows of the store turned into the columns dcmanager prints (SPEC §4). */
import { ENDPOINTS } from '../domain/types.js';
import { overallSync } from '../domain/sync.js';
import { toRecord, SYNC_COLUMN, type SubcloudRow } from '../store/subclouds.js';
import type { GroupRow } from '../store/groups.js';
import type { Strategy } from '../store/strategy.js';
import type { HistoryRow, StepRow } from '../store/steps.js';
import { list, show, type ListResult, type ShowResult, type Value } from '../cli/output/result.js';

export const SUBCLOUD_COLUMNS = ['id', 'name', 'management', 'availability', 'deploy status', 'sync', 'prestage status'];

export function subcloudList(rows: SubcloudRow[]): ListResult {
  return list(
    SUBCLOUD_COLUMNS,
    rows.map((r) => [r.id, r.name, r.management, r.availability, r.deploy_status, overallSync(toRecord(r).sync), r.prestage_status]),
  );
}

export function subcloudShow(r: SubcloudRow): ShowResult {
  const fields: [string, Value][] = [
    ['id', r.id],
    ['name', r.name],
    ['description', r.description],
    ['location', r.location],
    ['software_version', r.software_version],
    ['management', r.management],
    ['availability', r.availability],
    ['deploy_status', r.deploy_status],
    ['prestage_status', r.prestage_status],
    ['group_id', r.group_id],
    ['group_name', r.group_name],
    ['sync', overallSync(toRecord(r).sync)],
    ['created_at', r.created_at],
    ['updated_at', r.updated_at],
  ];
  for (const e of ENDPOINTS) fields.push([`${e}_sync_status`, r[SYNC_COLUMN[e] as keyof SubcloudRow] as string]);
  return show(fields);
}

export function groupList(rows: GroupRow[]): ListResult {
  return list(['id', 'name', 'description'], rows.map((g) => [g.id, g.name, g.description]));
}

/** A group record; `created_at` is null only for the Default of a file not created yet. */
export function groupShow(g: Omit<GroupRow, 'created_at'> & { created_at: string | null }): ShowResult {
  return show([
    ['id', g.id],
    ['name', g.name],
    ['description', g.description],
    ['update apply type', g.update_apply_type],
    ['max parallel subclouds', g.max_parallel_subclouds],
    ['created_at', g.created_at],
    ['updated_at', g.updated_at],
  ]);
}

export function strategyShow(s: Strategy): ShowResult {
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
      ['delete_option', Boolean(x.delete_option)],
      ['with_prestage', Boolean(x.with_prestage)],
      ['kube_upgrade', (x.kube_upgrade as string | null) ?? null],
    );
  }
  if (s.type === 'prestage') fields.push(['prestage software version', (x.prestage_software_version as string | null) ?? null]);
  fields.push(['state', s.state], ['created_at', s.created_at], ['updated_at', s.updated_at]);
  return show(fields);
}

export const STEP_COLUMNS = ['cloud', 'stage', 'state', 'details', 'started_at', 'finished_at'];

export function stepShow(r: StepRow): ShowResult {
  return show([
    ['cloud', r.cloud],
    ['stage', r.stage],
    ['state', r.state],
    ['details', r.details],
    ['started_at', r.started_at],
    ['finished_at', r.finished_at],
    ['created_at', r.created_at],
    ['updated_at', r.updated_at],
  ]);
}

export const HISTORY_COLUMNS = ['cloud', 'state', 'attempt', 'started_at', 'finished_at', 'outcome', 'details'];

export function historyList(rows: HistoryRow[]): ListResult {
  return list(HISTORY_COLUMNS, rows.map((r) => [r.cloud, r.state, r.attempt, r.started_at, r.finished_at, r.outcome, r.details]));
}
