/**
 * Global options through commander (SPEC §4): before or after the command, at any depth; a
 * command's own option values are never read as global options; help and version go to main's
 * streams.
 */
import { describe, expect, test } from '@jest/globals';
import { Command } from 'commander';
import { main } from '../../src/cli/main.js';
import { addGlobalOptions, addGlobalOptionsEverywhere, readGlobals } from '../../src/cli/globals.js';
import { tempDir } from '../helpers/cli.js';
import { run, runOk } from '../helpers/inprocess.js';

describe('global options', () => {
  test('an option value that starts with a dash is the option\'s value, not -f', async () => {
    const { db, cleanup } = tempDir();
    try {
      const r = await runOk(['--db', db, 'subcloud-group', 'add', '--name', 'g1', '--description', '-first rack', '-f', 'value', '-c', 'description']);
      expect(r.stdout).toBe('-first rack\n');
      const s = await runOk(['subcloud', 'add', 's1', '--description', '-c name', '--location', '-q', '--db', db, '-f', 'json', '-c', 'name']);
      expect(JSON.parse(s.stdout)).toEqual([{ name: 's1' }]);
      const show = await runOk(['--db', db, 'subcloud', 'show', 's1', '-f', 'value', '-c', 'description', '-c', 'location']);
      expect(show.stdout).toBe('-c name\n-q\n');
    } finally {
      cleanup();
    }
  });

  test('before the command, between group and verb, after: the same, and -c adds up across levels', async () => {
    const { db, cleanup } = tempDir();
    try {
      await runOk(['--db', db, 'subcloud', 'add', 's1']);
      const a = (await runOk(['-f', 'value', '-c', 'id', '--db', db, 'subcloud', 'list'])).stdout;
      const b = (await runOk(['subcloud', '-f', 'value', '--db', db, 'list', '-c', 'id'])).stdout;
      const c = (await runOk(['subcloud', 'list', '--format=value', '--column=id', `--db=${db}`])).stdout;
      expect([a, b, c]).toEqual(['1\n', '1\n', '1\n']);
      expect((await runOk(['-c', 'id', '--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name'])).stdout).toBe('1 s1\n');
    } finally {
      cleanup();
    }
  });

  test('readGlobals: the nearest level wins, repeatables add up, --db "" stays an empty string', () => {
    const program = addGlobalOptions(new Command('dcm').enablePositionalOptions().exitOverride(), true);
    let seen: ReturnType<typeof readGlobals> | undefined;
    program.command('x').action((_o, cmd: Command) => void (seen = readGlobals(cmd, {})));
    addGlobalOptionsEverywhere(program);
    program.parse(['--db', '', '-f', 'json', '--sort-column', 'a', '--no-color', 'x', '-f', 'yaml', '--sort-column', 'b', '--max-width', '40'], { from: 'user' });
    expect(seen).toMatchObject({ db: '', format: 'yaml', sortColumns: ['a', 'b'], noColor: true, maxWidth: 40, quote: 'nonnumeric', prefix: '' });
  });

  test('cliff\'s environment: CLIFF_MAX_TERM_WIDTH and CLIFF_FIT_WIDTH', () => {
    const program = addGlobalOptions(new Command('dcm').exitOverride(), true);
    program.parse([], { from: 'user' });
    expect(readGlobals(program, { CLIFF_MAX_TERM_WIDTH: '72', CLIFF_FIT_WIDTH: '1' })).toMatchObject({ maxWidth: 72, fitWidth: true });
    expect(readGlobals(program, {})).toMatchObject({ maxWidth: 0, fitWidth: false });
  });

  test('bad values are usage errors', async () => {
    expect((await run(['subcloud', 'list', '-f', 'xml'])).code).toBe(2);
    expect((await run(['subcloud', 'list', '--quote', 'some'])).code).toBe(2);
    expect((await run(['subcloud', 'list', '--max-width', 'wide'])).stderr).toMatch(/^error: .*--max-width.*invalid int value: 'wide'\n$/);
    expect((await run(['subcloud', 'list', '--sort-ascending', '--sort-descending'])).code).toBe(2);
  });
});

describe('help and version go to main\'s streams', () => {
  const capture = () => {
    const s = { text: '', isTTY: false, write: (c: string) => ((s.text += c), true) };
    return s;
  };
  test('--help, a group without its verb, --version, no arguments', async () => {
    const real = { out: process.stdout.write, err: process.stderr.write };
    const leaked: string[] = [];
    process.stdout.write = ((c: string) => (leaked.push(c), true)) as typeof process.stdout.write;
    process.stderr.write = ((c: string) => (leaked.push(c), true)) as typeof process.stderr.write;
    try {
      for (const [args, code, where] of [
        [['--help'], 0, 'out'],
        [['subcloud', 'list', '--help'], 0, 'out'],
        [['strategy'], 2, 'err'],
        [['--version'], 0, 'out'],
        [[], 2, 'out'],
      ] as [string[], number, 'out' | 'err'][]) {
        const stdout = capture();
        const stderr = capture();
        expect(await main(args, { stdout, stderr } as never)).toBe(code);
        expect((where === 'out' ? stdout : stderr).text.length).toBeGreaterThan(0);
      }
    } finally {
      process.stdout.write = real.out;
      process.stderr.write = real.err;
    }
    expect(leaked).toEqual([]);
  });
});
