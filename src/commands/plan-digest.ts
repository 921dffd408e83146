/**
 * A plan you can pin (domain/plan-digest.ts): the digest of the plan `strategy create` would write,
 * printed by `--dry-run` and checked by `--plan DIGEST`, and the plans a dry run showed, kept on
 * this machine so that a create refused by its digest can say what changed.
 *
 * The plans kept are the user's, not the store's (a dry run writes nothing to the store): one JSON
 * file per digest under `$XDG_STATE_HOME/dcm/plans` (default `~/.local/state/dcm/plans`), the
 * latest KEEP of them. Without the reviewed one (another machine), a refusal says the plan
 * differs, and that what changed cannot be named here.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OperationError, UsageError } from '../domain/errors.js';
import { isDigest, planChanges, PlanHasher, type KeptPlan, type PlanHead, type PlanStage } from '../domain/plan-digest.js';
import type { StagePlan } from '../domain/planning.js';
import type { Db } from '../store/open.js';
import { filledStages, groupStageDefaults, setPlanDigest } from '../store/plan.js';

/** How many reviewed plans are kept (the oldest go first). */
const KEEP = 50;

/** `--plan DIGEST` as given: a digest as printed, or a usage error. */
export function pinnedDigest(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  if (!isDigest(text)) throw new UsageError(`invalid --plan '${text}': give the plan digest strategy create --dry-run printed (12 hex digits)`);
  return text.trim().toLowerCase();
}

/** Where the reviewed plans are kept. */
export function plansDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : path.join(os.homedir(), '.local', 'state');
  return path.join(state, 'dcm', 'plans');
}

/**
 * A dry run's plan, kept for a later `--plan` to name what changed. Best effort: a plan that
 * cannot be kept (a read-only home) costs the refusal its details, never the dry run.
 */
export function keepPlan(plan: KeptPlan): boolean {
  const dir = plansDir();
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, `${plan.digest}.json`);
    const tmp = path.join(dir, `.${plan.digest}.${process.pid}.tmp`);
    fs.writeFileSync(tmp, JSON.stringify(plan), { mode: 0o600 });
    fs.renameSync(tmp, file);
    const kept = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => ({ f, t: fs.statSync(path.join(dir, f)).mtimeMs }));
    kept.sort((a, b) => b.t - a.t);
    for (const old of kept.slice(KEEP)) fs.rmSync(path.join(dir, old.f), { force: true });
    return true;
  } catch {
    return false;
  }
}

function keptPlan(digest: string): KeptPlan | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(plansDir(), `${digest}.json`), 'utf8')) as KeptPlan;
  } catch {
    return null;
  }
}

/** The create's own stage options, which win over a group's defaults (as store/stage-gates.ts fills them). */
export interface StageOptions {
  maxFailures: string | null;
  gate: string | null;
  gateCheck: string | null;
  startRate: string | null;
}

/** The stages of a plan not written (a dry run): the create's options, else each group's defaults. */
export async function plannedStages(db: Db | null, stages: readonly StagePlan[], o: StageOptions): Promise<PlanStage[]> {
  const defaults = db ? await groupStageDefaults(db) : new Map();
  return stages.map((s) => {
    const d = defaults.get(s.groupName);
    return {
      stage: s.stage,
      window: s.window,
      group: s.groupName,
      maxFailures: o.maxFailures ?? d?.max_failures ?? null,
      gate: o.gate ?? d?.gate ?? 'none',
      gateCheck: o.gateCheck,
      startRate: o.startRate ?? d?.start_rate ?? null,
    };
  });
}

/** The stages as create wrote them, in the same words. */
export async function writtenStages(db: Db): Promise<PlanStage[]> {
  return (await filledStages(db)).map((s) => ({
    stage: s.stage,
    window: s.max_parallel,
    group: s.group_name,
    maxFailures: s.max_failures,
    gate: s.gate,
    gateCheck: s.gate_check,
    startRate: s.start_rate,
  }));
}

/** A hasher of the plan about to be made; it keeps the subclouds when they may be compared or kept. */
export function planHasher(head: PlanHead, keep: boolean): PlanHasher {
  return new PlanHasher(head, keep);
}

/**
 * Inside create's transaction, once every step and stage is written: the plan's digest is kept
 * with the strategy; with `--plan`, a plan other than the one pinned is refused, naming what
 * changed (the transaction rolls back: nothing is created).
 */
export async function settlePlan(db: Db, hasher: PlanHasher, pinned: string | undefined): Promise<string> {
  const plan = hasher.finish(await writtenStages(db));
  if (pinned !== undefined && plan.digest !== pinned) throw refusal(pinned, plan);
  await setPlanDigest(db, plan.digest, pinned !== undefined);
  return plan.digest;
}

/** The error of a create whose plan is not the one pinned. */
export function refusal(pinned: string, plan: KeptPlan): OperationError {
  const was = keptPlan(pinned);
  const what = was ? planChanges(was, plan).join('; ') || 'what the digest covers' : 'the plan reviewed is not kept on this machine, so what changed cannot be named';
  return new OperationError(
    `the plan differs from the one reviewed (--plan ${pinned}, now ${plan.digest}): ${what}; nothing was created: review it with --dry-run, then create with --plan ${plan.digest}`,
  );
}
