import { ENDPOINTS, type Endpoint, type SyncStatus } from './types.js';

/** Overall sync: out-of-sync if any endpoint is, else unknown if any is, else in-sync (SPEC §2). */
export function overallSync(statuses: Record<Endpoint, SyncStatus>): SyncStatus {
  const values = ENDPOINTS.map((e) => statuses[e]);
  if (values.includes('out-of-sync')) return 'out-of-sync';
  if (values.includes('unknown')) return 'unknown';
  return 'in-sync';
}
