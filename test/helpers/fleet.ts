/**
 * Shared pieces of the inventory/strategy/output tests: the example fleet, file fingerprints, and
 * the check that a refused command printed one `error:` line, exited with the right code and
 * changed nothing.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { openTestDb, openTestSites, pgDatabaseOf, pgDigest } from './db.js';
import type { Db } from '../../src/platform/db.js';
import { isPgUrl } from '../../src/domain/db-url.js';
import { afterAll, beforeAll, expect } from '@jest/globals';
import { sitesFileOf } from '../../src/platform/sites-file.js';
import { dcm, dcmOk, tempDir, type RunResult } from './cli.js';
import { dcmQuickOk } from './quick.js';

export { dcm, dcmOk, tempDir };

/** sha256 of a file's bytes, or null when it does not exist. */
export function fileHash(file: string): string | null {
  if (!fs.existsSync(file)) return null;
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/**
 * Names and hashes of every file in a directory (catches a created file, or a stray -wal); in the
 * PostgreSQL pass, the digest of the folder's database on the server too.
 */
export function dirFingerprint(dir: string): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  const pg = pgDatabaseOf(dir);
  if (pg) out['<database on the server>'] = pgDigest(pg);
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const st = fs.statSync(p);
    // Only regular files are read: reading a FIFO would wait for a writer.
    out[name] = st.isDirectory() ? 'dir' : st.isFile() ? fileHash(p) : 'special';
  }
  return out;
}

/** One error line, last (warnings that explain it may precede it), no stack trace, nothing on stdout. */
export function expectErrorLine(r: RunResult, code: number, message: string | RegExp): void {
  // One error line, last; warnings that explain it may come first (issue 49: who create left out).
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code, stderr: expect.stringMatching(/^(warning: [^\n]*\n( {2}[^\n]*\n)*)*error: [^\n]+\n$/) });
  expect(r.stderr).not.toMatch(/^\s+at .+/m);
  expect(r.stdout).toBe('');
  const text = r.stderr.slice(r.stderr.lastIndexOf('error: ') + 'error: '.length, -1);
  if (typeof message === 'string') expect(text).toBe(message);
  else expect(text).toMatch(message);
}

/**
 * Run a command that must be refused: check the error line and exit code, and that the files of
 * `dir` (the database among them) are byte for byte what they were.
 */
export function expectRefused(
  dir: string,
  args: string[],
  code: number,
  message: string | RegExp,
  opts: Parameters<typeof dcm>[1] = {},
): RunResult {
  const before = dirFingerprint(dir);
  const r = dcm(args, opts);
  expectErrorLine(r, code, message);
  expect(dirFingerprint(dir)).toEqual(before);
  return r;
}

/** Open the file with better-sqlite3 for a look or a tweak the CLI does not offer. */
export async function withSql<T>(db: string, fn: (d: Db) => T | Promise<T>, create = false): Promise<T> {
  const d = await openTestDb(db, { fileMustExist: !create });
  try {
    return await fn(d);
  } finally {
    d.close();
  }
}

/** Open the sim driver's sites file beside the database `db` (read-only: a look at the far side). */
export async function withSites<T>(db: string, fn: (d: Db) => T | Promise<T>): Promise<T> {
  if (!isPgUrl(db)) return await withSql(sitesFileOf(fs.realpathSync(db)), fn);
  const d = await openTestSites(db);
  try {
    return await fn(d);
  } finally {
    d.close();
  }
}

/** The windows recorded for the stages of the strategy: [stage, max_parallel]. */
export async function stageWindows(db: string): Promise<[number, number][]> {
  return await withSql(db, async (d) =>
    (await d.prepare('SELECT stage, max_parallel FROM strategy_stage ORDER BY stage').all() as { stage: number; max_parallel: number }[]).map(
      (r) => [r.stage, r.max_parallel],
    ),
  );
}

/**
 * The example fleet of the issue. Default (id 1, parallel, 2): s1 managed online out-of-sync,
 * s2 unmanaged, s3 in-sync; canary (id 2, parallel, 3): s4, s5 offline; rest (id 3, serial): s6..s8.
 */
export function makeFleet(db: string): void {
  const run = (args: string[], input?: string) => dcmQuickOk(['--db', db, ...args], { input });
  run(['subcloud-group', 'add', '--name', 'canary', '--max_parallel_subclouds', '3']);
  run(['subcloud-group', 'add', '--name', 'rest', '--update_apply_type', 'serial']);
  run(['subcloud', 'import', '-'], FLEET_JSONL);
}

export const FLEET_JSONL = [
  { name: 's1' },
  { name: 's2', management: 'unmanaged' },
  { name: 's3', sync: 'in-sync' },
  { name: 's4', group: 'canary' },
  { name: 's5', group: 'canary', availability: 'offline' },
  { name: 's6', group: 'rest' },
  { name: 's7', group: 'rest' },
  { name: 's8', group: 'rest' },
]
  .map((r) => JSON.stringify(r))
  .join('\n');

/**
 * A template file made once per test file, and a fresh copy of it per test. A dcm process leaves
 * no -wal behind (the last connection checkpoints it), so copying the main file is enough.
 */
export class Fixture {
  private readonly root = tempDir();
  private n = 0;
  readonly template = path.join(this.root.dir, 'template.db');

  constructor(build?: (db: string) => void) {
    if (!build) return;
    build(this.template);
    expect(fs.existsSync(this.template + '-wal')).toBe(false);
  }

  /** A fixture whose template is built by an asynchronous `build` (a look into the file with withSql). */
  static async made(build: (db: string) => Promise<void>): Promise<Fixture> {
    const f = new Fixture();
    await build(f.template);
    expect(fs.existsSync(f.template + '-wal')).toBe(false);
    return f;
  }

  /** A new directory holding a copy of the template as dcm.db (or no file with `empty`). */
  fresh(empty = false): { dir: string; db: string } {
    const dir = path.join(this.root.dir, `t${++this.n}`);
    fs.mkdirSync(dir);
    const db = path.join(dir, 'dcm.db');
    if (!empty) fs.copyFileSync(this.template, db);
    return { dir, db };
  }

  cleanup(): void {
    this.root.cleanup();
  }
}

/** Parse `-f json` output. */
export function json<T = unknown>(r: RunResult): T {
  return JSON.parse(r.stdout) as T;
}

export const TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$/;

/**
 * The example fleet, and the same fleet with a patch strategy (s1, s4, s6..s8), built once per test
 * file; each test takes a fresh copy with `.fresh()`.
 */
export function exampleFixtures(): { fleet: Fixture; withStrategy: Fixture } {
  const fx = {} as { fleet: Fixture; withStrategy: Fixture };
  beforeAll(() => {
    fx.fleet = new Fixture(makeFleet);
    fx.withStrategy = new Fixture((db) => {
      fs.copyFileSync(fx.fleet.template, db);
      dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch']);
    });
  });
  afterAll(() => {
    fx.fleet.cleanup();
    fx.withStrategy.cleanup();
  });
  return fx;
}

/**
 * A fleet made once by `make` (dcm commands on a template file) and copied for each test: the
 * dcmanager-compatibility tests' shape. `fleet()` hands out a fresh copy; `cleanup()` removes them all.
 */
export function templateFleet(make: (template: string) => void): { fleet: () => string; cleanup: () => void } {
  const tmp = tempDir();
  const template = path.join(tmp.dir, 'template.db');
  make(template);
  let n = 0;
  return {
    fleet: () => {
      const db = path.join(tmp.dir, `fleet${++n}.db`);
      fs.copyFileSync(template, db);
      return db;
    },
    cleanup: () => tmp.cleanup(),
  };
}
