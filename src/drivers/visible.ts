/**
 * Every driver's words as dcm passes them on: a run's reason and details, an audit's
 * failure and the software version a site reports are outside text (a site's script wrote them),
 * escaped and cut (domain/outside-text.ts) here, once for every driver, before the orchestrator
 * prints them or the store keeps them. A driver itself need not know.
 */
import type { AuditReport } from '../domain/audit.js';
import { visible, visibleLine } from '../domain/outside-text.js';
import type { AuditOutcome, Driver, OperationResult } from './driver.js';

/** A site's software version is a short word: shown in lists, compared with the strategy's. */
const VERSION_MAX = 64;

function report(r: AuditReport | undefined): AuditReport | undefined {
  if (r?.software_version === undefined) return r;
  return { ...r, software_version: visibleLine(r.software_version, VERSION_MAX) };
}

export function visibleResult(r: OperationResult): OperationResult {
  switch (r.kind) {
    case 'next':
      return { ...r, ...(r.details === undefined ? {} : { details: visible(r.details) }), ...(r.audit ? { audit: report(r.audit) } : {}) };
    case 'failed':
      return { ...r, reason: visible(r.reason), ...(r.audit ? { audit: report(r.audit) } : {}) };
    default:
      return { ...r, reason: visible(r.reason) };
  }
}

export function visibleAudit(o: AuditOutcome): AuditOutcome {
  return o.ok ? { ok: true, report: report(o.report)! } : { ok: false, reason: visible(o.reason) };
}

/** `d`, its words escaped; every other member is `d`'s own (`costs`, `close`, `labelKeys`, …, called on `d`). */
export function visibleDriver<D extends Driver>(d: D): D {
  const own: Partial<Driver> = {
    // A run's progress lines are escaped where its request is made (orchestrator/run-request.ts):
    // the request reaches the driver as made, since a copy of its getters cost a tenth of an
    // apply's CPU (figure 1).
    run: async (req) => visibleResult(await d.run(req)),
  };
  if (d.adopt) {
    const adopt = d.adopt.bind(d);
    own.adopt = (left, req) => {
      const a = adopt(left, req);
      return a.kind === 'wait' ? { kind: 'wait', result: a.result.then(visibleResult) } : a;
    };
  }
  if (d.remote) {
    const remote = d.remote.bind(d);
    own.remote = (left, req) => {
      const r = remote(left, req);
      return { ...r, outcome: async (end) => visibleResult(await r.outcome(end)) };
    };
  }
  if (d.audit) {
    const audit = d.audit.bind(d);
    own.audit = async (req) => visibleAudit(await audit(req));
  }
  return new Proxy(d, {
    get(target, prop) {
      if (Object.hasOwn(own, prop)) return own[prop as keyof Driver];
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
