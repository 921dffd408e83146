/**
 * Apply's audit after each subcloud's last state (a strategy created with an audit: an exec config
 * with `audit`, or the sim's `--sim-audit`): `complete` then means the site says so. The driver is
 * wrapped, so that the audit is part of the last state's operation: its result, the site's report
 * with it, is committed in the same transition as the step's end (the subcloud row takes the
 * report there), and a run adopted after a crash is audited as a live one is.
 */
import { auditDisagreement, targetVersion } from '../domain/audit.js';
import type { ExtraArgs } from '../domain/options.js';
import { TYPES, type StrategyType } from '../domain/types.js';
import type { Adoption, Driver, LeftRun, OperationRequest, OperationResult } from '../drivers/driver.js';

export interface AuditAfterOptions {
  type: StrategyType;
  extra: ExtraArgs;
}

/** Whether the strategy audits each site after its last state (stored at create). */
export function auditsAfter(extra: ExtraArgs): boolean {
  return extra.audit_after === true;
}

/** The driver as apply uses it: unchanged unless the strategy audits and the driver can. */
export function withAuditAfter(driver: Driver, opts: AuditAfterOptions): Driver {
  const audit = driver.audit?.bind(driver);
  if (!audit || !auditsAfter(opts.extra)) return driver;
  const require = opts.extra.require_audit === true;
  const expect = { endpoint: opts.type === 'custom' ? null : TYPES[opts.type].endpoint, target: targetVersion(opts.type, opts.extra) };

  const after = async (req: OperationRequest, r: OperationResult): Promise<OperationResult> => {
    if (r.kind !== 'next') return r;
    const ends = r.next === 'complete' || (r.next === undefined && req.stateIndex === req.states.length - 1);
    if (!ends) return r;
    // The step's details say what it waits for meanwhile (the live view, status).
    req.onProgress?.('auditing the site');
    const outcome = await audit({
      cloud: req.cloud,
      type: req.type,
      subcloud: req.subcloud ?? {},
      labels: req.labels ?? {},
      extra: req.extra,
      stage: req.stage,
      signal: req.signal,
    });
    if (!outcome.ok) {
      // No word from the site: nothing proves the update, and the row keeps what it had.
      if (require) return { kind: 'failed', reason: outcome.reason };
      return { ...r, details: joinDetails(r.details, `warning: ${outcome.reason}`) };
    }
    const problem = auditDisagreement(outcome.report, expect);
    if (problem === null) return { ...r, audit: outcome.report };
    if (require) return { kind: 'failed', reason: `audit: ${problem}`, audit: outcome.report };
    return { ...r, details: joinDetails(r.details, `warning: audit: ${problem}`), audit: outcome.report };
  };

  const wrapped: Driver = {
    run: async (req) => after(req, await driver.run(req)),
    audit,
    // None: the audit reads the subcloud's fields and labels at its last state, whatever the driver reads.
    ownsTimeouts: driver.ownsTimeouts,
    reportsStarts: driver.reportsStarts,
    close: (opts) => driver.close(opts),
  };
  if (driver.costs) wrapped.costs = driver.costs.bind(driver);
  if (driver.adopt) {
    const adopt = driver.adopt.bind(driver);
    wrapped.adopt = (left: LeftRun, req: OperationRequest): Adoption => {
      const a = adopt(left, req);
      return a.kind === 'wait' ? { kind: 'wait', result: a.result.then((r) => after(req, r)) } : a;
    };
  }
  if (driver.remote) {
    const remote = driver.remote.bind(driver);
    wrapped.remote = (left: LeftRun, req: OperationRequest) => {
      const r = remote(left, req);
      return { ...r, outcome: async (end) => after(req, await r.outcome(end)) };
    };
  }
  return wrapped;
}

function joinDetails(details: string | undefined, more: string): string {
  return details ? `${details}; ${more}` : more;
}
