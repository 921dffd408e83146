/**
 * A run's claim files (drivers/exec/files.ts): an earlier strategy's are cleared before a run
 * starts at the same path, a claim on this very run never is, and a run given up is claimed for
 * nobody even where its folder was never made.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { abandonRun, abandonStart, clearEarlierRun, readClaim, readTaken } from '../../../src/drivers/exec/files.js';

const RUN = '20261202/s1/pre%20check/1';
let dir = '';

afterEach(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = '';
});

function folder(): string {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-files-'));
  return path.join(dir, 's1', '1-pre-check');
}

const present = (base: string) => ['.pid', '.run', '.status', '.err', '.next'].filter((end) => fs.existsSync(base + end));

describe('run files', () => {
  test("an earlier strategy's files at the path are cleared; the run can then be claimed", () => {
    const base = folder();
    fs.mkdirSync(path.dirname(base), { recursive: true });
    const old = '20251101/s1/pre%20check/1';
    fs.writeFileSync(`${base}.pid`, `123 456 ${old}\n`);
    fs.writeFileSync(`${base}.run`, `${old}\n`);
    fs.writeFileSync(`${base}.status`, `0 ${old}\n`);
    fs.writeFileSync(`${base}.err`, 'old reason\n');
    fs.writeFileSync(`${base}.next`, 'old next\n');
    expect(readClaim(base, RUN)).toEqual({ stale: true });
    clearEarlierRun(base, RUN);
    expect(present(base)).toEqual([]);
    expect(abandonRun(base, RUN)).toBe(true);
  });

  test.each([
    ['given up by another dcm', `abandoned ${RUN}\n`, null],
    ['launching', `launching 456 ${RUN}\n`, null],
    ['started', `123 456 ${RUN}\n`, `${RUN}\n`],
    ['being written', '', null],
  ])('a claim on this run (%s) is never cleared, nor anything beside it', (_what, pid, run) => {
    const base = folder();
    fs.mkdirSync(path.dirname(base), { recursive: true });
    fs.writeFileSync(`${base}.pid`, pid);
    if (run !== null) fs.writeFileSync(`${base}.run`, run);
    fs.writeFileSync(`${base}.err`, 'its reason\n');
    clearEarlierRun(base, RUN);
    expect(fs.readFileSync(`${base}.pid`, 'utf8')).toBe(pid);
    expect(fs.readFileSync(`${base}.err`, 'utf8')).toBe('its reason\n');
    // The launcher creates `.pid` exclusively: it cannot start the run.
    expect(abandonRun(base, RUN)).toBe(false);
  });

  test('a start taken for nobody (`.run`) with no claim beside it is kept', () => {
    const base = folder();
    fs.mkdirSync(path.dirname(base), { recursive: true });
    fs.writeFileSync(`${base}.run`, `abandoned ${RUN}\n`);
    clearEarlierRun(base, RUN);
    expect(readTaken(base, RUN)).toEqual({ abandoned: true });
  });

  test("a run given up before its folder was made: the folder is made and holds the claims, so a late launch finds them", () => {
    const base = folder();
    expect(fs.existsSync(path.dirname(base))).toBe(false);
    expect(abandonRun(base, RUN)).toBe(true);
    expect(abandonStart(base, RUN)).toBe(true);
    expect(readClaim(base, RUN)).toEqual({ abandoned: true });
    expect(readTaken(base, RUN)).toEqual({ abandoned: true });
    expect(fs.statSync(path.dirname(base)).mode & 0o777).toBe(0o700);
    // Given up once: a second dcm's try finds it so.
    expect(abandonRun(base, RUN)).toBe(false);
    expect(abandonStart(base, RUN)).toBe(true);
  });
});
