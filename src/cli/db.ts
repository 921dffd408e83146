/** Commander wiring of `dcm db …`: check and back up the file, prune the logs of deleted strategies. */
import type { Command } from 'commander';
import type { Runner } from './runner.js';

/** The command module (and SQLite with it) loads only when a command runs, not for --help. */
const commands = () => import('../commands/db.js');

export function registerDb(program: Command, run: Runner): void {
  const db = program.command('db').description("check and back up the database file; prune deleted strategies and their run logs");
  db.command('check')
    .description("run SQLite's integrity check: ok (exit 0), or what is wrong (exit 1)")
    .action(() => run(async (ctx) => await (await commands()).dbCheck(ctx)));
  db.command('backup')
    .argument('<file>', 'where to write the copy (must not exist)')
    .description("copy the database with SQLite's online backup (safe while an apply runs)")
    .action((file: string) => run(async (ctx) => (await commands()).dbBackup(ctx, file)));
  db.command('prune')
    .description('remove the strategies deleted more than DURATION ago (strategy list shows them), with their run log folders')
    .requiredOption('--older <duration>', 'only strategies deleted longer ago than this: 12h, 7d, 30m (0: any age)')
    .option('--dry-run', 'say what would be removed, and remove nothing')
    .action((o: { older: string; dryRun?: boolean }) => run(async (ctx) => await (await import('../commands/prune.js')).pruneStrategies(ctx, o)));
  db.command('prune-logs')
    .description("remove the run log folders of deleted strategies whose files are all older than DURATION (never the current strategy's)")
    .requiredOption('--older <duration>', 'only folders whose newest file is older than this: 12h, 7d, 30m (0: any age)')
    .option('--dry-run', 'say what would be removed, and remove nothing')
    .option('--log-dir <dir>', "also prune this folder (a strategy's --log-dir), besides the current strategy's and the database path + .logs")
    .action((o: { older: string; dryRun?: boolean; logDir?: string }) =>
      run(async (ctx) => await (await import('../commands/prune-logs.js')).pruneLogs(ctx, o)),
    );
}
