/**
 * A run's identity (SPEC §7.2 DCM_RUN_ID): strategy, subcloud, state, attempt, the same after
 * adoption. Each part is encoded so that no two runs share one.
 */
export function runIdOf(req: { campaign: string; cloud: string; state: string; attempt: number }): string {
  return [req.campaign.replace(/\D/g, ''), encodeURIComponent(req.cloud), encodeURIComponent(req.state), req.attempt].join('/');
}
