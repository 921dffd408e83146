import { ENDPOINTS, type Endpoint, type SyncStatus } from './types.js';

/**
 * Overall sync as dcmanager's API computes it for `subcloud list`: the endpoints' status when they
 * all agree, else out-of-sync (so in-sync beside unknown is out-of-sync; SPEC §2 said unknown).
 */
export function overallSync(statuses: Record<Endpoint, SyncStatus>): SyncStatus {
  const values = ENDPOINTS.map((e) => statuses[e]);
  return values.every((v) => v === values[0]) ? values[0] : 'out-of-sync';
}
