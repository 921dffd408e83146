#!/usr/bin/env node
/**
 * `npm run docs` (after the build): writes the generated reference (docs/reference/commands.md,
 * the generated blocks of the other reference pages) and the man page (docs/man/dcm.1) from the
 * commander definitions and the tables they share with the code (src/cli/docs/). With `--check`,
 * writes nothing and exits 1 naming each stale file (test/docs/reference.test.ts checks the same).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { expectedFiles } = await import(path.join(root, 'dist', 'cli', 'docs', 'pages.js'));
const read = (file) => (fs.existsSync(path.join(root, file)) ? fs.readFileSync(path.join(root, file), 'utf8') : null);
const check = process.argv.includes('--check');
const stale = [];
for (const [file, text] of await expectedFiles(read)) {
  if (read(file) === text) continue;
  stale.push(file);
  if (check) continue;
  fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  fs.writeFileSync(path.join(root, file), text);
}
if (check && stale.length) {
  process.stderr.write(`error: stale: ${stale.join(', ')}: run npm run docs\n`);
  process.exitCode = 1;
} else {
  process.stdout.write(stale.length ? `wrote ${stale.join(', ')}\n` : 'docs: up to date\n');
}
