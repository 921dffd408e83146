/**
 * The exec driver's log folder, checked at create: apply will make it (and a folder per subcloud
 * in it), so each of its parts must be a folder or not exist yet, and the deepest one that exists
 * must be writable. Otherwise every step would fail at its first run (ENOTDIR, EACCES).
 */
import fs from 'node:fs';
import path from 'node:path';
import { OperationError } from '../../domain/errors.js';
import { canWriteIn, nonRegularKind } from '../../platform/files.js';

export function checkLogDir(dir: string, shown: string): void {
  const refuse = (why: string): never => {
    throw new OperationError(`cannot use ${shown} as the log folder: ${why}`);
  };
  let p = path.resolve(dir);
  for (;;) {
    let st: fs.Stats | null = null;
    try {
      st = fs.statSync(p);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENAMETOOLONG') refuse('the name is too long');
      if (code === 'ELOOP') refuse('a symlink loop');
      if (code === 'EACCES') refuse(`permission denied (${p})`);
      // ENOENT, or ENOTDIR (a part further up is a file: found on the way up).
    }
    if (st) {
      const kind = nonRegularKind(st);
      if (kind !== 'a directory') refuse(`${p === path.resolve(dir) ? 'it' : p} is ${kind ?? 'a file'}, not a folder`);
      if (!canWriteIn(p)) throw new OperationError(`cannot write in ${p} (read-only)`);
      return;
    }
    const up = path.dirname(p);
    if (up === p) return;
    p = up;
  }
}
