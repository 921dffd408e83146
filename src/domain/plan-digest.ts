/**
 * A plan you can pin (`strategy create --dry-run` prints a digest; `strategy create --plan DIGEST`
 * creates only that plan), the pure part: what a plan is for its digest, the digest itself (a
 * short hash), and what changed between two plans, in words that name the subcloud, the stage or
 * the option.
 *
 * A plan is the strategy's type and states, its options (the record's and the extra args a create
 * writes, but those that differ between two runs of the same command: the sim's seed drawn at
 * random, the password), its stages (window, group, gate, failure budget, start rate) and its
 * subclouds in step order with their stage. Two creates of the same plan write the same steps in
 * the same order with the same options.
 */
import crypto from 'node:crypto';

/** The digest's length in hex digits (48 bits: a typo or a stale paste never matches by chance). */
export const DIGEST_LENGTH = 12;

/** A stage as the plan has it. */
export interface PlanStage {
  stage: number;
  window: number;
  group: string | null;
  maxFailures: string | null;
  gate: string | null;
  gateCheck: string | null;
  startRate: string | null;
}

/** The plan's header: all but its subclouds. */
export interface PlanHead {
  type: string;
  states: readonly string[];
  options: Record<string, unknown>;
}

/** A plan whole, as a dry run keeps it to say later what changed. */
export interface KeptPlan extends PlanHead {
  digest: string;
  stages: PlanStage[];
  /** `[name, stage]` in step order. */
  sites: [string, number][];
}

/** Options that say nothing of what the plan does, or must never be kept: left out of it. */
const NOT_PLAN = new Set(['sysadmin_password', 'plan_digest', 'plan_pinned']);

/** The options as the plan has them: keys sorted, those of NOT_PLAN and undefined ones left out. */
export function planOptions(options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(options).sort()) if (!NOT_PLAN.has(k) && options[k] !== undefined) out[k] = options[k];
  return out;
}

/** Whether `text` is a digest as printed (case aside). */
export function isDigest(text: string): boolean {
  return new RegExp(`^[0-9a-f]{${DIGEST_LENGTH}}$`).test(text.trim().toLowerCase());
}

/**
 * The digest, fed a subcloud at a time (a create of the fleet plans a page at a time: memory does
 * not follow the fleet). `keep`: also remember the subclouds, for a plan kept or compared.
 */
export class PlanHasher {
  private readonly hash = crypto.createHash('sha256');
  readonly sites: [string, number][] = [];

  constructor(
    private readonly head: PlanHead,
    private readonly keep: boolean,
  ) {
    this.hash.update(JSON.stringify({ type: head.type, states: head.states, options: planOptions(head.options) }));
  }

  site(name: string, stage: number): void {
    // A length before each name: names may hold any character but a control one.
    this.hash.update(`\n${stage}\t${name.length}\t${name}`);
    if (this.keep) this.sites.push([name, stage]);
  }

  finish(stages: readonly PlanStage[]): KeptPlan {
    this.hash.update(`\n${JSON.stringify(stages.map((s) => [s.stage, s.window, s.group, s.maxFailures, s.gate, s.gateCheck, s.startRate]))}`);
    const digest = this.hash.digest('hex').slice(0, DIGEST_LENGTH);
    return { digest, type: this.head.type, states: [...this.head.states], options: planOptions(this.head.options), stages: [...stages], sites: this.sites };
  }
}

/** At most this many changes are named; the rest are counted. */
const NAMED = 5;

/** A value in a change's sentence: a long one (an exec config) cut, so that the line stays one. */
function show(v: unknown): string {
  const t = v === undefined || v === null ? 'none' : typeof v === 'string' ? v : JSON.stringify(v);
  const line = t.replace(/\s+/g, ' ');
  return line.length > 60 ? `${line.slice(0, 57)}...` : line;
}

/**
 * What changed from the plan reviewed (`was`) to the plan create would write (`now`), each a short
 * sentence naming what it is about: a subcloud that left or joined the plan or moved stage, the
 * order, a stage's window, gate or rate, an option. The first few, then how many more.
 */
export function planChanges(was: KeptPlan, now: KeptPlan): string[] {
  const out: string[] = [];
  if (was.type !== now.type) out.push(`the type: ${was.type} -> ${now.type}`);
  if (JSON.stringify(was.states) !== JSON.stringify(now.states)) out.push(`the states: ${was.states.join(', ')} -> ${now.states.join(', ')}`);
  const wasSites = new Map(was.sites);
  const nowSites = new Map(now.sites);
  for (const [name, stage] of was.sites) {
    const at = nowSites.get(name);
    if (at === undefined) out.push(`subcloud ${name} left the plan (it was in stage ${stage})`);
    else if (at !== stage) out.push(`subcloud ${name} moved from stage ${stage} to stage ${at}`);
  }
  for (const [name, stage] of now.sites) if (!wasSites.has(name)) out.push(`subcloud ${name} joined the plan (stage ${stage})`);
  // The same subclouds in the same stages, in another order: where it first differs.
  if (out.length === 0) {
    const i = was.sites.findIndex((s, k) => now.sites[k]?.[0] !== s[0]);
    if (i >= 0) out.push(`the order changed at step ${i + 1}: subcloud ${was.sites[i][0]} -> subcloud ${now.sites[i]?.[0] ?? 'none'}`);
  }
  const stages = new Map(now.stages.map((s) => [s.stage, s]));
  for (const s of was.stages) {
    const n = stages.get(s.stage);
    if (!n) {
      out.push(`stage ${s.stage} is no longer in the plan`);
      continue;
    }
    for (const k of ['window', 'group', 'maxFailures', 'gate', 'gateCheck', 'startRate'] as const) {
      if (show(s[k]) !== show(n[k])) out.push(`stage ${s.stage} ${k.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`)}: ${show(s[k])} -> ${show(n[k])}`);
    }
  }
  for (const s of now.stages) if (!was.stages.some((w) => w.stage === s.stage)) out.push(`stage ${s.stage} is new in the plan`);
  const keys = [...new Set([...Object.keys(was.options), ...Object.keys(now.options)])].sort();
  for (const k of keys) {
    if (JSON.stringify(was.options[k]) !== JSON.stringify(now.options[k])) out.push(`option ${k}: ${show(was.options[k])} -> ${show(now.options[k])}`);
  }
  if (out.length > NAMED) return [...out.slice(0, NAMED), `and ${out.length - NAMED} more change(s)`];
  return out;
}
