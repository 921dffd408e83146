/**
 * Issue 15, breaks 6 and 7 (the file): `strategy create --driver exec` refuses what apply could
 * not run, naming it, and writes nothing: a log folder that is a file (or under one), an empty
 * --log-dir (a usage error, as --db ''), a subcloud or custom state whose run files would pass
 * the file system's 255-byte name limit, custom state names that are empty or hold a newline.
 * The config is read from a regular file only: a FIFO or /dev/zero is refused at once, not read
 * for ever; an oversized one is refused by its size.
 */
import { afterEach, describe, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/cli.js';
import { expectRefused } from '../helpers/fleet.js';
import { dcmQuickOk } from '../helpers/quick.js';

let t: ReturnType<typeof tempDir>;
afterEach(() => t?.cleanup());

const SNOWMEN = '\u2603'.repeat(255); // 255 characters, 765 bytes in UTF-8

function setup(clouds: string[] = ['s1']): { cfg: string; create: (...a: string[]) => string[] } {
  t = tempDir();
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...clouds]);
  const cfg = path.join(t.dir, 'exec.yaml');
  fs.writeFileSync(cfg, 'states:\n  "*": ["true"]\n');
  return { cfg, create: (...a) => ['--db', t.db, 'strategy', 'create', '--type', 'firmware', '--driver', 'exec', ...a] };
}

function customConfig(states: string[]): string {
  const cfg = path.join(t.dir, 'custom.yaml');
  fs.writeFileSync(cfg, `states:\n${states.map((s) => `  ${JSON.stringify(s)}: ["true"]`).join('\n')}\n`);
  return cfg;
}

describe('create refuses what apply could not run', () => {
  test('--log-dir: a file, a folder under a file, a FIFO; empty is a usage error', () => {
    const { cfg, create } = setup();
    const file = path.join(t.dir, 'notes.txt');
    fs.writeFileSync(file, 'x');
    expectRefused(t.dir, create('--exec-config', cfg, '--log-dir', file), 1, `cannot use ${file} as the log folder: it is a file, not a folder`);
    expectRefused(t.dir, create('--exec-config', cfg, '--log-dir', path.join(file, 'logs')), 1, `cannot use ${path.join(file, 'logs')} as the log folder: ${file} is a file, not a folder`);
    spawnSync('mkfifo', [path.join(t.dir, 'fifo')]);
    expectRefused(t.dir, create('--exec-config', cfg, '--log-dir', path.join(t.dir, 'fifo')), 1, /as the log folder: it is a FIFO, not a folder$/);
    expectRefused(t.dir, create('--exec-config', cfg, '--log-dir', ''), 2, "option '--log-dir' is empty: name a folder");
    // A folder that does not exist yet is fine: apply makes it.
    dcmQuickOk(create('--exec-config', cfg, '--log-dir', path.join(t.dir, 'new', 'logs')));
  });

  test('a subcloud whose log folder name would pass 255 bytes is refused, named; 255 ASCII characters are fine', () => {
    const { cfg, create } = setup([SNOWMEN, 'x'.repeat(255)]);
    expectRefused(t.dir, create('--exec-config', cfg), 1, /^subcloud '☃{57}\.\.\.' cannot be run by the exec driver: its log folder name would be 765 bytes, over the file system's limit of 255$/);
    expectRefused(t.dir, create('--exec-config', cfg, '--dry-run'), 1, /cannot be run by the exec driver/);
    dcmQuickOk(['--db', t.db, 'subcloud', 'delete', SNOWMEN]);
    dcmQuickOk(create('--exec-config', cfg));
  });

  test.each([
    ['300 characters', 'x'.repeat(300), /state 'x{57}\.\.\.': a name is at most 255 characters \(this one has 300\)$/],
    ['250 characters in 3-byte UTF-8', '\u2603'.repeat(250), /state '☃{57}\.\.\.': its run log file names would be 764 bytes, over the file system's limit of 255$/],
    ['empty', '', /state '': a name may not be empty$/],
    ['a newline', 'a\nb', /state 'a\\nb': a name may not hold control characters/],
    ['a leading space', ' pre', /state ' pre': a name may not start or end with a space$/],
  ])('a custom state name of %s is refused', (_name, state, message) => {
    setup();
    const cfg = customConfig(['ok', state]);
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'create', '--type', 'custom', '--driver', 'exec', '--exec-config', cfg], 2, message);
  });

  test('the config: a FIFO and /dev/zero are refused at once; an oversized file by its size', () => {
    const { create } = setup();
    const fifo = path.join(t.dir, 'cfg.fifo');
    spawnSync('mkfifo', [fifo]);
    // Before, both were read for ever; the refusal is the assertion, the timeout only a net.
    expectRefused(t.dir, create('--exec-config', fifo), 2, `cannot read exec config ${fifo}: it is a FIFO, not a regular file`);
    expectRefused(t.dir, create('--exec-config', '/dev/zero'), 2, 'cannot read exec config /dev/zero: it is a character device, not a regular file');
    const big = path.join(t.dir, 'big.yaml');
    fs.writeFileSync(big, `states:\n  "*": ["true"]\n# ${'x'.repeat(5 * 1024 * 1024)}\n`);
    expectRefused(t.dir, create('--exec-config', big), 2, /^cannot read exec config .*big\.yaml: it is \d+ bytes, over the limit of 4194304$/);
  });
});
