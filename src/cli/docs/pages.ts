/**
 * What `npm run docs` writes (scripts/docs.mjs) and test/docs/reference.test.ts checks: each
 * generated file whole, and each generated block of a hand-written page. Paths are relative to the
 * repository's root.
 */
import { createRequire } from 'node:module';
import { commandsPage } from './commands-page.js';
import { manPage } from './man.js';
import { programDoc } from './model.js';
import { withBlock } from './markdown.js';
import { configKeysTable, environmentTable, environmentTables, exitCodesTable, placeholdersList, typesTable } from './tables.js';

export type Output = { file: string; whole: string } | { file: string; block: string; body: string };

const { version } = createRequire(import.meta.url)('../../../package.json') as { version: string };

export async function outputs(): Promise<Output[]> {
  const program = await programDoc();
  return [
    { file: 'docs/reference/commands.md', whole: commandsPage(program, version) },
    { file: 'docs/man/dcm.1', whole: manPage(program, version) },
    { file: 'docs/reference/strategies.md', block: 'strategy types', body: typesTable() },
    { file: 'docs/reference/exec-config.md', block: 'config keys', body: configKeysTable() },
    { file: 'docs/reference/exec-config.md', block: 'placeholders', body: placeholdersList() },
    { file: 'docs/reference/exec-config.md', block: 'run environment', body: environmentTable('run') },
    { file: 'docs/reference/exit-codes.md', block: 'exit codes', body: exitCodesTable() },
    { file: 'docs/reference/environment.md', block: 'environment', body: environmentTables() },
  ];
}

/**
 * Each file as it should be, given what each file holds now (`read`: null for a missing one).
 * Throws when a page lacks the markers of its block.
 */
export async function expectedFiles(read: (file: string) => string | null): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const o of await outputs()) {
    if ('whole' in o) {
      files.set(o.file, o.whole);
      continue;
    }
    const page = files.get(o.file) ?? read(o.file);
    const next = page === null ? null : withBlock(page, o.block, o.body);
    if (next === null) throw new Error(`${o.file} has no generated block "${o.block}": add its markers (src/cli/docs/markdown.ts blockMarkers)`);
    files.set(o.file, next);
  }
  return files;
}
