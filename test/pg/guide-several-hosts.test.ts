/**
 * docs/guide/several-hosts.md's examples run on the PostgreSQL pass's server (test/helpers/docs.ts):
 * two workers on one strategy, then one stopped by Ctrl-C while the other ends the strategy. The
 * page's blocks use $DCM_DB, which names a database of their own here.
 */
import { describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { ROOT, tempDir } from '../helpers/cli.js';
import { failure, runBlocks, runnableBlocks } from '../helpers/docs.js';

describe('the examples of the guide run on PostgreSQL', () => {
  test('docs/guide/several-hosts.md', async () => {
    const t = tempDir('dcm-docs-pg-');
    try {
      expect(t.db).toMatch(/^postgres/);
      const run = await runBlocks(runnableBlocks(path.join(ROOT, 'docs', 'guide', 'several-hosts.md')), t.dir, { DCM_DB: t.db });
      if (run.code !== 0) throw new Error(failure(run));
      expect(run.leftovers).toBe(0);
    } finally {
      t.cleanup();
    }
  });
});
