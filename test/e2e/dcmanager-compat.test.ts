/**
 * What a dcmanager user relies on beyond the formats (issue 11): a script written for dcmanager
 * runs unchanged; --yes and CLI_CONFIRMATIONS on and off a terminal (a real one, in tmux);
 * --sysadmin-password never printed, and the file that holds it created 0600.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, ROOT, sleep, tempDir } from '../helpers/cli.js';
import { dcm, expectErrorLine, fileHash, withSql } from '../helpers/fleet.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let tmp: ReturnType<typeof tempDir>;
let template: string;
/** Four subclouds (one offline) and a patch strategy whose subcloud3 fails, made once. */
beforeAll(() => {
  tmp = tempDir();
  template = path.join(tmp.dir, 'template.db');
  dcmQuickOk(['--db', template, 'subcloud-group', 'add', '--name', 'canary']);
  dcmQuickOk(['--db', template, 'subcloud', 'add', 'subcloud1', 'subcloud2', '--group', 'canary']);
  dcmQuickOk(['--db', template, 'subcloud', 'add', 'subcloud3']);
  dcmQuickOk(['--db', template, 'subcloud', 'add', 'subcloud4', '--availability', 'offline']);
  dcmQuickOk(['--db', template, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--sim-fail', 'subcloud3=pre check']);
});
afterAll(() => tmp.cleanup());

let n = 0;
/** A fresh copy of the template fleet. */
function fleet(): string {
  const db = path.join(tmp.dir, `fleet${++n}.db`);
  fs.copyFileSync(template, db);
  return db;
}

describe('a script written for dcmanager', () => {
  test('runs unchanged and reads what dcmanager would print', () => {
    const db = fleet();
    const bin = path.join(tmp.dir, 'bin');
    fs.mkdirSync(bin, { recursive: true });
    fs.writeFileSync(path.join(bin, 'dcmanager'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, { mode: 0o755 });
    const r = spawnSync('bash', [path.join(ROOT, 'test', 'e2e', 'dcmanager-script.sh')], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, DCM_DB: db, CLI_CONFIRMATIONS: 'enabled' },
      encoding: 'utf8',
    });
    // apply's progress goes to stderr (dcm's own); no error.
    expect(r.stderr).not.toMatch(/error:/);
    expect(r.stdout).toBe(
      [
        'subcloud subcloud1: managed/online',
        'subcloud subcloud2: managed/online',
        'subcloud subcloud3: managed/online',
        'subcloud subcloud4: managed/offline',
        'subcloud1 patching: out-of-sync (group 2)',
        'strategy: patch failed',
        'failed: subcloud3',
        'failed steps: 1',
        'steps left: 0',
        '<none> rows: 1',
        '',
      ].join('\n'),
    );
    expect(r.status).toBe(0);
  });
});

describe('--yes and CLI_CONFIRMATIONS', () => {
  const confirmations = { CLI_CONFIRMATIONS: 'enabled' };

  test('without CLI_CONFIRMATIONS, --yes is accepted and nothing is asked', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    const db2 = fleet();
    dcmQuickOk(['--db', db2, 'patch-strategy', 'delete', '--yes']);
  });

  test('enabled, off a terminal: refused without --yes (file unchanged), done with it', () => {
    const db = fleet();
    const before = fileHash(db);
    for (const args of [['strategy', 'delete'], ['strategy', 'apply'], ['patch-strategy', 'apply']]) {
      const r = dcmQuick(['--db', db, ...args], { env: confirmations, input: 'yes\n' });
      expectErrorLine(r, 1, 'CLI_CONFIRMATIONS is enabled and there is no terminal to confirm on: give --yes to proceed');
    }
    expect(fileHash(db)).toBe(before);
    expect(JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'show', '-f', 'json']).stdout).state).toBe('initial');
    expect(dcm(['--db', db, 'strategy', 'apply', '--yes', '-q'], { env: confirmations }).code).toBe(1);
    dcmQuickOk(['--db', db, 'strategy', 'delete', '--yes'], { env: confirmations });
    expect(dcmQuick(['--db', db, 'strategy', 'show']).code).toBe(1);
  });

  test('enabled, on a terminal: asks, and goes on only on "yes"', async () => {
    if (spawnSync('tmux', ['-V']).status !== 0) throw new Error('tmux is missing: apt-get install -y tmux (the terminal case needs a real terminal)');
    const socket = `dcm-confirm-${process.pid}`;
    const tmuxCmd = (...args: string[]) => spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    try {
      for (const [answer, code, gone] of [['no', 1, false], ['yes', 0, true]] as [string, number, boolean][]) {
        const db = fleet();
        const done = path.join(tmp.dir, `done-${answer}`);
        const shell = `CLI_CONFIRMATIONS=enabled '${process.execPath}' '${BIN}' --db '${db}' strategy delete 2>&1; echo "exit=$?" > '${done}'; sleep 30`;
        expect(tmuxCmd('new-session', '-d', '-s', answer, '-x', '200', '-y', '20', shell).status).toBe(0);
        const end = Date.now() + 20_000;
        while (!tmuxCmd('capture-pane', '-p', '-t', answer).stdout.includes('Do you want to continue? (yes/No)')) {
          if (Date.now() > end) throw new Error(`no prompt: ${tmuxCmd('capture-pane', '-p', '-t', answer).stdout}`);
          await sleep(50);
        }
        tmuxCmd('send-keys', '-t', answer, answer, 'Enter');
        while (!fs.existsSync(done) || !fs.readFileSync(done, 'utf8').includes('\n')) {
          if (Date.now() > end) throw new Error('the command did not end');
          await sleep(50);
        }
        expect(fs.readFileSync(done, 'utf8')).toBe(`exit=${code}\n`);
        if (!gone) expect(tmuxCmd('capture-pane', '-p', '-t', answer).stdout).toContain('error: Operation cancelled by the user.');
        expect(dcmQuick(['--db', db, 'strategy', 'show']).code).toBe(gone ? 1 : 0);
      }
    } finally {
      tmuxCmd('kill-server');
    }
  });
});

describe('--sysadmin-password', () => {
  test('accepted for prestage and sw-deploy --with-prestage, never printed, stored in a 0600 file', async () => {
    const db = path.join(tmp.dir, 'secret.db');
    const out = dcmQuickOk(['--db', db, 'subcloud', 'add', 's1']).stdout + dcmQuickOk(['--db', db, 'prestage-strategy', 'create', '--sysadmin-password', 'Top-S3cret', '-f', 'json']).stdout;
    expect(out).not.toContain('Top-S3cret');
    expect(fs.statSync(db).mode & 0o777).toBe(0o600);
    const extra = await withSql(db, async (d) => (await d.prepare('SELECT extra_args FROM strategy').get() as { extra_args: string }).extra_args);
    expect(JSON.parse(extra).sysadmin_password).toBe('Top-S3cret');
    for (const f of ['table', 'json', 'yaml', 'value', 'shell']) {
      expect(dcmQuickOk(['--db', db, 'strategy', 'show', '-f', f]).stdout).not.toContain('Top-S3cret');
    }
    const sw = path.join(tmp.dir, 'secret-sw.db');
    dcmQuickOk(['--db', sw, 'subcloud', 'add', 's1']);
    expect(dcmQuickOk(['--db', sw, 'sw-deploy-strategy', 'create', '--release-id', 'r1', '--with-prestage', '--sysadmin-password', 'Top-S3cret']).stdout).not.toContain('Top-S3cret');
  });
});
