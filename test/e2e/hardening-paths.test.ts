/**
 * Issue 15, break 3: an output dcm replaces is a regular file or nothing. `report --html` onto a
 * character device (a mknod copy of /dev/null in a temporary folder: tests run as root), a FIFO,
 * a directory or a socket is refused (exit 1, one line) and the node is left as it was; `-` is
 * still stdout. `db backup` follows the same rule.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { dcm, dcmOk, tempDir } from '../helpers/cli.js';
import { expectErrorLine } from '../helpers/fleet.js';

let t: ReturnType<typeof tempDir>;
let server: net.Server;
const node = (name: string) => path.join(t.dir, name);

beforeAll(async () => {
  t = tempDir();
  dcmOk(['--db', t.db, 'subcloud', 'add', 's1', 's2']);
  dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'firmware', '--sim-latency', '0']);
  dcmOk(['--db', t.db, 'strategy', 'apply', '-q']);
  // The same device as /dev/null (char 1,3), made here: a real device is never touched.
  const mk = spawnSync('mknod', [node('null'), 'c', '1', '3']);
  if (mk.status !== 0) throw new Error(`mknod failed (this test runs as root): ${mk.stderr}`);
  spawnSync('mkfifo', [node('fifo')]);
  fs.mkdirSync(node('folder'));
  server = net.createServer();
  await new Promise<void>((r) => server.listen(node('sock'), r));
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  t.cleanup();
});

const kind = (p: string) => {
  const st = fs.lstatSync(p);
  return st.isCharacterDevice() ? 'char' : st.isFIFO() ? 'fifo' : st.isDirectory() ? 'dir' : st.isSocket() ? 'socket' : 'file';
};

describe('outputs dcm replaces', () => {
  test.each([
    ['null', 'a character device', 'char'],
    ['fifo', 'a FIFO', 'fifo'],
    ['folder', 'a directory', 'dir'],
    ['sock', 'a socket', 'socket'],
  ])('report --html onto %s is refused, and it stays %s', (name, what, k) => {
    expectErrorLine(dcm(['--db', t.db, 'strategy', 'report', '--html', node(name)]), 1, `cannot write ${node(name)}: it is ${what}`);
    expect(kind(node(name))).toBe(k);
    expect(fs.readdirSync(t.dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  test('a symlink to the device is the device', () => {
    fs.symlinkSync(node('null'), node('link'));
    expectErrorLine(dcm(['--db', t.db, 'strategy', 'report', '--html', node('link')]), 1, `cannot write ${node('link')}: it is a character device`);
    expect(kind(node('null'))).toBe('char');
  });

  test('db backup onto the device is refused the same way', () => {
    expectErrorLine(dcm(['--db', t.db, 'db', 'backup', node('null')]), 1, `cannot back up to ${node('null')}: it is a character device`);
    expect(kind(node('null'))).toBe('char');
  });

  test('a regular file is replaced, a missing one made; - is stdout', () => {
    fs.writeFileSync(node('old.html'), 'old');
    dcmOk(['--db', t.db, 'strategy', 'report', '--html', node('old.html')]);
    expect(fs.readFileSync(node('old.html'), 'utf8')).toMatch(/^<!DOCTYPE html>/i);
    dcmOk(['--db', t.db, 'strategy', 'report', '--html', node('new.html')]);
    expect(kind(node('new.html'))).toBe('file');
    expect(dcmOk(['--db', t.db, 'strategy', 'report', '--html', '-']).stdout).toMatch(/^<!DOCTYPE html>/i);
  });
});
