/**
 * `subcloud audit`'s progress on stderr: on a terminal, one line rewritten in place as sites
 * answer (cleared at the end, so that the summary stands alone); off one, nothing until the
 * summary, which is a note (main.ts), so that a log file holds one line, not one per site.
 */
export interface AuditProgress {
  update: (done: number, total: number, failed: number) => void;
  done: () => void;
}

export function auditProgress(stderr: NodeJS.WritableStream & { isTTY?: boolean }, quiet: boolean): AuditProgress {
  if (quiet || stderr.isTTY !== true) return { update: () => {}, done: () => {} };
  let shown = false;
  let last = 0;
  return {
    update(done, total, failed) {
      // At most about ten frames a second, and always the last one.
      const now = Date.now();
      if (done < total && now - last < 100) return;
      last = now;
      shown = true;
      stderr.write(`\r\x1b[Kauditing: ${done}/${total} answered${failed ? `, ${failed} failed` : ''}`);
    },
    done() {
      if (shown) stderr.write('\r\x1b[K');
    },
  };
}
