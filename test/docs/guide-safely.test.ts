/** docs/guide/rolling-out-safely.md's examples run (test/docs/guide.test.ts says how). */
import { describe } from '@jest/globals';
import { testPage } from '../helpers/docs-page.js';

describe('the examples of the guide run', () => {
  testPage('docs/guide/rolling-out-safely.md');
});
