/** Commander wiring of `dcm db …`: check and back up the file. */
import type { Command } from 'commander';
import type { Runner } from './runner.js';

/** The command module (and SQLite with it) loads only when a command runs, not for --help. */
const commands = () => import('../commands/db.js');

export function registerDb(program: Command, run: Runner): void {
  const db = program.command('db').description('check and back up the database file');
  db.command('check')
    .description("run SQLite's integrity check: ok (exit 0), or what is wrong (exit 1)")
    .action(() => run(async (ctx) => (await commands()).dbCheck(ctx)));
  db.command('backup')
    .argument('<file>', 'where to write the copy (must not exist)')
    .description("copy the database with SQLite's online backup (safe while an apply runs)")
    .action((file: string) => run(async (ctx) => (await commands()).dbBackup(ctx, file)));
}
