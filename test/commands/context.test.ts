/** withWriteDb: a new file appears only when its command succeeds, and never replaces another's. */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import { withWriteDb } from '../../src/commands/context.js';
import { OperationError } from '../../src/domain/errors.js';
import { openDb } from '../../src/store/open.js';
import { insertSubclouds, listSubclouds } from '../../src/store/subclouds.js';
import { tempDir } from '../helpers/cli.js';

/** What another process does meanwhile: create the file and commit a subcloud to it. */
async function otherProcessAdds(file: string, name: string): Promise<void> {
  const db = (await openDb(file, { create: true }))!;
  await db.transaction(async (tx) => insertSubclouds(tx, [{ name, fields: {} }])).immediate();
  db.close();
}

const names = async (file: string) => {
  const db = (await openDb(file, { create: false }))!;
  try {
    return (await listSubclouds(db)).map((s) => s.name);
  } finally {
    db.close();
  }
};

describe('withWriteDb', () => {
  let t: ReturnType<typeof tempDir>;
  beforeEach(() => {
    t = tempDir();
  });
  afterEach(() => t.cleanup());

  test('a command that fails on a missing file leaves no file behind', async () => {
    await expect(
      withWriteDb({ dbPath: t.db }, async (db) => {
        await insertSubclouds(db, [{ name: 'mine', fields: {} }]);
        throw new OperationError('bad input');
      }),
    ).rejects.toThrow('bad input');
    expect(fs.readdirSync(t.dir)).toEqual([]);
  });

  test('a command that succeeds on a missing file creates it, with its change and nothing else beside it', async () => {
    await withWriteDb({ dbPath: t.db }, (db) => insertSubclouds(db, [{ name: 'mine', fields: {} }]));
    expect(fs.readdirSync(t.dir)).toEqual(['dcm.db']);
    expect(await names(t.db)).toEqual(['mine']);
  });

  test("a failing command never removes a file another process created meanwhile", async () => {
    await expect(
      withWriteDb({ dbPath: t.db }, async () => {
        await otherProcessAdds(t.db, 'theirs');
        throw new OperationError('bad input');
      }),
    ).rejects.toThrow('bad input');
    expect(await names(t.db)).toEqual(['theirs']);
  });

  test('a succeeding command whose file was created meanwhile runs again on that file: both changes are kept', async () => {
    let runs = 0;
    await withWriteDb({ dbPath: t.db }, async (db) => {
      if (runs++ === 0) await otherProcessAdds(t.db, 'theirs');
      await insertSubclouds(db, [{ name: 'mine', fields: {} }]);
    });
    expect(runs).toBe(2);
    expect(await names(t.db)).toEqual(['theirs', 'mine']);
    expect(fs.readdirSync(t.dir).filter((f) => f.endsWith('.new'))).toEqual([]);
  });
});
