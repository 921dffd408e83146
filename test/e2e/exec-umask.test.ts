/**
 * README "What a run sees": every file a run leaves beside its log is private (the wrapper runs
 * under umask 077), yet the command itself runs under the umask dcm was given.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, dcmOk } from '../helpers/cli.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { runFiles } from '../helpers/logs.js';

let f: ExecFixture;
afterEach(() => f?.cleanup());

describe('exec runs and the umask', () => {
  test('under umask 022 the command sees 0022 and its own file is 0644; the run files are 0600', async () => {
    f = execFixture();
    const seen = path.join(f.dir, 'umask');
    const made = path.join(f.dir, 'made');
    dcmOk(['--db', f.db, 'subcloud', 'add', 's1']);
    const cfg = f.config(`
states:
  pre check:
    run: umask > ${seen}; touch ${made}; echo to-stderr >&2
  "*": "true"
`);
    dcmOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    const r = spawnSync('sh', ['-c', `umask 022; exec "${process.execPath}" "${BIN}" --db "${f.db}" -q strategy apply`], { env: { ...process.env, ...f.env }, encoding: 'utf8' });
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(fs.readFileSync(seen, 'utf8').trim()).toBe('0022');
    expect(fs.statSync(made).mode & 0o777).toBe(0o644);
    const dir = path.dirname(await runFiles(f.db, 's1', 1, 'pre check'));
    const files = fs.readdirSync(dir).filter((n) => n.startsWith('1-pre-check'));
    expect(files.sort()).toEqual(['1-pre-check.err', '1-pre-check.log', '1-pre-check.pid', '1-pre-check.run', '1-pre-check.status']);
    for (const n of files) expect([n, fs.statSync(path.join(dir, n)).mode & 0o777]).toEqual([n, 0o600]);
  });

  test('a log already at the run\'s path (readable by others) is emptied and made private', async () => {
    f = execFixture();
    dcmOk(['--db', f.db, 'subcloud', 'add', 's1']);
    const cfg = f.config(`
states:
  pre check:
    run: echo new-run
  "*": "true"
`);
    dcmOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    // As an earlier strategy that shared the folder (log layout 1) could leave it.
    const log = `${await runFiles(f.db, 's1', 1, 'pre check')}.log`;
    fs.mkdirSync(path.dirname(log), { recursive: true });
    fs.writeFileSync(log, 'an earlier run\n');
    fs.chmodSync(log, 0o644);
    const r = spawnSync(process.execPath, [BIN, '--db', f.db, '-q', 'strategy', 'apply'], { env: { ...process.env, ...f.env }, encoding: 'utf8' });
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(fs.readFileSync(log, 'utf8')).toBe('new-run\n');
    expect(fs.statSync(log).mode & 0o777).toBe(0o600);
  });
});
