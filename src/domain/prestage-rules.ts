/**
 * What dcmanager's server checks before it prestages a subcloud, and the release it names, in
 * its order and words (dcmanager/common/prestage.py validate_prestage_subcloud, which runs
 * utils.get_validated_sw_version_for_prestage, then initial_subcloud_validate). Each refusal is a
 * PrestagePreCheckFailedException, printed `Prestage failed '<subcloud>': <details>`.
 */

/** A major release, MM.mm (utils.is_major_release): 24.09, never 24.09.1. */
const MAJOR_RELEASE = /^\d{2}\.\d{2}$/;
/** The first release that prestages for software deploy (consts.SOFTWARE_VERSION_24_09). */
const FIRST_SW_DEPLOY_RELEASE = '24.09';
/** consts.STATES_FOR_ONGOING_BACKUP. */
const BACKUP_IN_PROGRESS = ['initial', 'validating', 'pre-backup', 'backing-up'];
/** The deploy statuses a subcloud may be prestaged in (sw-deploy-apply-strategy-failed may need one). */
export const PRESTAGE_DEPLOY_STATUSES: readonly string[] = ['complete', 'sw-deploy-apply-strategy-failed'];
/** The prestage statuses a subcloud may be prestaged again in (none yet is allowed too). */
const PRESTAGE_AGAIN = ['failed', 'complete'];

export interface PrestageSubject {
  name: string;
  availability: string;
  management: string;
  deploy_status: string;
  backup_status: string | null;
  prestage_status: string | null;
}

/** The release's own checks (get_validated_sw_version_for_prestage): the words, else null. */
export function prestageReleaseRefusal(release: string | null | undefined, forSwDeploy: boolean, systemController: string | null): string | null {
  if (release && !MAJOR_RELEASE.test(release)) return 'Specified release format is not supported. Version format must be MM.mm.';
  const version = release || systemController;
  if (forSwDeploy && version && version < FIRST_SW_DEPLOY_RELEASE) {
    return 'The requested software version is not supported, cannot prestage for software deploy.';
  }
  return null;
}

/** initial_subcloud_validate's refusals, in its order: the details, else null. */
export function prestageSubcloudRefusal(sc: PrestageSubject): string | null {
  if (sc.availability !== 'online') return 'Subcloud is offline.';
  if (sc.management !== 'managed') return 'Subcloud is not managed.';
  if (sc.backup_status !== null && BACKUP_IN_PROGRESS.includes(sc.backup_status)) {
    return 'Prestage operation is not allowed while backup is in progress.';
  }
  if (!PRESTAGE_DEPLOY_STATUSES.includes(sc.deploy_status)) return 'Prestage operation is not allowed when subcloud deploy is in progress.';
  if (sc.prestage_status && !PRESTAGE_AGAIN.includes(sc.prestage_status)) {
    return `Prestage operation is only allowed while subcloud prestage status is one of: ${PRESTAGE_AGAIN.join(', ')}. The current prestage status is ${sc.prestage_status}.`;
  }
  return null;
}

/** The major release of a version (utils.get_major_release), or null for one not shaped so. */
export function majorRelease(version: string | null): string | null {
  const m = version ? /^(\d{2}\.\d{2})(\.\d+)*$/.exec(version) : null;
  return m ? m[1] : null;
}

/**
 * The newest major release among these versions: no subcloud runs a release newer than its system
 * controller's, so it stands for the system controller's when dcm is not told it.
 */
export function newestRelease(versions: readonly (string | null)[]): string | null {
  let newest: string | null = null;
  for (const v of versions) {
    const major = majorRelease(v);
    if (major && (newest === null || major > newest)) newest = major;
  }
  return newest;
}
