/**
 * Who `strategy create` left out, and why (issue 34): a site that is offline, unmanaged or in-sync
 * is skipped without error (SPEC §5), and a strategy that then ends `complete` has never touched
 * it; the create says so on stderr, by reason. Pure: names and reasons in, lines of text out.
 * Memory stays bounded on a large fleet: each reason counts every site, and keeps only the first
 * `keep` names (a dry run keeps them all).
 */

export type LeftOutReason = 'unmanaged' | 'offline' | 'deploy-status' | 'in-sync' | 'at-target' | 'outside';

/** The reasons in the order they are said. */
const ORDER: readonly LeftOutReason[] = ['offline', 'unmanaged', 'deploy-status', 'in-sync', 'at-target', 'outside'];

export class LeftOutTally {
  private readonly counts = new Map<LeftOutReason, number>();
  private readonly names = new Map<LeftOutReason, string[]>();

  constructor(readonly keep: number = 10) {}

  add(reason: LeftOutReason, name: string): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
    let names = this.names.get(reason);
    if (!names) this.names.set(reason, (names = []));
    if (names.length < this.keep) names.push(name);
  }

  /** `count` sites left out for `reason`, of which `names` are the first ones (a store's count). */
  addCounted(reason: LeftOutReason, count: number, names: readonly string[]): void {
    if (count === 0) return;
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + count);
    const kept = this.names.get(reason) ?? [];
    this.names.set(reason, [...kept, ...names].slice(0, this.keep));
  }

  get total(): number {
    let n = 0;
    for (const c of this.counts.values()) n += c;
    return n;
  }

  /** Each reason with its count and the names kept, in the order they are said. */
  entries(): { reason: LeftOutReason; count: number; names: readonly string[] }[] {
    return ORDER.filter((r) => this.counts.has(r)).map((reason) => ({ reason, count: this.counts.get(reason)!, names: this.names.get(reason)! }));
  }
}

/** What the create knew when it left a site out: the words of each reason. */
export interface LeftOutContext {
  /** The type's sync endpoint (`patching`), null when the type has none. */
  endpoint: string | null;
  /** `--target-version V`, when the plan is by target. */
  targetVersion: string | null;
  /** How the fleet was narrowed: `group G`, `labels a=b` (null: the whole fleet). */
  selection: string | null;
  /** Whether `--force` would have taken the in-sync ones (it was not given). */
  forceAllowed: boolean;
  /** `--force` was given to a type it does not apply to. */
  forceIgnored: boolean;
  /** The type, for the hint (`strategy create --type patch`). */
  type: string;
}

function reasonText(reason: LeftOutReason, c: LeftOutContext): string {
  switch (reason) {
    case 'offline':
      return 'offline';
    case 'unmanaged':
      return 'unmanaged';
    case 'deploy-status':
      return 'deploy status not complete';
    case 'in-sync':
      return `in-sync for ${c.endpoint ?? 'its endpoint'}`;
    case 'at-target':
      return `already at ${c.targetVersion}`;
    case 'outside':
      return `not in ${c.selection ?? 'the selection'}`;
  }
}

/** What to do about a reason, when there is something to do. */
function hint(reason: LeftOutReason, c: LeftOutContext): string {
  if (reason === 'offline') return " (recorded so by a probe, an audit or the inventory: 'dcm subcloud probe' rechecks)";
  if (reason === 'unmanaged') return " ('dcm subcloud manage' takes them in)";
  if (reason !== 'in-sync') return '';
  // The sync status is what the last strategy of the type left: a new patch finds the fleet in-sync.
  const byTarget = '--target-version V plans by target, not by the last sync';
  if (c.forceIgnored) return ` (--force does not apply to ${c.type}; ${byTarget})`;
  return c.forceAllowed ? ` (--force takes them; ${byTarget})` : ` (${byTarget})`;
}

/**
 * The warning, one line per reason: `left out 3 of 12 subclouds:` then `  offline (1): s5 …`;
 * up to `shown` names a reason (all of them with Infinity), then how many more. Null when nobody
 * was left out.
 */
export function describeLeftOut(tally: LeftOutTally, planned: number, c: LeftOutContext, shown = 10): string | null {
  const entries = tally.entries();
  if (entries.length === 0) return null;
  const total = tally.total;
  const lines = [`left out ${total} of ${total + planned} subcloud${total + planned === 1 ? '' : 's'}:`];
  let cut = false;
  for (const e of entries) {
    const names = e.names.slice(0, shown);
    const more = e.count - names.length;
    if (more > 0) cut = true;
    lines.push(`  ${reasonText(e.reason, c)} (${e.count}): ${names.join(', ')}${more > 0 ? ` and ${more} more` : ''}${hint(e.reason, c)}`);
  }
  if (cut) lines.push('  (strategy create --dry-run lists them all)');
  return lines.join('\n');
}

/**
 * Said before `Strategy has no steps to apply`: who was left out (every subcloud considered, by
 * reason, with what to do), or that there was nobody to consider at all.
 */
export function describeNoSteps(tally: LeftOutTally, c: LeftOutContext): string {
  const text = describeLeftOut(tally, 0, c);
  if (text) return text;
  return `no subcloud to plan: ${c.selection ? `${c.selection} holds none` : 'the database holds none'} ('dcm subcloud list' shows the fleet; --db or DCM_DB names the database)`;
}
