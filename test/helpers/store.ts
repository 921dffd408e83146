/** A store-level fixture: a real dcm file with subclouds a and b, a patch strategy and one step each. */
import { openDb, type Db } from '../../src/store/open.js';
import { insertSubclouds } from '../../src/store/subclouds.js';
import { insertStrategy } from '../../src/store/strategy.js';
import { insertSteps } from '../../src/store/steps.js';
import { tempDir } from './cli.js';

export function twoStepStrategy(): { db: Db; cleanup: () => void } {
  const t = tempDir();
  const db = openDb(t.db, { create: true })!;
  insertSubclouds(db, [{ name: 'a', fields: {} }, { name: 'b', fields: {} }]);
  insertStrategy(db, { type: 'patch', subcloudApplyType: null, maxParallelSubclouds: null, stopOnFailure: false, extra: {} }, [
    { stage: 1, window: 2, groupName: 'Default' },
  ]);
  insertSteps(db, [
    { subcloudId: 1, name: 'a', stage: 1 },
    { subcloudId: 2, name: 'b', stage: 1 },
  ]);
  return {
    db,
    cleanup: () => {
      db.close();
      t.cleanup();
    },
  };
}
