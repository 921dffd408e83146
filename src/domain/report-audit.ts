/**
 * What the audits after each site found (issue 34: the report left them out), read from the runs
 * they ended: a site that disagreed, or did not answer its audit, is a warning in its last run's
 * details (or, with `--require-audit`, that run's failure). Pure: runs in, findings out.
 */

export interface AuditFinding {
  atUs: number;
  cloud: string;
  state: string;
  /** `warning`: the step completed all the same; `failed`: `--require-audit` failed it. */
  outcome: 'warning' | 'failed';
  /** The audit's words: `audit: the site does not answer (it is offline)`. */
  finding: string;
}

interface Run {
  stepId: number;
  state: string;
  startUs: number;
  finishUs: number | null;
  outcome: string;
  details: string;
}

/** The audit's part of a run's details: appended last to an ok run's, the whole of a failed one's. */
const AUDIT = /(?:^|; )(warning: )?(audit: .*)$/;

export function auditFindings(runs: readonly Run[], cloudOf: (stepId: number) => string): AuditFinding[] {
  const out: AuditFinding[] = [];
  for (const r of runs) {
    const m = AUDIT.exec(r.details);
    if (!m) continue;
    const warning = m[1] !== undefined;
    if (warning ? r.outcome !== 'ok' : r.outcome !== 'failed') continue;
    out.push({ atUs: r.finishUs ?? r.startUs, cloud: cloudOf(r.stepId), state: r.state, outcome: warning ? 'warning' : 'failed', finding: m[2] });
  }
  return out;
}
