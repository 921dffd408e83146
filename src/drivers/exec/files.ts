/**
 * Where a run leaves its traces: `DIR/<cloud>/<attempt>-<state>.log` for its output, and beside it
 * `.pid` (written by the wrapper as its first act), `.status` (its exit status, written by the
 * wrapper as its last act) and `.next` (the run's `$DCM_NEXT`). A later apply reads these to learn
 * how a run ended while dcm was down.
 */
import fs from 'node:fs';
import path from 'node:path';

/** A path component: no separator, never `.` or `..`. */
function component(name: string): string {
  const safe = name.replace(/[/\0]/g, '_');
  return safe === '.' || safe === '..' ? `_${safe}` : safe;
}

export function runBase(logDir: string, cloud: string, attempt: number, state: string): string {
  return path.join(logDir, component(cloud), `${attempt}-${component(state)}`);
}

export function readSmall(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

export function removeQuietly(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    // not there: nothing to remove
  }
}

/** The exit status the wrapper recorded, or null when it recorded none (killed, or still running). */
export function readStatus(base: string): number | null {
  const text = readSmall(`${base}.status`);
  if (text === null || !/^\d+\s*$/.test(text)) return null;
  return Number(text);
}

/** The last non-empty line of a run's output (read from its log's last 8 KiB). */
export function lastLine(logFile: string): string {
  let fd: number;
  try {
    fd = fs.openSync(logFile, 'r');
  } catch {
    return '';
  }
  try {
    const size = fs.fstatSync(fd).size;
    const len = Math.min(size, 8192);
    const buf = Buffer.alloc(len);
    fs.readSync(fd, buf, 0, len, size - len);
    const lines = buf.toString('utf8').split(/\r?\n/);
    for (let i = lines.length - 1; i >= 0; i--) {
      const l = lines[i].trim();
      if (l) return l;
    }
    return '';
  } finally {
    fs.closeSync(fd);
  }
}
