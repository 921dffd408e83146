/**
 * The sim's book of sites writes a tick's changes together: in their own file beside a database
 * file, and in the PostgreSQL pass (jest.pg.config.js) in the store's database's `dcm_sim` schema,
 * where a tick is two statements over arrays. The same writes either way: every changed site, then
 * each finish only while the site still runs that owner's operation.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { SiteBook } from '../../../src/drivers/sim/sites.js';
import type { Site } from '../../../src/drivers/sim/site.js';
import { tempDir } from '../../helpers/cli.js';
import { pgTestUrl } from '../../helpers/pg-databases.js';

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir('dcm-sites-');
});
afterEach(() => t.cleanup());

const where = () => (pgTestUrl() ? { pg: t.db } : { file: `${t.db}.sites` });

const busy = (name: string, owner: string): Site => ({
  name,
  campaign: 'c1',
  done: 0,
  vim: 'building',
  busyState: 'creating VIM patch strategy',
  busyOwner: owner,
  options: '{"max_parallel_workers":2}',
  softwareVersion: null,
  sync: null,
});

const finished = (s: Site): Site => ({ ...s, done: 1, vim: 'ready-to-apply', busyState: null, busyOwner: null, sync: { patching: 'in-sync' } });

describe('sim sites: a tick of writes', () => {
  test('changed sites are written, and a finish is kept only while the site runs that owner\'s operation', async () => {
    const book = await SiteBook.open(where());
    // One tick: three sites start (c under another owner, as after a takeover), then a and c end.
    for (const s of [busy('a', 'me'), busy('b', 'me'), busy('c', 'other')]) book.set(s);
    const kept = await Promise.all([book.finish(finished(busy('a', 'me')), 'me', true), book.finish(finished(busy('c', 'other')), 'me', true)]);
    expect(kept).toEqual([true, false]);
    // A later tick: b ends.
    expect(await book.finish(finished(busy('b', 'me')), 'me', false)).toBe(true);
    await book.close();

    const again = await SiteBook.open(where());
    expect(await again.get('a')).toEqual(finished(busy('a', 'me')));
    expect(await again.get('b')).toEqual(finished(busy('b', 'me')));
    // Refused: the site still runs the other owner's operation, as it was written.
    expect(await again.get('c')).toEqual(busy('c', 'other'));
    expect(await again.get('d')).toBeUndefined();
    await again.close();
  });
});
