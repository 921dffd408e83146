/**
 * `dcm completion bash|zsh`: the script the built binary prints is sourced in a real shell and its
 * completion function called as the shell would call it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { buildProgram } from '../../src/cli/program.js';
import { completionTree } from '../../src/cli/completion.js';
import { dcm, sleep, tempDir } from '../helpers/cli.js';

function need(cmd: string): void {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`]);
  if (r.status !== 0) throw new Error(`${cmd} is not installed: apt-get install -y ${cmd} (.ci/run does so)`);
}

const tmp = tempDir('dcm-completion-');
let bashScript = '';
beforeAll(() => {
  const r = dcm(['completion', 'bash']);
  expect(r.code).toBe(0);
  bashScript = path.join(tmp.dir, 'dcm.bash');
  fs.writeFileSync(bashScript, r.stdout);
});
afterAll(() => tmp.cleanup());

/** What the bash function offers for a command line whose last word is being completed. */
function complete(...words: string[]): string[] {
  need('bash');
  const quoted = words.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
  const script = `source ${JSON.stringify(bashScript)}
COMP_WORDS=(dcm ${quoted}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=()
_dcm
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', script], { encoding: 'utf8', cwd: tmp.dir });
  expect(r.stderr).toBe('');
  return r.stdout.split('\n').filter(Boolean);
}

describe('bash', () => {
  test('sourcing it registers the function for dcm', () => {
    const r = spawnSync('bash', ['--norc', '--noprofile', '-c', `source ${JSON.stringify(bashScript)}; complete -p dcm`], { encoding: 'utf8' });
    expect(r.stdout.trim()).toBe('complete -F _dcm dcm');
  });

  test('commands and subcommands', () => {
    expect(complete('strat')).toEqual(['strategy', 'strategy-step', 'strategy-config']);
    expect(complete('strategy', 'cr')).toEqual(['create']);
    expect(complete('strategy-step', '')).toEqual(['list', 'show', 'history', 'logs', 'resolve']);
    expect(complete('subcloud-group', 'list')).toEqual(['list', 'list-subclouds']);
    // Global options (and their values) between the words do not lose the command path.
    expect(complete('-f', 'json', 'strategy', '--db', 'x.db', 'ap')).toEqual(['apply']);
  });

  test('options of the command, global ones too', () => {
    expect(complete('strategy', 'create', '--stop')).toEqual(['--stop-on-failure']);
    expect(complete('strategy', 'create', '--sim-')).toEqual(['--sim-latency', '--sim-fail-rate', '--sim-seed', '--sim-fail', '--sim-audit']);
    expect(complete('strategy', 'create', '--require-')).toEqual(['--require-audit']);
    expect(complete('subcloud', 'audit', '--max-p')).toEqual(['--max-parallel']);
    expect(complete('subcloud', 'list', '--fo')).toEqual(['--format']);
    // An alias has only its own type's options.
    expect(complete('patch-strategy', 'create', '--pa')).toEqual(['--patch-id']);
    expect(complete('patch-strategy', 'create', '--to')).toEqual([]);
  });

  test('values of a fixed set', () => {
    expect(complete('strategy', 'create', '--type', 'k')).toEqual(['kubernetes', 'kube-rootca-update']);
    expect(complete('subcloud', 'list', '-f', '')).toEqual(['table', 'json', 'csv', 'value', 'yaml', 'shell']);
    // --opt=value: bash hands it over as three words.
    expect(complete('--format', '=', 'y')).toEqual(['yaml']);
    expect(complete('subcloud', 'add', 'x', '--availability', '')).toEqual(['online', 'offline']);
    expect(complete('subcloud', 'update', 'x', '--sync', 'kubernetes=i')).toEqual(['kubernetes=in-sync']);
    expect(complete('completion', '')).toEqual(['bash', 'zsh']);
    // States hold spaces: offered quoted for the command line.
    expect(complete('strategy-step', 'list', '--state', 'pre')).toEqual([
      'pre\\ check',
      'prestage-precheck',
      'prestage-prepare',
      'prestaging-packages',
      'prestaging-images',
    ]);
    expect(complete('strategy-step', 'list', '--state', 'fa')).toEqual(['failed']);
    // Sites that answer (issue 18): the deferred step state, subcloud probe and create's options.
    expect(complete('strategy-step', 'list', '--state', 'def')).toEqual(['deferred']);
    expect(complete('subcloud', 'probe', '--max-p')).toEqual(['--max-parallel']);
    expect(complete('strategy', 'create', '--defer-')).toEqual(['--defer-delay', '--defer-until']);
    expect(complete('strategy', 'create', '--skip')).toEqual(['--skip-unreachable']);
  });

  test('works in a shell with set -u (nounset)', () => {
    const script = `set -u; source ${JSON.stringify(bashScript)}
COMP_WORDS=(dcm strategy ''); COMP_CWORD=2; COMPREPLY=(); _dcm; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const r = spawnSync('bash', ['--norc', '--noprofile', '-c', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')).toEqual(expect.arrayContaining(['create', 'apply', 'report']));
  });

  test('file names where a file is expected', () => {
    fs.writeFileSync(path.join(tmp.dir, 'fleet.csv'), 'name\n');
    expect(complete('subcloud', 'import', 'fle')).toEqual(['fleet.csv']);
    expect(complete('--db', 'dcm.')).toEqual(['dcm.bash']);
  });
});

describe('the tree it is generated from', () => {
  test('every command of the program is in it, with its options', async () => {
    const nodes = completionTree(await buildProgram(async () => {}));
    const byPath = new Map(nodes.map((n) => [n.path, n]));
    expect(byPath.get('')!.commands).toEqual(expect.arrayContaining(['subcloud', 'strategy', 'strategy-step', 'completion']));
    expect(byPath.get('strategy create')!.takesValue).toEqual(expect.arrayContaining(['--type', '--sim-fail', '--db', '-f']));
    expect(byPath.get('strategy create')!.takesValue).not.toContain('--stop-on-failure');
    // Hidden spellings (the dashed group options) are accepted but not offered.
    expect(byPath.get('subcloud-group add')!.options).toContain('--max_parallel_subclouds');
    expect(byPath.get('subcloud-group add')!.options).not.toContain('--max-parallel-subclouds');
  });
});

describe('zsh, in a real terminal (tmux)', () => {
  /** The screen of a tmux session, polled until `want` matches (bounded). */
  async function screenUntil(tmux: (...a: string[]) => string, want: RegExp): Promise<string> {
    let screen = '';
    for (let i = 0; i < 100; i++) {
      screen = tmux('capture-pane', '-p', '-t', 'z');
      if (want.test(screen)) return screen;
      await sleep(100);
    }
    throw new Error(`the screen never matched ${want}:\n${screen}`);
  }

  test('dcm strategy-st<Tab> completes, and a state with a space is quoted', async () => {
    need('zsh');
    need('tmux');
    const zshScript = path.join(tmp.dir, '_dcm');
    fs.writeFileSync(zshScript, dcm(['completion', 'zsh']).stdout);
    const socket = path.join(tmp.dir, 'tmux.sock');
    const tmux = (...args: string[]) => spawnSync('tmux', ['-S', socket, ...args], { encoding: 'utf8' }).stdout;
    tmux('new-session', '-d', '-s', 'z', '-x', '160', '-y', '20', 'zsh -f');
    try {
      tmux('send-keys', '-t', 'z', `autoload -U compinit && compinit -u -d ${tmp.dir}/zcomp && source ${zshScript} && dcm() { :; } && echo READY`, 'Enter');
      await screenUntil(tmux, /^READY$/m);
      tmux('send-keys', '-t', 'z', 'clear', 'Enter');
      tmux('send-keys', '-t', 'z', 'dcm strategy-st', 'Tab');
      await screenUntil(tmux, /dcm strategy-step$/m);
      tmux('send-keys', '-t', 'z', 'C-u', 'dcm strategy-step list --state fai', 'Tab');
      await screenUntil(tmux, /--state failed$/m);
      tmux('send-keys', '-t', 'z', 'C-u', 'dcm strategy-step list --state pre\\ ', 'Tab');
      await screenUntil(tmux, /--state pre\\ check$/m);
    } finally {
      tmux('kill-server');
    }
  });
});
