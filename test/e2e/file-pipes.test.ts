/**
 * SPEC §2.1 "Closed pipes", with real pipes and devices through bash: a reader whose stdout is
 * closed stops quietly with exit 0; a closed or full stderr drops progress and nothing else, so an
 * apply runs to its end and exits with the strategy's code.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { BIN, dcmOk, tempDir } from '../helpers/cli.js';

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Run `dcm ARGS REDIRECTS` in bash; `exit` is dcm's own status (not the pipe's last command). */
function shell(args: string[], redirects: string, db: string): { exit: number; out: string; err: string } {
  const dir = path.dirname(db);
  const errFile = path.join(dir, 'stderr.txt');
  fs.rmSync(errFile, { force: true });
  const cmd = `${q(process.execPath)} ${q(BIN)} --db ${q(db)} ${args.map(q).join(' ')} ${redirects}; echo "exit=\${PIPESTATUS[0]}"`;
  const r = spawnSync('bash', ['-c', cmd], { encoding: 'utf8', env: { ...process.env, ERR: errFile } });
  const m = /exit=(\d+)\n$/.exec(r.stdout);
  if (!m) throw new Error(`no exit status from bash: ${r.stdout} ${r.stderr}`);
  return {
    exit: Number(m[1]),
    out: r.stdout.slice(0, m.index),
    err: fs.existsSync(errFile) ? fs.readFileSync(errFile, 'utf8') : r.stderr,
  };
}

describe('a reader whose stdout is closed', () => {
  const t = tempDir('dcm-pipes-');
  beforeAll(() => {
    // Enough rows that every format overflows the pipe's buffer before `head` goes away.
    const names = Array.from({ length: 3000 }, (_, i) => `subcloud-with-a-long-name-${i + 1}`);
    const csv = path.join(t.dir, 'fleet.csv');
    fs.writeFileSync(csv, ['name', ...names].join('\n'));
    dcmOk(['--db', t.db, 'subcloud', 'import', csv]);
    dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch']);
  });
  afterAll(() => t.cleanup());

  for (const format of ['table', 'json', 'csv', 'value', 'yaml']) {
    test(`strategy-step list -f ${format} | head -1: exit 0, no error, no trace`, () => {
      const r = shell(['strategy-step', 'list', '-f', format], '2>"$ERR" | head -1', t.db);
      expect(r).toEqual({ exit: 0, out: expect.stringMatching(/^[^\n]+\n$/), err: '' });
    });
  }

  // Claim, README "Your data", closed or full output: `dcm … | head -1` stops quietly with exit 0.
  test('subcloud list | head -1 and subcloud show | head -1 too', () => {
    expect(shell(['subcloud', 'list'], '2>"$ERR" | head -1', t.db)).toMatchObject({ exit: 0, err: '' });
    expect(shell(['subcloud', 'show', 'subcloud-with-a-long-name-7'], '2>"$ERR" | head -1', t.db)).toMatchObject({ exit: 0, err: '' });
  });

  // Claim, README "Your data", closed or full output: a stdout that cannot take the result is `error: cannot write the
  // output (ENOSPC)`, exit 1.
  test('a stdout that is full (> /dev/full) is a failure said in one line', () => {
    const r = shell(['subcloud', 'list'], '>/dev/full 2>"$ERR"', t.db);
    expect(r).toEqual({ exit: 1, out: '', err: 'error: cannot write the output (ENOSPC)\n' });
  });
});

describe('an apply whose stderr is closed or full', () => {
  let t: ReturnType<typeof tempDir>;
  const prepare = () => {
    t = tempDir('dcm-pipes-');
    dcmOk(['--db', t.db, 'subcloud', 'add', ...Array.from({ length: 30 }, (_, i) => `s${i + 1}`)]);
    dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '10', '--sim-latency', '1ms..5ms']);
  };
  const state = () => dcmOk(['--db', t.db, 'strategy', 'show', '-f', 'value', '-c', 'state']).stdout;
  const history = () => dcmOk(['--db', t.db, 'strategy-step', 'list', '-f', 'value', '-c', 'state']).stdout.split('\n').filter(Boolean);

  // Claim, README "Your data", closed or full output: a closed stderr drops progress and nothing else; the apply goes on
  // to its end and exits with the strategy's code.
  test('dcm strategy apply 2>&1 | head -2: the apply completes and exits 0', () => {
    prepare();
    try {
      const r = shell(['strategy', 'apply'], '2>&1 | head -2', t.db);
      expect(r.exit).toBe(0);
      expect(r.out.split('\n').filter(Boolean)).toHaveLength(2);
      expect(state()).toBe('complete\n');
      expect(new Set(history())).toEqual(new Set(['complete']));
    } finally {
      t.cleanup();
    }
  });

  // Claim, README "Your data", closed or full output: … and so does a full stderr.
  test('dcm strategy apply 2>/dev/full: the apply completes and exits 0', () => {
    prepare();
    try {
      const r = shell(['strategy', 'apply'], '2>/dev/full', t.db);
      expect(r.exit).toBe(0);
      expect(state()).toBe('complete\n');
    } finally {
      t.cleanup();
    }
  });
});
