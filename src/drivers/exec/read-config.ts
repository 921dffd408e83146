/**
 * Reading the exec config at create: only a regular file (a FIFO would block the read until
 * someone writes to it, /dev/zero never ends), and only so much of it.
 */
import { UsageError } from '../../domain/errors.js';
import { readRegularFile } from '../../platform/files.js';

/** Far above any real config (100,000 env keys take 2 MB). */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

export function readConfigFile(file: string): string {
  return readRegularFile(file, MAX_CONFIG_BYTES, (why) => {
    throw new UsageError(`cannot read exec config ${file}: ${why}`);
  });
}
