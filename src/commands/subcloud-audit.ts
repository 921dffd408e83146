/**
 * `dcm subcloud audit [NAMES...|--group G|--all]`: ask each site what it is (its audit: the sim's
 * sites, or an exec config's `audit` command), at most `--max-parallel` at once, and make the
 * inventory say what the sites say. Prints what changed (name, field, before, after); a site whose
 * audit fails keeps its row as it was, is named on stderr, and makes the exit code 1.
 */
import { setMaxListeners } from 'node:events';
import pLimit from 'p-limit';
import { OperationError, UsageError } from '../domain/errors.js';
import { auditChanges, type AuditReport } from '../domain/audit.js';
import { fieldTexts } from '../domain/fields.js';
import { readLabels } from '../domain/inventory.js';
import { ENDPOINTS, type Endpoint, type SyncStatus } from '../domain/types.js';
import { createAuditor, parseDriverName } from '../drivers/index.js';
import { findGroup } from '../store/groups.js';
import { listSubclouds, subcloudById, updateSubcloud, type SubcloudRow } from '../store/subclouds.js';
import { SYNC_COLUMN } from '../store/subclouds.js';
import type { Db } from '../store/open.js';
import { immediate, withExistingWriteDb, withReadDb, type RunCtx } from './context.js';
import { mustFind } from './subclouds.js';
import { list, type Value } from './plain-results.js';
import type { Outcome } from './results.js';

export const AUDIT_COLUMNS = ['name', 'field', 'before', 'after'];
/** Sites asked at once unless `--max-parallel` says otherwise. */
export const AUDIT_PARALLEL_DEFAULT = 20;
const AUDIT_PARALLEL_MAX = 5000;
/** Reports written together: one transaction per this many sites (and one at the end). */
const WRITE_BATCH = 100;

export interface AuditInput {
  names: string[];
  group?: string;
  all?: boolean;
  /** `--max-parallel` as typed (checked here). */
  maxParallel?: string;
  driver?: string;
  execConfig?: string;
  /** Called after each site's audit: how many are done of how many, and how many failed. */
  onProgress?: (done: number, total: number, failed: number) => void;
}

interface Target {
  index: number;
  id: number;
  name: string;
}

function parseParallel(text: string | undefined): number {
  if (text === undefined) return AUDIT_PARALLEL_DEFAULT;
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > AUDIT_PARALLEL_MAX) {
    throw new UsageError(`Invalid --max-parallel value: ${text}. It must be a whole number from 1 to ${AUDIT_PARALLEL_MAX}`);
  }
  return n;
}

/** Which subclouds: the names given (in that order), a group's, or every one; exactly one of the three. */
async function selectTargets(db: Db, input: AuditInput): Promise<SubcloudRow[]> {
  if (input.group !== undefined) {
    const g = await findGroup(db, input.group);
    if (!g) throw new OperationError(`Subcloud group ${input.group} does not exist`);
    return await listSubclouds(db, g.id);
  }
  if (input.all) return await listSubclouds(db);
  const seen = new Set<number>();
  const out: SubcloudRow[] = [];
  for (const ref of input.names) {
    const row = await mustFind(db, ref);
    if (!seen.has(row.id)) out.push(row);
    seen.add(row.id);
  }
  return out;
}

function audited(row: SubcloudRow) {
  const sync = {} as Record<Endpoint, SyncStatus>;
  for (const e of ENDPOINTS) sync[e] = row[SYNC_COLUMN[e] as keyof SubcloudRow] as SyncStatus;
  return { software_version: row.software_version, availability: row.availability, sync };
}

export async function subcloudAudit(ctx: RunCtx, input: AuditInput): Promise<Outcome> {
  // Options on their own first: a bad value is a usage error whatever the file holds.
  const chosen = [input.names.length > 0, input.group !== undefined, Boolean(input.all)].filter(Boolean).length;
  if (chosen === 0) throw new UsageError('name the subclouds to audit, or give --group G or --all');
  if (chosen > 1) throw new UsageError('give subcloud names, --group or --all: only one of them');
  const parallel = parseParallel(input.maxParallel);
  // -c names this command's columns: an unknown one is refused before any site is asked.
  ctx.checkResult?.(list(AUDIT_COLUMNS, []));
  const writeCtx = { dbPath: ctx.dbPath };
  const driverName = parseDriverName(input.driver);
  if (driverName === 'sim' && input.execConfig !== undefined) {
    throw new UsageError('--exec-config is an option of the exec driver, not of --driver sim');
  }
  if (driverName === 'exec' && !input.execConfig) throw new UsageError('--driver exec needs --exec-config FILE (a config with "audit")');

  const rows = await withReadDb(ctx, null as SubcloudRow[] | null, (db) => selectTargets(db, input));
  if (rows === null) {
    // No file: no subcloud. Names were given: the first is not there, as `show` would say.
    if (input.names.length) throw new OperationError(`Subcloud ${input.names[0]} does not exist`);
    if (input.group !== undefined) throw new OperationError(`Subcloud group ${input.group} does not exist`);
  }
  const targets: Target[] = (rows ?? []).map((r, index) => ({ index, id: r.id, name: r.name }));
  const fields = new Map((rows ?? []).map((r) => [r.id, { fields: fieldTexts(r), labels: readLabels(r.labels) }]));
  // The config is read (and checked) even for an empty selection: a bad file is said at once.
  // Without a file there is no subcloud, and no sim site to open beside it.
  if (rows === null && driverName === 'sim') return { result: list(AUDIT_COLUMNS, []), notes: ['audited 0 subcloud(s): 0 changed, 0 failed'] };
  const auditor = await createAuditor(ctx.dbPath, driverName, input.execConfig);

  const changes: { index: number; row: Value[] }[] = [];
  const failures: { index: number; text: string }[] = [];
  let pending: { target: Target; report: AuditReport }[] = [];
  let done = 0;

  /** Each report against the row as it is now (another shell may have changed it since the read). */
  const write = async () => {
    const batch = pending;
    pending = [];
    if (batch.length === 0) return;
    await withExistingWriteDb(writeCtx, async (db) =>
      await immediate(db, async (tx) => {
        for (const { target, report } of batch) {
          const row = await subcloudById(tx, target.id);
          if (!row) {
            failures.push({ index: target.index, text: `${target.name}: deleted while it was audited` });
            continue;
          }
          const found = auditChanges(audited(row), report);
          if (found.length === 0) continue;
          const update: Parameters<typeof updateSubcloud>[2] = {};
          for (const c of found) {
            if (c.field === 'software_version') update.software_version = c.after;
            else if (c.field === 'availability') update.availability = c.after;
          }
          const sync = Object.fromEntries(ENDPOINTS.filter((e) => report.sync?.[e] !== undefined).map((e) => [e, report.sync![e]]));
          if (Object.keys(sync).length) update.sync = sync;
          await updateSubcloud(tx, row.id, update);
          for (const c of found) changes.push({ index: target.index, row: [target.name, c.field, c.before, c.after] });
        }
      }),
    );
  };

  const limit = pLimit(parallel);
  // Ctrl-C or SIGTERM: no site is asked any more, the audits in flight are stopped (their process
  // groups ended), what was learnt is written, and the exit is 130 / 143.
  const stop = new AbortController();
  // Each audit in flight listens to the stop (at most `parallel` at once, each removed as its audit
  // ends): past Node's default of 10 it would warn of a leak that is not one (issue 34).
  setMaxListeners(parallel + 1, stop.signal);
  let stoppedBy: NodeJS.Signals | null = null;
  const onSignal = (sig: NodeJS.Signals) => {
    stoppedBy ??= sig;
    // Queued sites see the stop when their turn comes (clearQueue would leave their promises pending).
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await Promise.all(
      targets.map((t) =>
        limit(async () => {
          if (stop.signal.aborted) return;
          const f = fields.get(t.id)!;
          const outcome = await auditor.audit({ cloud: t.name, subcloud: f.fields, labels: f.labels, signal: stop.signal });
          done++;
          if (outcome.ok) {
            pending.push({ target: t, report: outcome.report });
            if (pending.length >= WRITE_BATCH) await write();
          } else failures.push({ index: t.index, text: `${t.name}: ${outcome.reason}` });
          input.onProgress?.(done, targets.length, failures.length);
        }),
      ),
    );
    await write();
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await auditor.close();
  }

  changes.sort((a, b) => a.index - b.index);
  failures.sort((a, b) => a.index - b.index);
  const changed = new Set(changes.map((c) => c.index)).size;
  const asked = done;
  const summary =
    stoppedBy === null
      ? `audited ${targets.length} subcloud(s): ${changed} changed, ${failures.length} failed`
      : `stopped by ${stoppedBy}: audited ${asked} of ${targets.length} subcloud(s): ${changed} changed, ${failures.length} failed`;
  return {
    result: list(AUDIT_COLUMNS, changes.map((c) => c.row)),
    warnings: failures.map((f) => f.text),
    notes: [summary],
    exitCode: stoppedBy === 'SIGINT' ? 130 : stoppedBy === 'SIGTERM' ? 143 : failures.length ? 1 : 0,
  };
}
