/**
 * One test per page: its runnable blocks run against simulated sites in a temporary folder
 * (test/helpers/docs.ts), and the page must end with exit 0, leaving nothing running.
 */
import { expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './cli.js';
import { failure, runBlocks, runnableBlocks } from './docs.js';

export function testPage(page: string): void {
  test(page, async () => {
    const blocks = runnableBlocks(path.join(ROOT, page));
    expect(blocks.length).toBeGreaterThan(0);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-docs-'));
    try {
      const run = await runBlocks(blocks, dir);
      if (run.code !== 0) throw new Error(failure(run));
      // A page stops what it starts: an apply sent to the background is waited for.
      expect(run.leftovers).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
