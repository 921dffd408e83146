/**
 * How a simulated site is made not to answer: the label `sim_unreachable` (any value) on its
 * subcloud (`dcm subcloud update NAME --label sim_unreachable=yes`; `--label sim_unreachable=`
 * clears it). Its probes fail and its first state is deferred, as a site down behind a dead link.
 */
export const SIM_UNREACHABLE_LABEL = 'sim_unreachable';

export function simUnreachable(labels: Readonly<Record<string, string>> | undefined): boolean {
  return labels?.[SIM_UNREACHABLE_LABEL] !== undefined;
}
