/**
 * A site's audit (`audit` in the exec config, the sim's sites): what the site says of itself, read
 * from the JSON its audit prints, compared with the inventory and with what a strategy meant to
 * leave it at. Pure: text and rows in, facts out.
 */
import { ENDPOINTS, SYNC_STATUSES, type Endpoint, type SyncStatus } from './types.js';

/** What a site said: every part optional (a site that says nothing of a field leaves it as it is). */
export interface AuditReport {
  software_version?: string;
  sync?: Partial<Record<Endpoint, SyncStatus>>;
  availability?: 'online' | 'offline';
}

export type AuditParse = { ok: true; report: AuditReport } | { ok: false; problem: string };

const AVAILABILITY = ['online', 'offline'];

/** How long an audit's output may be (bytes kept): a site's state is a few lines of JSON. */
export const AUDIT_OUTPUT_MAX = 64 * 1024;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Read an audit's output: one JSON object (surrounding blank lines allowed). Unknown keys are
 * ignored, so that a site's script may print more than dcm reads; a known key with a value dcm
 * cannot take is the audit's failure, naming the key, rather than a silent half-update.
 * `kube_rootca` is taken for `kube-rootca` (the spelling of the subcloud's field names).
 */
export function parseAudit(text: string): AuditParse {
  const trimmed = text.trim();
  if (trimmed === '') return { ok: false, problem: 'the audit printed nothing (expected a JSON object)' };
  let doc: unknown;
  try {
    doc = JSON.parse(trimmed);
  } catch {
    // The parser's own words repeat the text; its first line says what the site printed.
    const first = trimmed.split('\n')[0].slice(0, 60);
    return { ok: false, problem: `the audit printed no valid JSON: ${JSON.stringify(first)}` };
  }
  if (!isObject(doc)) return { ok: false, problem: 'the audit printed JSON that is not an object' };
  const report: AuditReport = {};
  const sv = doc.software_version;
  if (sv !== undefined && sv !== null) {
    if ((typeof sv !== 'string' && typeof sv !== 'number') || String(sv).trim() === '') {
      return { ok: false, problem: `software_version: expected a non-empty string, got ${JSON.stringify(sv)}` };
    }
    report.software_version = String(sv);
  }
  const av = doc.availability;
  if (av !== undefined && av !== null) {
    if (typeof av !== 'string' || !AVAILABILITY.includes(av)) {
      return { ok: false, problem: `availability: expected online or offline, got ${JSON.stringify(av)}` };
    }
    report.availability = av as 'online' | 'offline';
  }
  const sync = doc.sync;
  if (sync !== undefined && sync !== null) {
    if (!isObject(sync)) return { ok: false, problem: 'sync: expected an object of endpoint to status' };
    const out: Partial<Record<Endpoint, SyncStatus>> = {};
    for (const [key, value] of Object.entries(sync)) {
      const e = (key === 'kube_rootca' ? 'kube-rootca' : key) as Endpoint;
      if (!ENDPOINTS.includes(e)) continue;
      if (typeof value !== 'string' || !(SYNC_STATUSES as readonly string[]).includes(value)) {
        return { ok: false, problem: `sync.${key}: expected ${SYNC_STATUSES.join(', ')}, got ${JSON.stringify(value)}` };
      }
      out[e] = value as SyncStatus;
    }
    report.sync = out;
  }
  return { ok: true, report };
}

/** The inventory's side of what an audit can change. */
export interface AuditedFields {
  software_version: string | null;
  availability: string;
  sync: Record<Endpoint, SyncStatus>;
}

export interface AuditChange {
  /** As `subcloud show` names it: `software_version`, `availability`, `<endpoint>_sync_status`. */
  field: string;
  before: string | null;
  after: string;
}

/** As `subcloud show` prints it (dcmanager's spelling: `kube-rootca_sync_status`). */
export function syncFieldName(e: Endpoint): string {
  return `${e}_sync_status`;
}

/** What the report changes in the inventory, in `subcloud show`'s order of the fields. */
export function auditChanges(current: AuditedFields, report: AuditReport): AuditChange[] {
  const out: AuditChange[] = [];
  if (report.software_version !== undefined && report.software_version !== current.software_version) {
    out.push({ field: 'software_version', before: current.software_version, after: report.software_version });
  }
  if (report.availability !== undefined && report.availability !== current.availability) {
    out.push({ field: 'availability', before: current.availability, after: report.availability });
  }
  for (const e of ENDPOINTS) {
    const v = report.sync?.[e];
    if (v !== undefined && v !== current.sync[e]) out.push({ field: syncFieldName(e), before: current.sync[e], after: v });
  }
  return out;
}

/**
 * The software version a strategy leaves a site at, when it names one: `--target-version`, else
 * sw-deploy's `--release-id`.
 * A release id names a release (`stx-24.09.1`, `24.09.300`) while a subcloud's software version is
 * its `YY.MM` (`24.09`): the first `YY.MM` in the id, else the id itself.
 */
export function targetVersion(type: string, extra: Record<string, unknown>): string | null {
  // `--target-version V` (patch, sw-deploy) names it outright.
  if (typeof extra.target_version === 'string' && extra.target_version !== '') return extra.target_version;
  if (type !== 'sw-deploy') return null;
  const id = extra.release_id;
  if (typeof id !== 'string' || id === '') return null;
  return /(?<!\d)(\d\d\.\d\d)(?!\d)/.exec(id)?.[1] ?? id;
}

/** A reported software version is the target's when they are equal, or share their `YY.MM`. */
function sameVersion(reported: string, target: string): boolean {
  if (reported === target) return true;
  const yymm = (v: string) => /^(\d\d\.\d\d)(?:\.|$)/.exec(v)?.[1] ?? null;
  return yymm(reported) !== null && yymm(reported) === yymm(target);
}

/**
 * Where a completed step's site disagrees with what the strategy did: its type's endpoint is not
 * in-sync, or its software version is not the target (when the strategy names one). A site that
 * does not report a part is not taken to disagree on it, but a missing endpoint status or
 * version is said (it proves nothing). Null: the site agrees.
 */
export function auditDisagreement(report: AuditReport, expect: { endpoint: Endpoint | null; target: string | null }): string | null {
  const problems: string[] = [];
  if (expect.endpoint) {
    const v = report.sync?.[expect.endpoint];
    if (v === undefined) problems.push(`the site reports no ${expect.endpoint} sync status`);
    else if (v !== 'in-sync') problems.push(`the site reports ${expect.endpoint} ${v}`);
  }
  if (expect.target) {
    const v = report.software_version;
    if (v === undefined) problems.push(`the site reports no software version (expected ${expect.target})`);
    else if (!sameVersion(v, expect.target)) problems.push(`the site reports software version ${v}, not ${expect.target}`);
  }
  return problems.length ? problems.join('; ') : null;
}
