/**
 * A property over the command line of every command (SPEC §8, issue 7): whatever the options and
 * values (dashes, empty strings, control characters, huge numbers, unknown flags), dcm exits 0, 1
 * or 2, prints at most one `error:` line, never a stack trace, and leaves the directory byte for
 * byte as it was when it fails. The commands and their options are read from the program itself,
 * so a command added later is covered without touching this file.
 *
 * Seeded and bounded: most runs go through `main()` in this process (the same parse → command →
 * render → exit code path as bin/dcm.js), a smaller sample through the built binary.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import type { Command, Option } from 'commander';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { buildProgram } from '../../src/cli/program.js';
import { BIN, dcmOk, tempDir, type RunResult } from '../helpers/cli.js';
import { dirFingerprint } from '../helpers/fleet.js';
import { run as runInProcess } from '../helpers/inprocess.js';

/** Fixed by default; DCM_FUZZ_SEED and DCM_FUZZ_RUNS explore further (e.g. 5000 runs, a new seed). */
const SEED = Number(process.env.DCM_FUZZ_SEED ?? 20261130);
const RUNS = Number(process.env.DCM_FUZZ_RUNS ?? 300);

interface Spec {
  path: string[];
  options: { flag: string; takesValue: boolean; valueOptional: boolean }[];
  args: { required: boolean; variadic: boolean }[];
}

/** Options that wait for something (a redraw loop, a log to grow): a run would not end. */
const WAITS = /watch|follow/;

function leaves(cmd: Command, prefix: string[] = []): Spec[] {
  const out: Spec[] = [];
  for (const sub of cmd.commands) {
    if (sub.name() === 'help') continue;
    const p = [...prefix, sub.name()];
    if (sub.commands.length) out.push(...leaves(sub, p));
    else {
      const options = (sub.options as readonly Option[])
        .filter((o) => !WAITS.test(o.long ?? ''))
        .flatMap((o) =>
          [o.long, o.short].filter((f): f is string => Boolean(f)).map((flag) => ({ flag, takesValue: o.required || o.optional, valueOptional: o.optional })),
        );
      out.push({ path: p, options, args: sub.registeredArguments.map((a) => ({ required: a.required, variadic: a.variadic })) });
    }
  }
  return out;
}

const SPECS = leaves(await buildProgram(async () => {}));

const TRICKY = [
  '', '-', '--', '-x', '--nope', '--db', '-f', '-c', '0', '-1', '1', '2', '3', '5000', '5001', '251',
  '99999999999999999999', '1e309', 'NaN', 'Infinity', '0.5', '1.5', '10', '10s', '0..5ms', '5ms..1ms', '9999999h',
  'a=b', '=', 'all=in-sync', 'patching=out-of-sync', 's1=pre check', 's1', 's2', 's3', 'nosuch', 'canary', 'Default',
  '1', '22.12', 'complete', 'failed', 'initial', 'parallel', 'serial', 'json', 'table', 'yaml', 'value', 'csv',
  'name', 'id', 'state', 'patch', 'prestage', 'a\nb', 'a\tb', '\u0007', ' lead', 'trail ', 'x'.repeat(300), 'ünï☃',
  '../x', '.', 'out.db', '-rf', '--type=patch', '--db=', '-fjson',
];
/** Values a user would type: most runs should get past parsing and reach the file. */
const PLAUSIBLE = [
  's1', 's2', 's3', 's4', 's5', 'canary', 'Default', '1', '2', '3', 'patch', 'kubernetes', 'prestage', 'parallel',
  'serial', 'in-sync', 'out-of-sync', 'online', 'offline', 'managed', 'unmanaged', 'all=in-sync', 'usm=out-of-sync',
  '10s', '0', '5ms', '1h', 'backup.db', 'a description', 'complete', 'failed',
];
const value = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...PLAUSIBLE) },
  { weight: 3, arbitrary: fc.constantFrom(...TRICKY) },
  { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
  { weight: 1, arbitrary: fc.integer().map(String) },
);

const GLOBAL = fc.constantFrom<string[]>(
  [], [], [], [], [], [], [], ['-f', 'json'], ['-f', 'value'], ['-f', 'yaml'], ['-f', 'csv'], ['-f', 'nope'], ['-c', 'name'], ['-c', 'nope'],
  ['--noindent'], ['--no-color'], ['-q'], ['-c'], ['-f'],
);

/** One command line: the command, its positionals and options (some broken) in any order. */
const commandLine = (withHelp: boolean) =>
  fc
    .constantFrom(...SPECS)
    .chain((spec) =>
      fc.tuple(
        fc.constant(spec),
        // Usually as many positionals as the command takes; sometimes one more or one less.
        fc.integer({ min: -1, max: 1 }).chain((d) =>
          fc.array(value, { minLength: Math.max(0, spec.args.length + d), maxLength: Math.max(0, spec.args.length + d) }),
        ),
        fc.array(
          fc.tuple(
            spec.options.length ? fc.constantFrom(...spec.options) : fc.constant(null),
            value,
            fc.integer({ min: 0, max: 9 }),
          ),
          { maxLength: 3 },
        ),
        GLOBAL,
        withHelp ? fc.constantFrom<string[]>([], [], [], [], ['--help'], ['--version'], ['-h']) : fc.constant<string[]>([]),
        fc.boolean(),
      ),
    )
    .map(([spec, positionals, opts, global, help, front]) => {
      const tokens: string[] = [...positionals];
      for (const [opt, v, dice] of opts) {
        if (!opt) continue;
        if (dice === 0) tokens.push(`${opt.flag}`); // a value left out
        else if (opt.takesValue && dice === 1 && opt.flag.startsWith('--')) tokens.push(`${opt.flag}=${v}`);
        else tokens.push(opt.flag, ...(opt.takesValue ? [v] : []));
      }
      const args = front ? [...global, ...spec.path, ...tokens, ...help] : [...spec.path, ...tokens, ...global, ...help];
      return { spec, args };
    });

let fixtures: ReturnType<typeof tempDir>;
const TEMPLATES = ['fleet.db', 'strategy.db'];

beforeAll(() => {
  fixtures = tempDir('dcm-fuzz-fixtures-');
  const fleet = path.join(fixtures.dir, 'fleet.db');
  const ok = (args: string[]) => dcmOk(['--db', fleet, ...args]);
  ok(['subcloud-group', 'add', '--name', 'canary', '--max_parallel_subclouds', '3']);
  ok(['subcloud', 'add', 's1', 's2', 's3', '--group', 'canary']);
  ok(['subcloud', 'add', 's4', '--availability', 'offline']);
  ok(['subcloud', 'add', 's5', '--sync', 'all=in-sync']);
  fs.copyFileSync(fleet, path.join(fixtures.dir, 'strategy.db'));
  // A strategy whose apply ends at once (no latency), so a generated `apply` is quick.
  dcmOk(['--db', path.join(fixtures.dir, 'strategy.db'), 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
});
afterAll(() => fixtures.cleanup());

/** The property's checks on one run. */
function expectWellBehaved(args: string[], r: RunResult, before: Record<string, string | null>, after: Record<string, string | null>): void {
  const where = `dcm ${JSON.stringify(args)} → ${r.code}\n${r.stderr}`;
  expect({ where, code: [0, 1, 2].includes(r.code ?? -1) }).toEqual({ where, code: true });
  const errors = r.stderr.split('\n').filter((l) => l.startsWith('error:'));
  expect({ where, errors: errors.length <= 1 }).toEqual({ where, errors: true });
  expect({ where, trace: /^\s+at .+\(.*\)$|^\s+at .+:\d+:\d+$/m.test(r.stderr + r.stdout) }).toEqual({ where, trace: false });
  if (r.code !== 0) {
    expect({ where, errorLine: errors.length === 1 || /^Usage:/m.test(r.stdout + r.stderr) }).toEqual({ where, errorLine: true });
    // A failed apply has done work (the strategy ran and failed): that is its result, not a leak.
    if (!args.includes('apply')) expect({ where, files: after }).toEqual({ where, files: before });
  }
}

function freshDir(template: string): string {
  const dir = fs.mkdtempSync(path.join(fixtures.dir, 'run-'));
  fs.copyFileSync(path.join(fixtures.dir, template), path.join(dir, 'dcm.db'));
  return dir;
}

describe('every command line', () => {
  test('in process: exit 0/1/2, at most one error line, no trace, nothing changed on failure', async () => {
    const cwd = process.cwd();
    await fc.assert(
      fc.asyncProperty(commandLine(false), fc.constantFrom(...TEMPLATES), async ({ args }, template) => {
        const dir = freshDir(template);
        // Relative file names in the arguments (a backup target, an import file) land in the run's directory.
        process.chdir(dir);
        try {
          const full = ['--db', path.join(dir, 'dcm.db'), ...args];
          // An import from stdin would read this test's stdin: give it no input instead.
          if (args[0] === 'subcloud' && args[1] === 'import' && (args.length === 2 || args[2] === '-')) full.push('/dev/null');
          // An apply's progress goes to the process's own stderr: keep the test's output readable.
          if (args.includes('apply')) full.push('-q');
          const before = dirFingerprint(dir);
          const r = await runInProcess(full);
          expectWellBehaved(full, r, before, dirFingerprint(dir));
        } finally {
          process.chdir(cwd);
          fs.rmSync(dir, { recursive: true, force: true });
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });

  test('through the built binary: the same, with help and --version among them', () => {
    fc.assert(
      fc.property(commandLine(true), fc.constantFrom(...TEMPLATES), ({ args }, template) => {
        // argv cannot hold a NUL byte: such a command line cannot be typed.
        fc.pre(!args.some((a) => a.includes('\0')));
        const dir = freshDir(template);
        try {
          const full = ['--db', path.join(dir, 'dcm.db'), ...args];
          const before = dirFingerprint(dir);
          const env = { ...process.env };
          delete env.DCM_DB;
          delete env.DCM_DEBUG;
          const p = spawnSync(process.execPath, [BIN, ...full], { cwd: dir, input: '', env, encoding: 'utf8', timeout: 60_000 });
          const r: RunResult = { code: p.status, signal: p.signal, stdout: p.stdout, stderr: p.stderr };
          expectWellBehaved(full, r, before, dirFingerprint(dir));
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
      }),
      { seed: SEED + 1, numRuns: Math.ceil(RUNS / 8), endOnFailure: true },
    );
  });
});
