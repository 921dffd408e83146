/**
 * Issue 15, breaks 1 and 2: the sysadmin password. Every file dcm writes that holds it (the
 * database, a backup, run logs) is 0600 and every folder it makes for them 0700, under umask 022;
 * the password can come from a file, from DCM_SYSADMIN_PASSWORD, or a prompt on a real terminal
 * (tmux) that never shows it, instead of the command line (/proc/<pid>/cmdline is world-readable).
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, dcm, dcmOk, tempDir, waitFor } from '../helpers/cli.js';
import { expectErrorLine, withSql } from '../helpers/fleet.js';
import { strategyId } from '../helpers/logs.js';

const SECRET = 'Top-S3cret-\u00e9-pw';
let t: ReturnType<typeof tempDir>;
let umask: number;
beforeAll(() => {
  // What most shells run with: files 0644 and folders 0755 unless dcm asks for less.
  umask = process.umask(0o022);
});
afterAll(() => {
  process.umask(umask);
});
afterEach(() => t?.cleanup());

/** Every file and folder under `dir`, with its mode. */
function walk(dir: string): { file: string; mode: number; isDir: boolean }[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    const mode = fs.statSync(p).mode & 0o777;
    return e.isDirectory() ? [{ file: p, mode, isDir: true }, ...walk(p)] : [{ file: p, mode, isDir: false }];
  });
}

const storedPassword = async (db: string) =>
  await withSql(db, async (d) => (JSON.parse((await d.prepare('SELECT extra_args FROM strategy').pluck().get() as string)) as Record<string, unknown>).sysadmin_password);

describe('files that hold the password', () => {
  test('under umask 022: the database, its backup, run logs and their files 0600; the log folders 0700', async () => {
    t = tempDir();
    const pwFile = path.join(t.dir, 'pw');
    fs.writeFileSync(pwFile, `${SECRET}\n`, { mode: 0o600 });
    const cfg = path.join(t.dir, 'exec.yaml');
    // Each run prints the password it was given, as a careless script would.
    fs.writeFileSync(cfg, 'states:\n  "*": [sh, -c, \'echo "given $DCM_SYSADMIN_PASSWORD"\']\n');
    const db = path.join(t.dir, 'data', 'fleet.db');
    fs.mkdirSync(path.dirname(db));
    dcmOk(['--db', db, 'subcloud', 'add', 'east-1', 'a/b']);
    dcmOk(['--db', db, 'prestage-strategy', 'create', '--driver', 'exec', '--exec-config', cfg, '--sysadmin-password-file', pwFile]);
    expect(dcm(['--db', db, 'strategy', 'apply', '-q']).code).toBe(0);
    dcmOk(['--db', db, 'db', 'backup', path.join(t.dir, 'data', 'backup.db')]);

    const written = walk(path.join(t.dir, 'data'));
    const holding = written.filter((w) => !w.isDir && fs.readFileSync(w.file).includes(SECRET));
    // The database, the backup, and the 4 prestage runs of each of the 2 subclouds' logs.
    expect(holding.map((w) => path.relative(t.dir, w.file)).sort()).toEqual(
      expect.arrayContaining(['data/backup.db', 'data/fleet.db', `data/fleet.db.logs/${await strategyId(db)}/east_1/1-prestage_precheck.log`]),
    );
    expect(holding.length).toBe(2 + 8);
    expect(holding.filter((w) => w.mode !== 0o600)).toEqual([]);
    // Everything dcm wrote, password or not: files 0600, folders 0700.
    const logs = written.filter((w) => w.file.includes('.logs'));
    expect(logs.filter((w) => w.mode !== (w.isDir ? 0o700 : 0o600))).toEqual([]);
    expect(logs.filter((w) => w.isDir).length).toBe(4); // the log folder, the strategy's, and one per subcloud
  });
});

describe('where the password comes from', () => {
  const create = (db: string, extra: string[], env: Record<string, string> = {}) =>
    dcm(['--db', db, 'prestage-strategy', 'create', ...extra], { env });

  test('a file (its trailing newline dropped), or DCM_SYSADMIN_PASSWORD; neither on the command line', async () => {
    t = tempDir();
    dcmOk(['--db', t.db, 'subcloud', 'add', 's1']);
    const pwFile = path.join(t.dir, 'pw');
    fs.writeFileSync(pwFile, `${SECRET}\r\n`);
    const r = create(t.db, ['--sysadmin-password-file', pwFile, '-f', 'json']);
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    expect(await storedPassword(t.db)).toBe(SECRET);
    dcmOk(['--db', t.db, 'strategy', 'delete']);
    expect(create(t.db, [], { DCM_SYSADMIN_PASSWORD: 'from-env' }).code).toBe(0);
    expect(await storedPassword(t.db)).toBe('from-env');
  });

  test('refusals: a FIFO or device as the file, both sources at once, the file for a type without a password, no value off a terminal', async () => {
    t = tempDir();
    dcmOk(['--db', t.db, 'subcloud', 'add', 's1']);
    const fifo = path.join(t.dir, 'fifo');
    spawnSync('mkfifo', [fifo]);
    const before = fs.readFileSync(t.db);
    expectErrorLine(create(t.db, ['--sysadmin-password-file', fifo]), 2, `cannot read sysadmin password file ${fifo}: it is a FIFO, not a regular file`);
    expectErrorLine(create(t.db, ['--sysadmin-password-file', '/dev/zero']), 2, /it is a character device, not a regular file$/);
    expectErrorLine(create(t.db, ['--sysadmin-password', 'x', '--sysadmin-password-file', fifo]), 2, '--sysadmin-password cannot be used with --sysadmin-password-file');
    expectErrorLine(
      dcm(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sysadmin-password-file', fifo]),
      2,
      '--sysadmin-password-file is not an option of strategy type patch',
    );
    expectErrorLine(
      dcm(['--db', t.db, 'sw-deploy-strategy', 'create', '--release-id', 'r1', '--sysadmin-password-file', fifo]),
      2,
      '--sysadmin-password-file can only be used with --with-prestage',
    );
    expectErrorLine(create(t.db, ['--sysadmin-password'], {}), 2, /^--sysadmin-password was given without a value and there is no terminal to ask on/);
    expect(fs.readFileSync(t.db).equals(before)).toBe(true);
    // Off a terminal with none given: created without one, as before.
    expect(create(t.db, []).code).toBe(0);
    expect(await storedPassword(t.db)).toBeUndefined();
  });

  describe('asked on a terminal', () => {
    const SOCKET = `dcm-pw-${process.pid}`;
    const tmux = (...args: string[]) => {
      const r = spawnSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
      if (r.error || r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.error?.message ?? r.stderr}`);
      return r.stdout;
    };
    afterAll(() => {
      spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
    });

    test.each([
      ['when the type needs one', [] as string[]],
      ['when --sysadmin-password has no value', ['--sysadmin-password']],
    ])('%s: never echoed, asked twice, stored', async (_name, extra) => {
      if (spawnSync('tmux', ['-V']).status !== 0) throw new Error('tmux is missing: apt-get install -y tmux (this test needs a real terminal)');
      t = tempDir();
      dcmOk(['--db', t.db, 'subcloud', 'add', 's1']);
      const session = `pw${extra.length}`;
      const cmd = `env -u DCM_DB '${process.execPath}' '${BIN}' --db '${t.db}' prestage-strategy create ${extra.join(' ')} -f value -c state; echo "EXIT=$?"; sleep 600`;
      tmux('new-session', '-d', '-s', session, '-x', '120', '-y', '20', cmd);
      const screen = () => tmux('capture-pane', '-p', '-t', session);
      await waitFor(() => screen().includes('Enter the sysadmin password for the subcloud:'), 30_000, 50);
      tmux('send-keys', '-t', session, '-l', 'hunter2-typed');
      tmux('send-keys', '-t', session, 'Enter');
      await waitFor(() => screen().includes('Re-enter sysadmin password to confirm:'), 30_000, 50);
      tmux('send-keys', '-t', session, '-l', 'hunter2-typed');
      tmux('send-keys', '-t', session, 'Enter');
      await waitFor(() => screen().includes('EXIT='), 30_000, 50);
      const seen = screen();
      expect(seen).toContain('initial\nEXIT=0');
      expect(seen).not.toContain('hunter2');
      expect(await storedPassword(t.db)).toBe('hunter2-typed');
    });
  });
});
