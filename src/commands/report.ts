/** `dcm strategy report --html FILE`: the strategy as one self-contained HTML page. */
import { rateReportLines } from '../domain/start-rate.js';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { OperationError } from '../domain/errors.js';
import { outputProblem } from '../platform/files.js';
import { buildReport, type ReportInput, type ReportModel } from '../domain/report.js';
import { parseTimestamp } from '../domain/time.js';
import { shownTypeOptions, type ExtraArgs } from '../domain/options.js';
import { STRATEGY_ENDED, statesOf, type StrategyType } from '../domain/types.js';
import { listRuns } from '../store/report.js';
import { listEvents } from '../store/events.js';
import { DEFERRED_RUN_PREFIX } from '../store/deferrals.js';
import { listSteps } from '../store/steps.js';
import { getStrategy, listStages } from '../store/strategy.js';
import { listStageGates, type StageGateRow } from '../store/stage-gates.js';
import type { ArchivedStrategy } from '../store/archive.js';
import type { Db } from '../store/open.js';
import type { Strategy } from '../store/strategy.js';
import type { StepRow } from '../store/steps.js';
import type { EventRow } from '../store/events.js';
import type { RunRow } from '../store/report.js';
import { archivedOrCurrent, strategyIdOption, unknownStrategy } from './archive.js';
import { gateLines } from '../domain/stage-gates.js';
import { createOptionLines } from '../domain/create-options.js';
import { auditFindings } from '../domain/report-audit.js';
import { show, type Result } from './plain-results.js';
import { strategyEta } from './eta.js';
import { etaWords } from '../domain/status-hold.js';
import type { Outcome } from './results.js';
import { withReadDb, type Ctx } from './context.js';
import { strategyNotFound, theStrategy } from './strategy.js';

/**
 * The exec config's digest. A strategy keeps the parsed config, not the file; create digests the
 * file as it read it. A strategy made before it did has only the parsed config: that is digested,
 * and said to be (it will not match `sha256sum` of the file).
 */
function execConfigDigest(extra: ExtraArgs): ReportInput['strategy']['execConfig'] {
  if (typeof extra.exec_config_sha256 === 'string') return { sha256: extra.exec_config_sha256, of: 'file' };
  if (typeof extra.exec_config === 'string') return { sha256: crypto.createHash('sha256').update(extra.exec_config).digest('hex'), of: 'stored config' };
  return null;
}

/** How create chose the subclouds, by the flags that chose them (none: every eligible subcloud). */
function targetsOf(extra: ExtraArgs): [string, string][] {
  const out: [string, string][] = [];
  if (Array.isArray(extra.cloud_names) && extra.cloud_names.length) out.push(['cloud names', extra.cloud_names.join(' ')]);
  else if (typeof extra.cloud_name === 'string') out.push(['cloud name', extra.cloud_name]);
  if (typeof extra.group === 'string') out.push(['--group', extra.group]);
  if (Array.isArray(extra.labels) && extra.labels.length) out.push(['--label', extra.labels.join(' ')]);
  if (extra.force === true) out.push(['--force', 'True']);
  if (typeof extra.target_version === 'string') out.push(['--target-version', extra.target_version]);
  return out;
}

/** What a report is drawn from: the current strategy's rows, or a kept record's (store/archive.ts). */
interface ReportSource {
  s: Strategy;
  gates: StageGateRow[];
  stages: { stage: number; max_parallel: number; group_name: string | null; start_rate?: string | null }[];
  steps: StepRow[];
  runs: RunRow[];
  events: EventRow[];
}

async function currentSource(db: Db, type: StrategyType | undefined): Promise<ReportSource> {
  return { s: await theStrategy(db, type), gates: await listStageGates(db), stages: await listStages(db), steps: await listSteps(db), runs: await listRuns(db), events: await listEvents(db) };
}

function keptSource(k: ArchivedStrategy): ReportSource {
  const { extra_args, stop_on_failure, ...rest } = k.strategy;
  const s: Strategy = { ...rest, stop_on_failure: stop_on_failure === 1, extra: JSON.parse(extra_args) as ExtraArgs };
  return { s, gates: k.stages, stages: k.stages, steps: k.steps_rows, runs: k.runs, events: k.events.map((e) => ({ ...e, reason: e.reason ?? null })) };
}

function inputOf(src: ReportSource, nowUs: number): ReportInput {
  const { s } = src;
  const extra = s.extra;
  const runs = src.runs.map((r) => ({
    stepId: r.step_id,
    state: r.state,
    attempt: r.attempt,
    startUs: parseTimestamp(r.started_at),
    finishUs: r.finished_at === null ? null : parseTimestamp(r.finished_at),
    // A site that did not answer is not a failure (issue 34): its deferred runs are told apart.
    outcome: r.outcome === 'failed' && r.details.startsWith(DEFERRED_RUN_PREFIX) ? 'deferred' : r.outcome,
    details: r.details,
  }));
  const cloudOf = new Map(src.steps.map((st) => [st.id, st.cloud]));
  return {
    strategy: {
      type: s.type,
      state: s.state,
      createdAt: s.created_at,
      updatedAt: s.updated_at,
      stopOnFailure: s.stop_on_failure,
      subcloudApplyType: s.subcloud_apply_type,
      maxParallelSubclouds: s.max_parallel_subclouds,
      driver: String(extra.driver ?? 'sim'),
      maxFailures: s.max_failures,
      typeOptions: shownTypeOptions(s.type as StrategyType, extra),
      targets: targetsOf(extra),
      execConfig: execConfigDigest(extra),
      createOptions: [...createOptionLines(extra), ...rateReportLines(src.stages, src.steps.filter((st) => st.state === 'complete').length)],
      auditFindings: extra.audit_after === true ? auditFindings(runs, (id) => cloudOf.get(id) ?? '?') : undefined,
      stageGates: gateLines(src.gates) ?? undefined,
    },
    states: statesOf(s.type as StrategyType, extra as { cert_file?: string | null }) ?? [],
    stages: src.stages.map((st) => ({ stage: st.stage, window: st.max_parallel, group: st.group_name })),
    steps: src.steps.map((st) => ({ id: st.id, cloud: st.cloud, stage: st.stage, state: st.state, details: st.details, attempt: st.attempt })),
    runs,
    events: src.events.map((e) => ({ ...e, atUs: parseTimestamp(e.at) })),
    nowUs,
  };
}

/** A strategy not ended: its time left, as `strategy status` says it (the one estimator, eta.ts). */
async function withEta(db: Db, input: ReportInput, nowUs: number): Promise<ReportInput> {
  const s = await getStrategy(db);
  if (!s || STRATEGY_ENDED.includes(s.state)) return input;
  const est = await strategyEta(db, s, Math.floor(nowUs / 1000));
  return { ...input, strategy: { ...input.strategy, eta: etaWords(est.eta) } };
}

/**
 * Read everything the report shows in one read transaction (a snapshot while apply runs): the
 * current strategy's, or with `id` a kept one's (the current one's when it is its own id).
 */
async function readInput(ctx: Ctx, type: StrategyType | undefined, id: string | undefined, nowUs: number): Promise<ReportInput | null> {
  return await withReadDb(ctx, null, async (db) =>
    await db
      .transaction(async (tx): Promise<ReportInput> => {
        if (id === undefined) return withEta(tx, inputOf(await currentSource(tx, type), nowUs), nowUs);
        const found = await archivedOrCurrent(tx, id, type);
        return 'kept' in found ? inputOf(keptSource(found.kept), nowUs) : withEta(tx, inputOf(await currentSource(tx, type), nowUs), nowUs);
      })
      .deferred(),
  );
}

/**
 * Write `text` to `file` whole or not at all: a reader never sees half a report. Only a regular
 * file is replaced (platform/files.ts): a rename over a device or a FIFO would replace it.
 */
function writeWhole(file: string, text: string): void {
  const problem = outputProblem(file);
  if (problem) throw new OperationError(`cannot write ${file}: ${problem}`);
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such directory' : e.code === 'EISDIR' ? 'it is a directory' : e.code === 'EACCES' ? 'permission denied' : e.message;
    throw new OperationError(`cannot write ${file}: ${why}`);
  }
}

/** Draws the page from the report's model (the CLI's HTML renderer, cli/output/report-html.ts). */
export type RenderReport = (model: ReportModel, generatedAtUs: number) => string;

/**
 * The report of the strategy, drawn by `render` and written to `file` (`-`: stdout). The command
 * reads and builds the model; how it looks is the CLI's, which hands its renderer in.
 */
export async function strategyReport(
  ctx: Ctx,
  type: StrategyType | undefined,
  file: string,
  render: RenderReport,
  strategyId?: string,
): Promise<Result | Outcome> {
  const id = strategyIdOption(strategyId);
  const nowUs = Date.now() * 1000;
  const input = await readInput(ctx, type, id, nowUs) ?? (id === undefined ? strategyNotFound(type) : unknownStrategy(id));
  const model = buildReport(input);
  const html = render(model, nowUs);
  if (file === '-') return { text: html };
  writeWhole(file, html);
  return show([
    ['report', file],
    ['strategy type', model.strategy.type],
    ['state', model.strategy.state],
    ['steps', model.steps],
    ['complete', model.counts.complete],
    ['failed', model.counts.failed],
    ['deferred', model.counts.deferred],
    ['aborted', model.counts.aborted],
    ['stages', model.stages.length],
  ]);
}
