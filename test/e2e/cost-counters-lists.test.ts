/**
 * Costs counted, not timed (issue 21): what a command loads and how much memory a list holds are
 * numbers that do not move with the machine's load, so a change that adds to them fails here on
 * any machine, where a timing would only show in the bench.
 *
 * - Modules: the built `bin/dcm.js` run under the bench's preload (bench/diag/count-modules.js:
 *   an ESM load hook, plus the CommonJS require cache at exit), which lists every module file the
 *   process loaded. The ceilings are the counts of this tree; lower them when a change loads less.
 * - Memory: a list run in a child process with `--expose-gc`, its stdout a sink that collects the
 *   garbage and reads the live heap at every write. A list streamed row by row holds the same
 *   live heap for 100,000 steps as for 10,000; a list gathered whole holds every row and the
 *   whole text (tens of MB at 100,000) while it writes.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { BIN, ROOT, dcmOk, tempDir } from '../helpers/cli.js';

const COUNT_MODULES = path.join(ROOT, 'bench', 'diag', 'count-modules.js');

/** Every module file `dcm ARGS` loads (URLs relative to the project), the preload's own left out. */
function modulesLoaded(dir: string, args: string[]): string[] {
  const out = path.join(dir, 'modules.txt');
  const r = spawnSync(process.execPath, ['--import', COUNT_MODULES, BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, BENCH_MODULES_OUT: out },
  });
  expect(r.status).toBe(0);
  const urls = new Set(
    fs
      .readFileSync(out, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as string)
      .filter((u) => !u.includes('/bench/diag/'))
      .map((u) => u.replace(/^file:\/\/.*?\/(dist|bin|node_modules)\//, '$1/').replace(/^file:\/\/.*\/package\.json$/, 'package.json')),
  );
  return [...urls].sort();
}

/** The live heap's peak (MB) while `dcm ARGS` writes its output, in a child process. */
function liveHeapWhileWriting(dir: string, args: string[]): { peakMb: number; writes: number; bytes: number } {
  const script = path.join(dir, 'heap.mjs');
  fs.writeFileSync(
    script,
    `import { main } from ${JSON.stringify(path.join(ROOT, 'dist', 'cli', 'main.js'))};
let peak = 0, writes = 0, bytes = 0;
const measure = () => { globalThis.gc(); peak = Math.max(peak, process.memoryUsage().heapUsed); };
const stdout = {
  isTTY: false,
  write(chunk) { writes++; bytes += chunk.length; measure(); return true; },
  on() {}, once() {}, off() {},
};
const code = await main(JSON.parse(process.argv[2]), { stdout, stderr: process.stderr });
process.stdout.write(JSON.stringify({ code, peakMb: peak / 2 ** 20, writes, bytes }));
`,
  );
  const r = spawnSync(process.execPath, ['--expose-gc', script, JSON.stringify(args)], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  const res = JSON.parse(r.stdout) as { code: number; peakMb: number; writes: number; bytes: number };
  expect(res.code).toBe(0);
  return res;
}

describe('modules loaded', () => {
  const t = tempDir('dcm-cost-');
  beforeAll(() => {
    fs.writeFileSync(path.join(t.dir, 'fleet.csv'), 'name\nsc1\nsc2\n');
    dcmOk(['--db', t.db, 'subcloud', 'import', path.join(t.dir, 'fleet.csv')]);
    dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch']);
  });
  afterAll(() => t.cleanup());

  test('dcm --help: commander and the command tree, no SQLite, no renderer', () => {
    const mods = modulesLoaded(t.dir, ['--help']);
    expect(mods.filter((m) => /better-sqlite3|chalk|string-width|dist\/store\/(?!path\.js)|dist\/cli\/output\/(render|table|stream)/.test(m))).toEqual([]);
    // 42: the program's builder has a module of its own (cli/program.ts), so that a list loads
    // only the commands it names. 43: what a --db names, a file or a server (domain/db-url.ts);
    // the PostgreSQL backend itself is loaded only for a server. 44: every error line escapes the
    // text from outside dcm it carries (domain/outside-text.ts). 45: the prestage options' rules
    // (domain/prestage-rules.ts), which their parser checks (issue 52).
    expect(mods.length).toBeLessThanOrEqual(45);
    expect(mods.filter((m) => /dist\/(store\/pg|platform\/pg-)|node_modules\/pg\//.test(m))).toEqual([]);
  });

  test('strategy-step list -f json: SQLite and the streamed formats, no table layout, no chalk', () => {
    const mods = modulesLoaded(t.dir, ['--db', t.db, 'strategy-step', 'list', '-f', 'json']);
    expect(mods.filter((m) => /chalk|string-width|dist\/cli\/output\/(render|table)\.js/.test(m))).toEqual([]);
    expect(mods).toContain('node_modules/better-sqlite3/lib/index.js');
    // A file's list loads none of the PostgreSQL backend.
    expect(mods.filter((m) => /dist\/(store\/pg|platform\/pg-)|node_modules\/pg\//.test(m))).toEqual([]);
    // Only the strategy-step commands are built (cli/program.ts): with every command's module it
    // was 81.
    expect(mods.filter((m) => /dist\/cli\/(subcloud|group|strategy|strategy-config|db|completion|alarm)\.js/.test(m))).toEqual([]);
    // 73: the escaping of outside text (domain/outside-text.ts), which every error line takes.
    // 75: the store's asynchronous face on a file (platform/sqlite-db.ts, platform/turns.ts).
    // 79: the runtime (platform/runtime.ts, clock.ts, timers.ts, who.ts): a command reaches the
    // clock and the process table through it, as the simulator's operator does with its own.
    // 80: a step's stage as dcmanager names it (domain/step-stage.ts, issue 52).
    expect(mods.length).toBeLessThanOrEqual(80);
  });

  test('subcloud list -f json: the same', () => {
    const mods = modulesLoaded(t.dir, ['--db', t.db, 'subcloud', 'list', '-f', 'json']);
    expect(mods.filter((m) => /chalk|string-width|dist\/cli\/output\/(render|table)\.js/.test(m))).toEqual([]);
    // 76: as the step list, the escaping of outside text and the store's asynchronous face.
    // 80: as the step list, the runtime. 81: as the step list, the step's stage.
    expect(mods.length).toBeLessThanOrEqual(81);
  });
});

describe('a list does not hold its rows', () => {
  const small = tempDir('dcm-cost-10k-');
  const large = tempDir('dcm-cost-100k-');
  beforeAll(() => {
    for (const [t, n] of [
      [small, 10_000],
      [large, 100_000],
    ] as const) {
      const csv = path.join(t.dir, 'fleet.csv');
      const lines = ['name,location'];
      for (let i = 1; i <= n; i++) lines.push(`subcloud-${i},rack ${i % 100}`);
      fs.writeFileSync(csv, lines.join('\n') + '\n');
      dcmOk(['--db', t.db, 'subcloud', 'import', csv]);
      dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch']);
    }
  }, 300_000);
  afterAll(() => {
    small.cleanup();
    large.cleanup();
  });

  for (const [what, args] of [
    ['strategy-step list -f json', ['strategy-step', 'list', '-f', 'json']],
    ['strategy-step list -f yaml', ['strategy-step', 'list', '-f', 'yaml']],
    ['subcloud list -f csv', ['subcloud', 'list', '-f', 'csv']],
    ['subcloud list -d -f value', ['subcloud', 'list', '-d', '-f', 'value']],
  ] as const) {
    test(`${what}: the live heap at 100,000 rows is that of 10,000`, () => {
      const a = liveHeapWhileWriting(small.dir, ['--db', small.db, ...args]);
      const b = liveHeapWhileWriting(large.dir, ['--db', large.db, ...args]);
      // Gathered, 90,000 more rows would add their arrays and their text (over 10 MB); streamed,
      // the difference is noise (statement caches, a bigger line-number table in SQLite).
      expect(b.peakMb - a.peakMb).toBeLessThan(2);
      // Written in pieces, never as one text.
      expect(b.bytes).toBeGreaterThan(5 * a.bytes);
      expect(b.writes).toBeGreaterThan(10);
    });
  }
});
