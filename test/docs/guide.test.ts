/**
 * The README's and the guide's examples run: every ```` ```sh runnable ```` block of each page, in
 * order, against simulated sites in a temporary folder, with the built dcm on PATH
 * (test/helpers/docs.ts). A page whose examples no longer work fails here. Rolling out safely is
 * test/docs/guide-safely.test.ts (a file of its own, so that jest runs it beside this one); the
 * first real rollout, on sshd sites, test/docs/first-real-rollout.test.ts; several hosts, on the
 * PostgreSQL pass, test/pg/guide-several-hosts.test.ts. Every runnable block of docs/ is in one of them.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { RUNNABLE } from '../helpers/docs.js';
import { testPage } from '../helpers/docs-page.js';

/** The pages whose blocks run, here or in the two files beside this one. */
export const RUN_PAGES = [
  'README.md',
  'docs/guide/rolling-out-safely.md',
  'docs/guide/during-an-incident.md',
  'docs/guide/the-record.md',
  'docs/guide/first-real-rollout.md',
  // On the PostgreSQL pass: test/pg/guide-several-hosts.test.ts.
  'docs/guide/several-hosts.md',
];

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(p) : e.name.endsWith('.md') ? [path.relative(ROOT, p)] : [];
  });
}

describe('the examples of the README and the guide run', () => {
  test('every page with a runnable block is run by the suite', () => {
    const withBlocks = ['README.md', ...markdownFiles(path.join(ROOT, 'docs'))].filter((f) =>
      fs.readFileSync(path.join(ROOT, f), 'utf8').split('\n').some((l) => RUNNABLE.test(l)),
    );
    expect(withBlocks.sort()).toEqual([...RUN_PAGES].sort());
  });

  testPage('README.md');
  testPage('docs/guide/during-an-incident.md');
  testPage('docs/guide/the-record.md');
});
