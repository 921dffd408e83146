/**
 * SPEC §2.1 "Paths" and "Leftovers", through the built binary: what `--db` may name, and the
 * files a dead process leaves beside the database.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { BIN, dcm, dcmOk, dcmSpawn, tempDir, ROOT, waitFor } from '../helpers/cli.js';
import { expectErrorLine, fileHash } from '../helpers/fleet.js';

/** Like fleet.ts's dirFingerprint, but safe on symlinks, loops and FIFOs (never opens them). */
function listing(dir: string): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const st = fs.lstatSync(p);
    out[name] = st.isSymbolicLink() ? `-> ${fs.readlinkSync(p)}` : st.isFile() ? fileHash(p) : 'special';
  }
  return out;
}

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir('dcm-paths-');
});
afterEach(() => t.cleanup());

const READER = ['subcloud', 'list'];
const WRITER = ['subcloud', 'add', 'x1'];

describe('--db names something that is not a database file', () => {
  const cases: [string, (dir: string) => string, RegExp][] = [
    ['a dangling symlink', (dir) => (fs.symlinkSync('nowhere.db', path.join(dir, 'link')), path.join(dir, 'link')), /a dangling symlink \(to nowhere\.db\)\n$/],
    [
      'a symlink loop',
      (dir) => {
        fs.symlinkSync('b', path.join(dir, 'a'));
        fs.symlinkSync('a', path.join(dir, 'b'));
        return path.join(dir, 'a');
      },
      /a symlink loop\n$/,
    ],
    ['a directory', (dir) => (fs.mkdirSync(path.join(dir, 'sub')), path.join(dir, 'sub')), /it is a directory\n$/],
    ['a FIFO', (dir) => (spawnSync('mkfifo', [path.join(dir, 'fifo')]), path.join(dir, 'fifo')), /it is a FIFO\n$/],
  ];
  for (const [what, make, reason] of cases) {
    for (const args of [READER, WRITER]) {
      test(`${what}: ${args.join(' ')} is refused, naming the path, and nothing is created`, () => {
        const db = make(t.dir);
        const before = listing(t.dir);
        // spawnSync would wait for ever on a hang; the test's own timeout would then fail it.
        const r = dcm(['--db', db, ...args]);
        expectErrorLine(r, 1, new RegExp(`^cannot use ${db.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} as the database: .*`));
        expect(r.stderr).toMatch(reason);
        expect(listing(t.dir)).toEqual(before);
      });
    }
  }

  // Claim, README "Your data", paths: `--db` follows symlinks (the -wal lives beside the real file).
  test('a symlink to a database is followed: its -wal stays beside the real file', () => {
    fs.mkdirSync(path.join(t.dir, 'real'));
    const real = path.join(t.dir, 'real', 'fleet.db');
    dcmOk(['--db', real, 'subcloud', 'add', 's1']);
    const link = path.join(t.dir, 'link.db');
    fs.symlinkSync(real, link);
    dcmOk(['--db', link, 'subcloud', 'add', 's2']);
    const r = dcmOk(['--db', link, 'subcloud', 'list', '-f', 'value', '-c', 'name']);
    expect(r.stdout).toBe('s1\ns2\n');
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.readdirSync(t.dir).sort()).toEqual(['link.db', 'real']);
  });

  // Claim, README "Your data", paths: `--db ""` and `DCM_DB=""` are usage errors (exit 2).
  test('--db "" is a usage error for readers and writers; so is DCM_DB=""', () => {
    for (const args of [READER, WRITER]) {
      expectErrorLine(dcm(['--db', '', ...args], { cwd: t.dir }), 2, "option '--db' is empty: name a database file");
      expectErrorLine(dcm(['--db=', ...args], { cwd: t.dir }), 2, "option '--db' is empty: name a database file");
      // (the dcm() helper drops an empty DCM_DB, so spawn directly)
      const r = spawnSync(process.execPath, [BIN, ...args], { cwd: t.dir, env: { ...process.env, DCM_DB: '' }, encoding: 'utf8' });
      expectErrorLine({ code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }, 2, /^DCM_DB is empty/);
    }
    expect(fs.readdirSync(t.dir)).toEqual([]);
  });
});

describe('leftovers of a removed database', () => {
  // Claim, README "Your data", a removed file: with its PATH-wal left behind, dcm creates no database there
  // (`error: PATH-wal is left from a removed database; move it and PATH-shm away`).
  test('a kill -9 leaves a -wal; after rm of the file, a write is refused, and nothing is created', async () => {
    // A writer that dies holding its WAL (as a kill -9 of an apply does).
    const script = `
      const Database = require(${JSON.stringify(path.join(ROOT, 'node_modules', 'better-sqlite3'))});
      const db = new Database(process.argv[1]);
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
      process.stdout.write('ready\\n');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['-e', script, t.db], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    await waitFor(() => out.includes('ready'));
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    expect(fs.existsSync(`${t.db}-wal`)).toBe(true);
    fs.rmSync(t.db);
    const before = listing(t.dir);
    const r = dcm(['--db', t.db, 'subcloud', 'add', 'fresh1']);
    expectErrorLine(r, 1, `${t.db}-wal is left from a removed database; move it and ${t.db}-shm away`);
    expect(listing(t.dir)).toEqual(before);
    // A reader creates nothing either, and finds nothing.
    expect(dcm(['--db', t.db, 'subcloud', 'list', '-f', 'json']).code).toBe(0);
    expect(listing(t.dir)).toEqual(before);
    // Once moved away, the write works, on a sound file.
    fs.rmSync(`${t.db}-wal`);
    fs.rmSync(`${t.db}-shm`, { force: true });
    dcmOk(['--db', t.db, 'subcloud', 'add', 'fresh1']);
    expect(dcmOk(['--db', t.db, 'db', 'check']).stdout).toContain('ok');
  });

  test('the same after a kill -9 of a real apply', async () => {
    dcmOk(['--db', t.db, 'subcloud', 'add', ...Array.from({ length: 40 }, (_, i) => `s${i + 1}`)]);
    dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '50ms..200ms']);
    const apply = dcmSpawn(['--db', t.db, 'strategy', 'apply', '-v']);
    await waitFor(() => apply.stderr().includes('-> updating patches'));
    apply.child.kill('SIGKILL');
    await apply.done;
    expect(fs.existsSync(`${t.db}-wal`)).toBe(true);
    fs.rmSync(t.db);
    const before = listing(t.dir);
    expectErrorLine(dcm(['--db', t.db, 'subcloud', 'add', 'fresh1']), 1, `${t.db}-wal is left from a removed database; move it and ${t.db}-shm away`);
    expect(listing(t.dir)).toEqual(before);
  });

  // Claim, README "Your data", a removed file: temporary files of a first write that was killed are removed by the next
  // command once their process is gone.
  test('a first write killed with SIGKILL leaves its temporary files; the next command removes them', async () => {
    const csv = path.join(t.dir, 'big.csv');
    fs.writeFileSync(csv, ['name', ...Array.from({ length: 300_000 }, (_, i) => `imported-subcloud-${i}`)].join('\n'));
    const imp = dcmSpawn(['--db', t.db, 'subcloud', 'import', csv]);
    const temps = () => fs.readdirSync(t.dir).filter((n) => n.includes('.new'));
    await waitFor(() => temps().length > 0, 60_000, 2);
    imp.child.kill('SIGKILL');
    await imp.done;
    expect(fs.existsSync(t.db)).toBe(false);
    expect(temps().length).toBeGreaterThan(0);
    // A reader finds no database (and creates none), and clears what the dead process left.
    expect(dcm(['--db', t.db, 'subcloud', 'list']).code).toBe(0);
    expect(fs.readdirSync(t.dir)).toEqual(['big.csv']);
  });

  test('a lone -shm is refused too', () => {
    fs.writeFileSync(`${t.db}-shm`, Buffer.alloc(32768));
    expectErrorLine(dcm(['--db', t.db, ...WRITER]), 1, `${t.db}-shm is left from a removed database; move it away`);
  });

  // Claim, README "Your data", a removed file: … unless their process is alive (or after an hour untouched: the pid was reused).
  test('temporary files of an interrupted first write are removed by the next command, unless their process is alive', () => {
    dcmOk(['--db', t.db, 'subcloud', 'add', 's1']);
    // A pid that is not running, and one that is (this test's own process).
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    const deadFiles = ['', '-wal', '-shm', '-journal'].map((s) => `dcm.db.${dead}-0badc0de.new${s}`);
    const liveFiles = [`dcm.db.${process.pid}-0badc0de.new`, `dcm.db.${process.pid}-0badc0de.new-wal`];
    for (const f of [...deadFiles, ...liveFiles]) fs.writeFileSync(path.join(t.dir, f), 'x');
    // Someone else's file that only looks alike is not touched.
    fs.writeFileSync(path.join(t.dir, 'other.db.123-abc.new'), 'x');
    dcmOk(['--db', t.db, 'subcloud', 'list']);
    expect(fs.readdirSync(t.dir).sort()).toEqual(['dcm.db', ...liveFiles, 'other.db.123-abc.new'].sort());
    // A live pid's file that nobody touched for over an hour is stale too (the pid was reused).
    const old = new Date(Date.now() - 2 * 3600_000);
    for (const f of liveFiles) fs.utimesSync(path.join(t.dir, f), old, old);
    dcmOk(['--db', t.db, 'subcloud', 'add', 's2']);
    expect(fs.readdirSync(t.dir).sort()).toEqual(['dcm.db', 'other.db.123-abc.new']);
  });
});
