/**
 * Commander wiring of `dcm alarm summary` and `dcm bash-completion`, two commands dcmanager's client
 * has that scripts call.
 */
import type { Command } from 'commander';
import type { Runner } from './runner.js';

/**
 * dcmanager's `bash-completion`: every command (as `subcloud list`, group and verb) and every
 * option of the program, on one line. Its client prints a Python set, in no fixed order; dcm sorts.
 */
export function bashCompletionWords(program: Command): string {
  const words = new Set<string>();
  const walk = (cmd: Command, path: string[]) => {
    for (const sub of cmd.commands) {
      const p = [...path, sub.name()];
      if (sub.commands.length === 0) words.add(p.join(' '));
      walk(sub, p);
    }
  };
  walk(program, []);
  for (const o of program.options) for (const f of [o.short, o.long]) if (f) words.add(f);
  words.add('-h').add('--help');
  return [...words].sort().join(' ');
}

export function registerAlarm(program: Command, run: Runner): void {
  program
    .command('alarm')
    .description("the subclouds' alarms (dcmanager's alarm summary)")
    .command('summary')
    .description('list the alarm summary of every subcloud (dcm reaches no fault manager: counts and status None)')
    .action(() => run(async (ctx) => await (await import('../commands/subcloud-ops.js')).alarmSummary(ctx)));
  program
    .command('bash-completion')
    .description("every command and option on one line, as dcmanager's bash-completion prints them")
    .action(() => run(async () => ({ text: `${bashCompletionWords(program)}\n` })));
}
