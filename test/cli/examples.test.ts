/**
 * Every command's --help ends with an "Examples:" block (SPEC §4 "Visibility"). The program is
 * walked, so a command added without an entry in src/cli/examples.ts fails here by name.
 */
import { describe, expect, test } from '@jest/globals';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import { commandPath } from '../../src/cli/examples.js';
import { dcm } from '../helpers/cli.js';

const program = await buildProgram(async () => {});

function allCommands(): Command[] {
  const out: Command[] = [];
  const visit = (c: Command) => {
    out.push(c);
    c.commands.forEach(visit);
  };
  visit(program);
  return out;
}

function helpOf(cmd: Command): string {
  let text = '';
  cmd.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  cmd.outputHelp();
  return text;
}

const commands = allCommands();

describe('every --help ends with examples', () => {
  test('the program has commands to walk (the aliases and their verbs among them)', () => {
    const paths = commands.map(commandPath);
    expect(paths).toEqual(expect.arrayContaining(['', 'strategy create', 'patch-strategy create', 'strategy-step list', 'completion']));
    expect(paths.length).toBeGreaterThan(40);
  });

  test.each(commands.map((c) => [commandPath(c) || '(dcm)', c] as const))('%s', (_path, cmd) => {
    const help = helpOf(cmd);
    // The block is last, and each line is a dcm command line (or a shell line that runs one).
    const m = /\nExamples:\n((?: {2}\S.*\n)+)$/.exec(help);
    expect(m).not.toBeNull();
    const lines = m![1].trimEnd().split('\n');
    for (const line of lines) expect(line).toMatch(/\bdcm\b/);
    // An example of a subcommand runs that subcommand (aliases included).
    const path = commandPath(cmd);
    if (path && !['completion'].includes(path)) expect(lines.some((l) => l.includes(`dcm ${path}`))).toBe(true);
  });
});

describe('through the built binary', () => {
  test('dcm strategy create --help: exit 0, examples last', () => {
    const r = dcm(['strategy', 'create', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\nExamples:\n {2}dcm strategy create --type patch --dry-run\n(.+\n)+$/);
  });

  test('dcm strategy status --help says what "in progress" and "in flight" count, and from when elapsed counts', () => {
    const r = dcm(['strategy', 'status', '--help']);
    expect(r.code).toBe(0);
    const text = r.stdout.replace(/\s+/g, ' ');
    expect(text).toContain('"in progress" counts steps started and not ended; "in flight" counts operations running now.');
    expect(text).toContain('"elapsed" counts from started_at, the first step\'s start, across resumes');
    // The list of strategy's commands keeps the one-line summary.
    expect(dcm(['strategy', '--help']).stdout).not.toContain('"in progress"');
  });

  test('dcm alone prints the help with examples (exit 2, a usage error)', () => {
    const r = dcm([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^Usage: dcm /);
    expect(r.stdout).toMatch(/\nExamples:\n(  dcm .+\n)+/);
  });

  test('the alias of a type shows examples with that type', () => {
    const r = dcm(['kube-upgrade-strategy', 'create', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('  dcm kube-upgrade-strategy create --to-version v1.29.2\n');
  });
});
