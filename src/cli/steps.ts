/** Commander wiring of `dcm strategy-step …`. */
import { Option, type Command } from './commander.js';
import { collect, integer, positiveInteger } from './parsers.js';
import type { Runner } from './runner.js';
import { stdoutSink } from './sink.js';

/** The command module (and SQLite with it) loads only when a command runs, not for --help. */
const commands = () => import('../commands/steps.js');
const logs = () => import('../commands/logs.js');

export function registerSteps(program: Command, run: Runner): void {
  const s = program.command('strategy-step').description('the steps of the strategy');
  s.command('list')
    .description('list the steps in step order')
    .option('--state <state>', 'only steps in this state (repeatable)', collect)
    .option('--stage <n>', 'only this stage', integer)
    .option('-w, --watch', 'redraw on change until the strategy ends (or Ctrl-C)')
    .action((o: { state?: string[]; stage?: number; watch?: boolean }) =>
      run(async (ctx) => {
        const filter = { states: o.state, stage: o.stage };
        if (o.watch) {
          await (await commands()).checkStepFilter(ctx, filter);
          return { watch: (await import('../commands/status.js')).watchSteps(ctx, filter) };
        }
        return await (await commands()).stepList_(ctx, filter);
      }),
    );
  s.command('show')
    .argument('<cloud>')
    .description('show the step of a subcloud')
    .action((cloud: string) => run(async (ctx) => await (await commands()).stepShow_(ctx, cloud)));
  s.command('history')
    .argument('[cloud]')
    .description('every state operation run, in the order they started')
    .action((cloud: string | undefined) => run(async (ctx) => await (await commands()).stepHistory(ctx, cloud)));
  s.command('logs')
    .argument('<cloud>')
    .description("the output of the exec driver's runs for a subcloud, in run order")
    .option('--state <state>', 'only the runs of this state')
    .option('--attempt <n>', 'only this attempt', positiveInteger)
    .option('--follow', 'print new output as it is written, until the step ends')
    .option('--strategy <id>', "an earlier (deleted) strategy's runs: its id (its log folder's name) or its created_at")
    .action((cloud: string, o: { state?: string; attempt?: number; follow?: boolean; strategy?: string }) =>
      run(async (ctx) => ({ exitCode: await (await logs()).stepLogs(ctx, cloud, o, stdoutSink()) })),
    );
  s.command('resolve')
    .argument('<cloud>')
    .description("say how a run ended that nothing can tell of any more: its host is gone with its launcher (several hosts), or, on a file, its processes are gone with no exit status (killed with dcm); the step moves as if it had said so")
    .addOption(new Option('--as <outcome>', 'how it ended: ok (the state is done) or failed').choices(['ok', 'failed']).makeOptionMandatory())
    .option('--reason <text>', 'why, in words: kept in the event record (and, failed, the step\'s details)')
    .action((cloud: string, o: { as: 'ok' | 'failed'; reason?: string }) =>
      run(async (ctx) => await (await import('../commands/resolve.js')).stepResolve(ctx, cloud, o.as, o.reason)),
    );
}
