/**
 * SPEC §2.1 "Faults" and "Paths" for ordinary commands, caused for real: random bytes in a page, a
 * file-size limit (`ulimit -f` in a child shell), a directory the process may not write in (a
 * read-only bind mount, or the command run as `nobody`, since root writes through file modes); and
 * `dcm db check` / `dcm db backup`, the backup taken while an apply runs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { BIN, dcm, dcmOk, dcmSpawn, tempDir, waitFor, type RunResult } from '../helpers/cli.js';
import { expectErrorLine, fileHash } from '../helpers/fleet.js';

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir('dcm-faults-');
});
afterEach(() => t.cleanup());

const names = (db: string) => dcmOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name']).stdout;

/** Overwrite the start of the subcloud table's root page with random bytes (a real broken page). */
function corruptSubcloudTable(db: string): void {
  const raw = new Database(db, { readonly: true });
  const { rootpage } = raw.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'subcloud'").get() as { rootpage: number };
  const pageSize = raw.pragma('page_size', { simple: true }) as number;
  raw.close();
  const fd = fs.openSync(db, 'r+');
  // A leaf-table page type, then garbage where the cell count and pointers are.
  fs.writeSync(fd, Buffer.concat([Buffer.from([0x0d]), crypto.randomBytes(200)]), 0, 201, (rootpage - 1) * pageSize);
  fs.closeSync(fd);
}

describe('a damaged file', () => {
  // Claim, README "Your data", a damaged file: a command that meets the damage stops with `error: PATH is damaged (…)`
  // (exit 1) and writes nothing; `dcm db check` lists what is wrong.
  test('every kind of command stops with one line naming the file, exit 1, and writes nothing', () => {
    dcmOk(['--db', t.db, 'subcloud', 'add', ...Array.from({ length: 300 }, (_, i) => `s${i + 1}`)]);
    corruptSubcloudTable(t.db);
    const before = fileHash(t.db);
    const damaged = new RegExp(`^${t.db.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is damaged \\(database disk image is malformed\\)`);
    for (const args of [
      ['subcloud', 'list'],
      ['subcloud', 'list', '-f', 'json'],
      ['subcloud', 'add', 'new1'],
      ['subcloud', 'update', 's5', '--availability', 'offline'],
      ['strategy', 'create', '--type', 'patch'],
    ]) {
      expectErrorLine(dcm(['--db', t.db, ...args]), 1, damaged);
      expect(fileHash(t.db)).toBe(before);
    }
    const check = dcm(['--db', t.db, 'db', 'check', '-f', 'value']);
    expect(check.code).toBe(1);
    expect(check.stdout).not.toBe('ok\n');
    expect(check.stdout.split('\n').length).toBeGreaterThan(1);
    expect(fileHash(t.db)).toBe(before);
  });

  test('a file that is not SQLite at all is refused by db check too', () => {
    fs.writeFileSync(t.db, crypto.randomBytes(8192));
    expectErrorLine(dcm(['--db', t.db, 'db', 'check']), 1, `${t.db} is not a dcm database (not an SQLite file)`);
  });
});

/** Run dcm in `sh` with a file-size limit (in the shell's blocks): writes past it fail with EFBIG. */
function underFileLimit(blocks: number, args: string[]): RunResult {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const r = spawnSync('sh', ['-c', `ulimit -f ${blocks} && exec ${quoted}`], { encoding: 'utf8' });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

describe('a full disk (a file-size limit)', () => {
  const csv = () => {
    const file = path.join(t.dir, 'big.csv');
    fs.writeFileSync(file, ['name,location', ...Array.from({ length: 20000 }, (_, i) => `imp${i},rack ${i} of a long row of racks`)].join('\n'));
    return file;
  };

  // Claim, README "Your data", a full disk or a file-size limit: one line, `error: disk full writing PATH: …` (exit 1);
  // the transaction that did not fit is rolled back, everything before it is intact (every command is one transaction).
  test('an import into an existing file fails in one line, not killed by SIGXFSZ, and loses nothing', () => {
    dcmOk(['--db', t.db, 'subcloud', 'add', 'a', 'b']);
    const r = underFileLimit(400, ['--db', t.db, 'subcloud', 'import', csv()]);
    expect(r.signal).toBeNull();
    expectErrorLine(r, 1, new RegExp(`^disk full writing ${t.db.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: nothing committed was lost; free space, then run the command again`));
    expect(names(t.db)).toBe('a\nb\n');
    expect(dcmOk(['--db', t.db, 'db', 'check', '-f', 'value']).stdout).toBe('ok\n');
    // With room again, the same import goes through.
    dcmOk(['--db', t.db, 'subcloud', 'import', csv()]);
    expect(names(t.db).split('\n')).toHaveLength(20003);
  });

  // Claim, README "Your data", a full disk: a first write that does not fit leaves no file behind.
  test('a first write that does not fit creates no file and leaves no temporary file', () => {
    const file = csv();
    const r = underFileLimit(100, ['--db', t.db, 'subcloud', 'import', file]);
    expectErrorLine(r, 1, /^disk full writing .*dcm\.db: nothing committed was lost/);
    expect(fs.readdirSync(t.dir)).toEqual(['big.csv']);
  });
});

/**
 * How to run dcm in a directory it may not write in. Root writes through file modes, so as root:
 * a read-only bind mount of the directory in a mount namespace of the command's own (`unshare -m`,
 * a real EROFS), else the command run as `nobody` (`setpriv`) on a directory chmod 555. As another
 * user, chmod 555 is enough. Neither available: the test fails and says so.
 */
type ReadOnlyWay = 'unshare' | 'nobody' | 'chmod';
let way: ReadOnlyWay;

function spawnResult(cmd: string, args: string[]): RunResult {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error) return { code: -1, signal: null, stdout: '', stderr: r.error.message };
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

const MOUNT_RO = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"';

function readOnly(args: string[]): RunResult {
  if (way === 'unshare') return spawnResult('unshare', ['-m', 'sh', '-c', MOUNT_RO, t.dir, process.execPath, BIN, ...args]);
  fs.chmodSync(t.dir, 0o555);
  try {
    if (way === 'nobody') {
      return spawnResult('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, ...args]);
    }
    return spawnResult(process.execPath, [BIN, ...args]);
  } finally {
    fs.chmodSync(t.dir, 0o755);
  }
}

describe('a directory the process cannot write in', () => {
  beforeEach(() => {
    fs.chmodSync(t.dir, 0o755);
    if (process.getuid?.() !== 0) {
      way = 'chmod';
      return;
    }
    const tried: string[] = [];
    for (const w of ['unshare', 'nobody'] as const) {
      way = w;
      const probe = readOnly(['--db', path.join(t.dir, 'probe.db'), 'subcloud', 'add', 'p']);
      if (probe.code === 1 && probe.stderr.includes('(read-only)')) return;
      tried.push(`${w}: ${probe.stderr.trim()}`);
    }
    throw new Error(`no way to make a read-only directory here (need unshare with mount rights, or setpriv): ${tried.join('; ')}`);
  });

  // Claim, README "Your data", paths: in a directory dcm may not write in, writers stop with `error: cannot write in DIR
  // (read-only)`; readers still read (from an exact in-memory copy when no writer left a -wal).
  test('writers are refused with "cannot write in DIR (read-only)"; readers still read', () => {
    dcmOk(['--db', t.db, 'subcloud', 'add', 'a', 'b']);
    const before = fileHash(t.db);
    expectErrorLine(readOnly(['--db', t.db, 'subcloud', 'add', 'c']), 1, `cannot write in ${t.dir} (read-only)`);
    expectErrorLine(readOnly(['--db', path.join(t.dir, 'new.db'), 'subcloud', 'add', 'c']), 1, `cannot write in ${t.dir} (read-only)`);
    expectErrorLine(readOnly(['--db', t.db, 'db', 'backup', path.join(t.dir, 'copy.db')]), 1, `cannot write in ${t.dir} (read-only)`);
    // No -wal or -shm here (the last writer closed cleanly): read all the same.
    const r = readOnly(['--db', t.db, 'subcloud', 'list', '-f', 'value', '-c', 'name']);
    expect(r).toMatchObject({ code: 0, stdout: 'a\nb\n', stderr: '' });
    expect(readOnly(['--db', t.db, 'db', 'check', '-f', 'value']).stdout).toBe('ok\n');
    expect(fileHash(t.db)).toBe(before);
    expect(fs.readdirSync(t.dir)).toEqual(['dcm.db']);
  });

  test('apply, abort and delete of a strategy say "cannot write in DIR (read-only)" and change nothing', () => {
    dcmOk(['--db', t.db, 'subcloud', 'add', 'a']);
    dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch']);
    const before = fileHash(t.db);
    for (const verb of ['apply', 'abort', 'delete']) {
      expectErrorLine(readOnly(['--db', t.db, 'strategy', verb]), 1, `cannot write in ${t.dir} (read-only)`);
    }
    expect(fileHash(t.db)).toBe(before);
    expect(fs.readdirSync(t.dir)).toEqual(['dcm.db']);
  });

  // Claim, README "Your data", paths: … readers read through the -wal/-shm when a writer left them.
  test('a reader reads what is in the -wal of a writer that holds the file', async () => {
    dcmOk(['--db', t.db, 'subcloud', 'add', 'a', 'b']);
    // A writer (root) that committed into its WAL and keeps the file open.
    const holder = dcmSpawnHolder(t.db, "UPDATE subcloud SET location = 'in the wal' WHERE name = 'a'");
    try {
      await waitFor(() => fs.existsSync(`${t.db}-wal`) && fs.statSync(`${t.db}-wal`).size > 0);
      const r = readOnly(['--db', t.db, 'subcloud', 'show', 'a', '-f', 'value', '-c', 'location']);
      expect(r).toMatchObject({ code: 0, stdout: 'in the wal\n', stderr: '' });
    } finally {
      holder.kill('SIGKILL');
    }
  });
});

/** A process that commits `sql` into the file's WAL and keeps the file open (so the WAL stays). */
function dcmSpawnHolder(db: string, sql: string) {
  const script = `
    const Database = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))});
    const db = new Database(process.argv[1]);
    db.exec(process.argv[2]);
    setInterval(() => {}, 1000);`;
  return spawn(process.execPath, ['-e', script, db, sql], { stdio: 'ignore' });
}

describe('dcm db check and dcm db backup', () => {
  // Claim, README "Your data": `dcm db check` says whether the file is sound.
  test('check says ok on a sound file; a missing file is an error and is not created', () => {
    expectErrorLine(dcm(['--db', t.db, 'db', 'check']), 1, `${t.db} does not exist`);
    expect(fs.readdirSync(t.dir)).toEqual([]);
    dcmOk(['--db', t.db, 'subcloud', 'add', 'a']);
    const r = dcm(['--db', t.db, 'db', 'check', '-f', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([{ 'integrity check': 'ok' }]);
    expect(fs.readdirSync(t.dir)).toEqual(['dcm.db']);
  });

  // Claim, README "Your data": `dcm db backup FILE` keeps a copy, even while an apply runs.
  test('backup refuses an existing target, and a copy taken while an apply runs is sound and usable', async () => {
    const copy = path.join(t.dir, 'copy.db');
    fs.writeFileSync(copy, 'precious');
    dcmOk(['--db', t.db, 'subcloud', 'add', ...Array.from({ length: 120 }, (_, i) => `s${i + 1}`)]);
    expectErrorLine(dcm(['--db', t.db, 'db', 'backup', copy]), 1, `${copy} exists; remove it or name another file`);
    expect(fs.readFileSync(copy, 'utf8')).toBe('precious');
    fs.rmSync(copy);

    // The apply cannot end before the copy is taken: s1's first state waits for a file the test
    // creates once the backup has returned (the other subclouds go on writing meanwhile).
    const side = tempDir('dcm-backup-side-');
    const go = path.join(side.dir, 'go');
    const cfg = path.join(side.dir, 'exec.yaml');
    fs.writeFileSync(cfg, `states:\n  pre check: 'if [ "$DCM_CLOUD" = s1 ]; then while [ ! -e ${go} ]; do sleep 0.02; done; fi'\n  "*": "true"\n`);
    dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '20', '--driver', 'exec', '--exec-config', cfg,
      '--log-dir', path.join(side.dir, 'logs')]);
    const apply = dcmSpawn(['--db', t.db, 'strategy', 'apply', '-q']);
    const read = () => new Database(t.db, { readonly: true, fileMustExist: true });
    await waitFor(() => {
      const d = read();
      try {
        return (d.prepare("SELECT count(*) AS n FROM strategy_step WHERE state = 'complete'").get() as { n: number }).n >= 10;
      } finally {
        d.close();
      }
    });
    let b: RunResult;
    try {
      b = dcm(['--db', t.db, 'db', 'backup', copy, '-f', 'json']);
      expect(apply.child.exitCode).toBe(null);
    } finally {
      fs.writeFileSync(go, '');
    }
    expect([b.code, b.stderr]).toEqual([0, '']);
    expect(JSON.parse(b.stdout)).toMatchObject({ backup: copy, bytes: fs.statSync(copy).size });
    const done = await apply.done;
    side.cleanup();
    expect(done.code).toBe(0);
    expect(dcmOk(['--db', copy, 'db', 'check', '-f', 'value']).stdout).toBe('ok\n');
    // The copy is a dcm database of its own: the strategy as it was, mid-apply.
    expect(dcmOk(['--db', copy, 'strategy', 'show', '-f', 'value', '-c', 'state']).stdout).toBe('applying\n');
    expect(names(copy).split('\n')).toHaveLength(121);
    // No temporary file left (the exec apply's run logs are kept apart, in its own folder).
    expect(fs.readdirSync(t.dir).sort().filter((n) => !n.endsWith('.logs'))).toEqual(['copy.db', 'dcm.db']);
  });
});

describe('dcm db backup FILE: what FILE may be', () => {
  const cases: [string, (dir: string) => string, number, (dir: string) => string | RegExp][] = [
    ['an empty name', () => '', 2, () => 'give the backup a file name'],
    ['a directory', (d) => d, 1, (d) => `cannot back up to ${d}: it is a directory`],
    ['a name ending in /', (d) => `${d}/`, 2, (d) => `give the backup a file name, not the directory ${d}/`],
    ['a missing directory', (d) => path.join(d, 'nodir', 'x.db'), 1, (d) => `cannot back up to ${path.join(d, 'nodir', 'x.db')}: directory ${path.join(d, 'nodir')} does not exist`],
    ['a dangling symlink', (d) => (fs.symlinkSync('gone.db', path.join(d, 'link')), path.join(d, 'link')), 1, () => /^cannot back up to .*link: a dangling symlink \(to gone\.db\)$/],
  ];
  test.each(cases)('%s is refused, and nothing is written', (_what, target, code, message) => {
    dcmOk(['--db', t.db, 'subcloud', 'add', 'a']);
    const file = target(t.dir);
    const before = fs.readdirSync(t.dir).sort();
    expectErrorLine(dcm(['--db', t.db, 'db', 'backup', file]), code, message(t.dir));
    expect(fs.readdirSync(t.dir).sort()).toEqual(before);
  });
});
