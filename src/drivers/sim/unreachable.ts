/**
 * How a simulated site is made not to answer: the label `sim_unreachable` (any value) on its
 * subcloud (`dcm subcloud update NAME --label sim_unreachable=yes`; `--label sim_unreachable=`
 * clears it). Its probes fail and its first state is deferred, as a site down behind a dead link.
 * With the value `audit`, only its audit gets no answer: its states run, and the link dies before
 * the audit after its last one.
 */
export const SIM_UNREACHABLE_LABEL = 'sim_unreachable';

export function simUnreachable(labels: Readonly<Record<string, string>> | undefined): boolean {
  const v = labels?.[SIM_UNREACHABLE_LABEL];
  return v !== undefined && v !== 'audit';
}

/** Whether the site's audit gets no answer (`sim_unreachable`, any value). */
export function simAuditUnanswered(labels: Readonly<Record<string, string>> | undefined): boolean {
  return labels?.[SIM_UNREACHABLE_LABEL] !== undefined;
}
