/**
 * The sim's sites file keeps what each site's completed strategies left it at (schema 2), which
 * its audit answers from; a file of schema 1 gains the columns with its rows kept.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import { SiteBook } from '../../../src/drivers/sim/sites.js';
import { admit, completed, finish, type Site } from '../../../src/drivers/sim/site.js';
import { tempDir } from '../../helpers/cli.js';

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir('dcm-sites-');
});
afterEach(() => t.cleanup());

describe('sim sites: what an audit answers from', () => {
  test('a schema 1 file is upgraded in place, its rows kept', async () => {
    const file = `${t.db}.sites`;
    const raw = new Database(file);
    raw.exec(`CREATE TABLE sim_site (name TEXT PRIMARY KEY, campaign TEXT NOT NULL, done INTEGER NOT NULL, vim TEXT NOT NULL,
      busy_state TEXT, busy_owner TEXT, options TEXT)`);
    raw.prepare("INSERT INTO sim_site VALUES ('a', 'c1', 4, 'applied', NULL, NULL, NULL)").run();
    raw.pragma('user_version = 1');
    raw.close();
    const book = await SiteBook.open({ file });
    expect(await book.get('a')).toMatchObject({ name: 'a', campaign: 'c1', done: 4, vim: 'applied', softwareVersion: null, sync: null });
    book.set({ ...(await book.get('a'))!, softwareVersion: '24.09', sync: { usm: 'in-sync' } });
    await book.close();
    const again = await SiteBook.open({ file });
    expect(await again.get('a')).toMatchObject({ softwareVersion: '24.09', sync: { usm: 'in-sync' } });
    await again.close();
    const check = new Database(file, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(2);
    check.close();
  });

  test('what a completed strategy left is kept across strategies', () => {
    const req = { cloud: 'a', campaign: 'c1', state: 'pre check', stateIndex: 0, attempt: 1 };
    const first = admit(undefined, req, 'me');
    if (!first.ok) throw new Error(first.reason);
    const done: Site = completed(finish(first.site, req, true, false), 'patching', null);
    expect(done.sync).toEqual({ patching: 'in-sync' });
    const next = admit(done, { ...req, campaign: 'c2' }, 'me');
    if (!next.ok) throw new Error(next.reason);
    // A new strategy starts the site's walk afresh, not its record.
    expect(next.site).toMatchObject({ campaign: 'c2', done: -1, sync: { patching: 'in-sync' } });
    expect(completed(next.site, 'usm', '24.09')).toMatchObject({ softwareVersion: '24.09', sync: { patching: 'in-sync', usm: 'in-sync' } });
  });
});
