/** The one place a file fault gets its words (SPEC §2.1), for commands and the orchestrator alike. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { OperationError, UsageError } from '../../src/domain/errors.js';
import { fileFault, isCorrupt, isDiskFull, withFileFaults } from '../../src/store/faults.js';
import { tempDir } from '../helpers/cli.js';

const err = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('fileFault', () => {
  test.each(['SQLITE_FULL', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_FSYNC', 'SQLITE_IOERR', 'ENOSPC', 'EFBIG', 'EDQUOT'])(
    '%s is a full disk, with the SPEC wording and what to do next',
    (code) => {
      expect(isDiskFull(err(code))).toBe(true);
      const e = fileFault(err(code, 'disk I/O error'), 'fleet.db');
      expect(e).toBeInstanceOf(OperationError);
      expect(e!.exitCode).toBe(1);
      expect(e!.message).toMatch(/^disk full writing fleet\.db: nothing committed was lost; free space, then run the command again/);
      // The orchestrator says what its user does next.
      expect(fileFault(err(code), 'fleet.db', 'dcm strategy apply resumes')!.message).toMatch(
        /^disk full writing fleet\.db: nothing committed was lost; free space, then dcm strategy apply resumes/,
      );
    },
  );

  test.each(['SQLITE_CORRUPT', 'SQLITE_CORRUPT_INDEX', 'SQLITE_NOTADB'])('%s names the damaged file', (code) => {
    expect(isCorrupt(err(code))).toBe(true);
    expect(fileFault(err(code, 'database disk image is malformed'), 'fleet.db')!.message).toMatch(
      /^fleet\.db is damaged \(database disk image is malformed\)/,
    );
  });

  test('a read error is not a full disk', () => {
    expect(isDiskFull(err('SQLITE_IOERR_READ'))).toBe(false);
    expect(fileFault(err('SQLITE_IOERR_SHORT_READ', 'disk I/O error'), 'f.db')!.message).toBe('I/O error on f.db (disk I/O error)');
  });

  test('read-only: the directory when it cannot be written in, else the file', () => {
    const t = tempDir();
    try {
      const file = path.join(t.dir, 'x.db');
      fs.writeFileSync(file, '');
      expect(fileFault(err('SQLITE_READONLY'), file)!.message).toBe(`cannot write ${file} (read-only)`);
      expect(fileFault(err('SQLITE_CANTOPEN', 'unable to open database file'), path.join('/proc/1', 'x.db'))!.message).toBe(
        'cannot write in /proc/1 (read-only)',
      );
    } finally {
      t.cleanup();
    }
  });

  test('what is not a file fault passes through unchanged', () => {
    expect(fileFault(new UsageError('bad'), 'f.db')).toBeNull();
    expect(fileFault(err('SQLITE_BUSY'), 'f.db')).toBeNull();
    expect(fileFault(new Error('a bug'), 'f.db')).toBeNull();
    const bug = new TypeError('x');
    expect(() => withFileFaults('f.db', () => { throw bug; })).toThrow(bug);
    expect(() => withFileFaults('f.db', () => { throw err('SQLITE_FULL'); })).toThrow(/^disk full writing f\.db/);
    expect(withFileFaults('f.db', () => 42)).toBe(42);
  });
});
