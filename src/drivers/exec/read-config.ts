/**
 * Reading the exec config at create: only a regular file, and only so much of it. A FIFO would
 * block the read until someone writes to it, /dev/zero never ends, and a huge file would be
 * parsed whole. The file is opened without blocking and looked at (fstat) before a byte is read.
 */
import fs from 'node:fs';
import { UsageError } from '../../domain/errors.js';
import { nonRegularKind } from '../../platform/files.js';

/** Far above any real config (100,000 env keys take 2 MB). */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

export function readConfigFile(file: string): string {
  const cannot = (why: string): never => {
    throw new UsageError(`cannot read exec config ${file}: ${why}`);
  };
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (err) {
    return cannot((err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
  try {
    const st = fs.fstatSync(fd);
    const kind = nonRegularKind(st);
    if (kind) cannot(`it is ${kind}, not a regular file`);
    if (st.size > MAX_CONFIG_BYTES) cannot(`it is ${st.size} bytes, over the limit of ${MAX_CONFIG_BYTES}`);
    // Read at most one byte past the limit: a file that grows meanwhile is still refused.
    const buf = Buffer.alloc(Math.min(st.size, MAX_CONFIG_BYTES) + 1);
    let got = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, got, buf.length - got, got);
      if (n === 0) break;
      got += n;
      if (got === buf.length) {
        if (got > MAX_CONFIG_BYTES) cannot(`it is over the limit of ${MAX_CONFIG_BYTES} bytes`);
        break;
      }
    }
    return buf.subarray(0, got).toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}
