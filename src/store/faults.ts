/**
 * Faults of the file itself (SPEC §2.1): a busy file, a full disk or a file-size limit, an I/O
 * error, a corrupt file. Errors from better-sqlite3 are told apart by `code` (never `instanceof`:
 * the native class is not the same across module instances), and turned into one-line messages
 * that say what was kept and what to do.
 */
import { DcmError, EXIT } from '../domain/errors.js';

export type Fault = 'busy' | 'full' | 'io' | 'corrupt';

export function faultOf(err: unknown): Fault | null {
  const code = String((err as { code?: unknown })?.code ?? '');
  if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED') return 'busy';
  // A file-size limit (ulimit -f) makes write(2) fail with EFBIG, which SQLite reports as IOERR_WRITE.
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EFBIG' || code === 'EDQUOT' || code === 'SQLITE_IOERR_WRITE') {
    return 'full';
  }
  if (code.startsWith('SQLITE_IOERR') || code === 'EIO') return 'io';
  if (code === 'SQLITE_CORRUPT' || code.startsWith('SQLITE_CORRUPT_') || code === 'SQLITE_NOTADB') return 'corrupt';
  return null;
}

/** The one-line error for a fault met while applying, or null when `err` is not a fault of the file. */
export function applyFaultError(err: unknown, file: string): DcmError | null {
  const resume = 'nothing committed was lost; free space, then dcm strategy apply resumes';
  switch (faultOf(err)) {
    case 'full':
      return new DcmError(`disk full writing ${file}: ${resume}`, EXIT.failed);
    case 'io':
      return new DcmError(
        `I/O error on ${file} (${(err as { code: string }).code}): nothing committed was lost; once the disk is sound, dcm strategy apply resumes`,
        EXIT.failed,
      );
    case 'corrupt':
      return new DcmError(
        `${file} is corrupt (${(err as Error).message}): stopped without writing more; see dcm db check, and restore a backup`,
        EXIT.failed,
      );
    default:
      return null;
  }
}
