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

/**
 * A regular file's text, read only if it is one (opened without blocking: opening a FIFO would
 * wait for a writer; /dev/zero would never end) and at most `maxBytes` long. `fail(why)` throws.
 */
export function readRegularFile(file: string, maxBytes: number, fail: (why: string) => never): string {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (err) {
    return fail((err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
  try {
    const st = fs.fstatSync(fd);
    const kind = nonRegularKind(st);
    if (kind) fail(`it is ${kind}, not a regular file`);
    if (st.size > maxBytes) fail(`it is ${st.size} bytes, over the limit of ${maxBytes}`);
    // Read to the end, whatever the size said (a /proc file says 0), and at most one byte past
    // the limit: a file that grew meanwhile is still refused.
    const chunks: Buffer[] = [];
    let got = 0;
    for (;;) {
      const buf = Buffer.alloc(Math.min(64 * 1024, maxBytes + 1 - got));
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      chunks.push(buf.subarray(0, n));
      got += n;
      if (got > maxBytes) fail(`it is over the limit of ${maxBytes} bytes`);
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}
