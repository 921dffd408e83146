/**
 * The system controller's release, which dcmanager's server names when a prestage is asked for
 * without `--release` (utils.get_sw_version gives tsc.SW_VERSION, its own release): in the reply
 * of `subcloud prestage` and as a prestage strategy's `prestage software version`. dcm is no
 * system controller: it takes `DCM_SYSTEM_CONTROLLER_RELEASE` when set, else the newest release
 * the inventory holds (no subcloud runs a newer one than its system controller), else none, and
 * then prints no such row, as the client prints none for an empty value.
 */
import { UsageError } from '../domain/errors.js';
import { newestRelease } from '../domain/prestage-rules.js';
import { sql } from '../store/statements.js';
import type { Db } from '../store/open.js';

export const RELEASE_VARIABLE = 'DCM_SYSTEM_CONTROLLER_RELEASE';

/** The variable's release, checked; undefined when it is not set. */
function fromEnvironment(): string | undefined {
  const value = process.env[RELEASE_VARIABLE];
  if (value === undefined || value === '') return undefined;
  if (!/^\d{2}\.\d{2}$/.test(value)) throw new UsageError(`invalid ${RELEASE_VARIABLE} '${value}': give a release as MM.mm, such as 24.09`);
  return value;
}

export async function systemControllerRelease(db: Db | null): Promise<string | null> {
  const given = fromEnvironment();
  if (given !== undefined) return given;
  if (!db) return null;
  const versions = await sql(db, 'SELECT DISTINCT software_version FROM subcloud WHERE software_version IS NOT NULL').pluck().all() as string[];
  return newestRelease(versions);
}

/** A prestage strategy's extra args with the release it prestages, as the server records it. */
export async function withPrestageRelease(db: Db, type: string, extra: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (type !== 'prestage' || extra.prestage_software_version) return extra;
  const release = await systemControllerRelease(db);
  return release ? { ...extra, prestage_software_version: release } : extra;
}
