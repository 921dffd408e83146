/**
 * What kind of file a path names, for the one rule every file dcm replaces or reads follows: a
 * regular file or nothing. A device, FIFO, socket or directory is refused by name, never opened
 * for writing (writing to a device, or replacing it by a rename, is never what was meant).
 */
import fs from 'node:fs';

const KINDS: [keyof fs.Stats, string][] = [
  ['isFIFO', 'a FIFO'],
  ['isSocket', 'a socket'],
  ['isCharacterDevice', 'a character device'],
  ['isBlockDevice', 'a block device'],
];

/** null for a regular file, else what it is: `a directory`, `a FIFO`, `a character device`, … */
export function nonRegularKind(st: fs.Stats): string | null {
  if (st.isFile()) return null;
  if (st.isDirectory()) return 'a directory';
  for (const [test, name] of KINDS) if ((st[test] as () => boolean).call(st)) return name;
  return 'not a regular file';
}

/**
 * Why `file` may not be replaced by an output (symlinks followed), or null when it is a regular
 * file or does not exist. A rename over a device would put a regular file in its place.
 */
export function outputProblem(file: string): string | null {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return null; // missing (or unreachable: the write itself says why)
  }
  const kind = nonRegularKind(st);
  return kind && `it is ${kind}`;
}

/** Whether this process may create files in `dir` (false on a read-only mount, an immutable dir). */
export function canWriteIn(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
