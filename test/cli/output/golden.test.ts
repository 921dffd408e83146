/**
 * Every list and show command in every format, byte for byte against golden files that cliff
 * itself printed (test/golden/make_golden.py runs dcmanager's formatters, python3-cliff, on the
 * same data). cases.json says, for each case and variant, which cliff rule its file pins: empty
 * lists, nulls, non-ASCII, backslashes, multi-line details, -c in a non-table order, sorting,
 * widths, quoting. The data is the fixture of test/golden/fixture.sh, built with the built dcm.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, tempDir } from '../../helpers/cli.js';
import { run } from '../../helpers/inprocess.js';
import { main } from '../../../src/cli/main.js';

const GOLDEN = path.join(ROOT, 'test', 'golden');

interface Variant {
  name: string;
  args: string[];
  pins: string;
}
interface Case {
  name: string;
  db: string;
  args: string[];
  pins: string;
  /** A command that writes: each run on a fresh copy of the fixture's file, its new times masked. */
  fresh?: boolean;
}
const spec = JSON.parse(fs.readFileSync(path.join(GOLDEN, 'cases.json'), 'utf8')) as {
  variants: Variant[];
  cases: Case[];
  extra: Case[];
};

const jobs: [string, string, string[], boolean][] = [];
for (const c of spec.cases) for (const v of spec.variants) jobs.push([`${c.name}.${v.name}`, c.db, [...c.args, ...v.args], Boolean(c.fresh)]);
for (const e of spec.extra) jobs.push([e.name, e.db, e.args, Boolean(e.fresh)]);
// make_golden.py writes no file where cliff has no such formatter (csv for a show, shell for a list).
const present = jobs.filter(([name]) => fs.existsSync(path.join(GOLDEN, `${name}.txt`)));

/**
 * The times a writing case stamps, as make_golden.py masks them: the fixture's own are all on
 * 2025-01-01 before noon, and a later one reads as noon (the same length, so the layout holds).
 */
const NOW = '2025-01-01 12:00:00.000000';
function maskNow(text: string): string {
  return text.replace(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}/g, (t) => (t < NOW ? t : NOW));
}

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir();
  const r = spawnSync('bash', [path.join(GOLDEN, 'fixture.sh'), tmp.dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`fixture.sh failed: ${r.stderr}`);
});
afterAll(() => tmp.cleanup());

describe('golden files printed by cliff', () => {
  test('every case has its files', () => {
    expect(present.length).toBeGreaterThan(140);
  });

  test.each(present)('%s', async (name, db, args, fresh) => {
    let file = path.join(tmp.dir, db);
    if (fresh) {
      const copy = path.join(tmp.dir, `${name}.db`);
      fs.copyFileSync(file, copy);
      file = copy;
    }
    const r = await run(['--db', file, ...args]);
    // What `strategy create` left out is said on stderr (README "Who gets a step"); the golden
    // files are stdout's.
    expect(r.stderr.replace(/^warning: left out [^\n]*\n(  [^\n]*\n)*/m, '')).toBe('');
    expect(r.code).toBe(0);
    expect(fresh ? maskNow(r.stdout) : r.stdout).toBe(fs.readFileSync(path.join(GOLDEN, `${name}.txt`), 'utf8'));
  });

  test('--fit-width on a terminal of 60 columns prints what --max-width 60 prints', async () => {
    const stdout = { isTTY: true, columns: 60, text: '', write: (c: string) => ((stdout.text += c), true) };
    const stderr = { text: '', write: (c: string) => ((stderr.text += c), true) };
    const code = await main(['--db', path.join(tmp.dir, 'fleet.db'), 'strategy-step', 'list', '--fit-width', '--no-color'], { stdout, stderr } as never);
    expect([code, stderr.text]).toEqual([0, '']);
    expect(stdout.text).toBe(fs.readFileSync(path.join(GOLDEN, 'step-list.max-width.txt'), 'utf8'));
  });

  test('shell is refused for a list, as cliff has no such list formatter', async () => {
    const r = await run(['--db', path.join(tmp.dir, 'fleet.db'), 'subcloud', 'list', '-f', 'shell']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: .*invalid choice: 'shell'/);
  });

  test('-c naming no known column: an error naming the known ones (exit 1, as cliff in the client)', async () => {
    const r = await run(['--db', path.join(tmp.dir, 'fleet.db'), 'strategy', 'show', '-c', 'State']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "error: No recognized column names in ['State']. Recognized columns are ('strategy type', 'subcloud apply type', " +
        "'max parallel subclouds', 'stop on failure', 'upload only', 'state', 'created_at', 'updated_at').\n",
    );
  });

  test('the sysadmin password is in no output of any format', async () => {
    for (const db of ['sw-deploy.db', 'prestage.db']) {
      for (const f of ['table', 'json', 'value', 'yaml', 'shell', 'csv']) {
        for (const cmd of [['strategy', 'show'], ['strategy-step', 'list'], ['subcloud', 'list', '-d'], ['subcloud', 'show', 'subcloud1', '-d']]) {
          const r = await run(['--db', path.join(tmp.dir, db), ...cmd, '-f', f]);
          expect(r.stdout + r.stderr).not.toContain('S3cr3t');
        }
      }
    }
  });
});
