/**
 * A command line builds only the top-level commands it can name (src/cli/program.ts): the table of
 * words held to what each module really registers, so that a command added to a module without its
 * word (which would then be "unknown" on its own line) fails here.
 */
import { describe, expect, test } from '@jest/globals';
import type { Command } from 'commander';
import { buildProgram, finishCommands, REGISTRARS, registrarsFor } from '../../src/cli/program.js';

const names = (p: Command) => p.commands.flatMap((c) => [c.name(), ...c.aliases()]).sort();
const noop = async () => {};

describe('the program a command line builds', () => {
  test("each module's words are exactly the top-level commands it registers; together, every command", async () => {
    const full = await buildProgram(noop);
    expect(names(full)).toEqual(REGISTRARS.flatMap((r) => r.words).sort());
    for (const r of REGISTRARS.filter((x) => !x.all)) {
      expect(names(await buildProgram(noop, undefined, true, [r.words[0]]))).toEqual([...r.words].sort());
    }
  });

  test('words that name commands choose their modules; none, or one that walks the program, chooses all', () => {
    const at = (w: string) => REGISTRARS.findIndex((r) => r.words.includes(w));
    expect(registrarsFor(['strategy-step', 'list', '-f', 'json'])).toEqual(new Set([at('strategy-step')]));
    // An option value that is a command's name takes that module too: more than the parse uses, never less.
    expect(registrarsFor(['--db', 'subcloud', 'patch-strategy', 'show'])).toEqual(new Set([at('subcloud'), at('strategy')]));
    expect(registrarsFor(['--', 'subcloud'])).toBeNull();
    for (const line of [[], ['--help'], ['help'], ['strategy-stp', 'list'], ['completion', 'bash'], ['bash-completion']]) {
      expect(registrarsFor(line)).toBeNull();
    }
  });

  test("a command built alone is the one the full program has: the same help, options and subcommands", async () => {
    const line = ['strategy-step', 'list', '--help'];
    const alone = await buildProgram(noop, undefined, true, line);
    const full = await buildProgram(noop, undefined, true);
    finishCommands(alone, line);
    finishCommands(full, line);
    const pick = (p: Command) => p.commands.find((c) => c.name() === 'strategy-step')!;
    expect(pick(alone).helpInformation()).toBe(pick(full).helpInformation());
    const list = (p: Command) => pick(p).commands.find((c) => c.name() === 'list')!;
    expect(list(alone).helpInformation()).toBe(list(full).helpInformation());
  });
});
