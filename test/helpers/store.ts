/** Store-level fixtures on a real dcm database. */
import { openDb, type Db } from '../../src/store/open.js';
import { insertSubclouds } from '../../src/store/subclouds.js';
import { insertStrategy } from '../../src/store/strategy.js';
import { insertSteps } from '../../src/store/steps.js';
import { tempDir } from './cli.js';

/**
 * A store-level fixture: a real dcm database (a file, or a server's in the PostgreSQL pass) with
 * the subclouds `names`, a patch strategy of one stage (window 2) and one step each, in that order.
 */
export async function strategyOf(names: readonly string[]): Promise<{ db: Db; cleanup: () => void }> {
  const t = tempDir();
  const db = (await openDb(t.db, { create: true }))!;
  await insertSubclouds(db, names.map((name) => ({ name, fields: {} })));
  await insertStrategy(db, { type: 'patch', subcloudApplyType: null, maxParallelSubclouds: null, stopOnFailure: false, extra: {} }, [
    { stage: 1, window: 2, groupName: 'Default' },
  ]);
  await insertSteps(db, names.map((name, i) => ({ subcloudId: i + 1, name, stage: 1 })));
  return {
    db,
    cleanup: () => {
      db.close();
      t.cleanup();
    },
  };
}

/** Subclouds a and b, a patch strategy and one step each. */
export const twoStepStrategy = (): Promise<{ db: Db; cleanup: () => void }> => strategyOf(['a', 'b']);
