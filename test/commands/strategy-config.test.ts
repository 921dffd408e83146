/** The strategy-config commands called as functions: typed options in, a result (or an error) out. */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import {
  configDelete,
  configListAll,
  configShowOne,
  configUpdate,
  CONFIG_COLUMNS,
} from '../../src/commands/strategy-config.js';
import { OperationError } from '../../src/domain/errors.js';
import type { ConfigOptions } from '../../src/domain/strategy-config.js';
import { openDb } from '../../src/store/open.js';
import { insertSubclouds } from '../../src/store/subclouds.js';
import { tempDir } from '../helpers/cli.js';

const OPTS: ConfigOptions = {
  storage_apply_type: 'serial',
  worker_apply_type: 'parallel',
  max_parallel_workers: 2,
  alarm_restriction_type: 'strict',
  default_instance_action: 'migrate',
};

describe('strategy-config commands', () => {
  let t: ReturnType<typeof tempDir>;
  beforeEach(() => {
    t = tempDir();
  });
  afterEach(() => t.cleanup());

  const withFleet = async () => {
    const db = (await openDb(t.db, { create: true }))!;
    await insertSubclouds(db, [{ name: 'a', fields: {} }, { name: 'b', fields: {} }]);
    db.close();
  };

  test('on a missing file: list and show give the built-in default, delete RegionOne does nothing; none creates the file', async () => {
    const ctx = { dbPath: t.db };
    expect(await configListAll(ctx)).toEqual({
      kind: 'list',
      columns: CONFIG_COLUMNS,
      rows: [['all clouds default', 'parallel', 'parallel', 10, 'relaxed', 'stop-start']],
    });
    expect((await configShowOne(ctx, undefined)).values).toEqual([
      'all clouds default', 'parallel', 'parallel', 10, 'relaxed', 'stop-start', null, null,
    ]);
    await configDelete(ctx, 'RegionOne');
    await expect(configShowOne(ctx, 'a')).rejects.toThrow(new OperationError('Subcloud not found'));
    await expect(configDelete(ctx, 'a')).rejects.toThrow('Unable to delete strategy config: Subcloud not found');
    expect(fs.existsSync(t.db)).toBe(false);
  });

  test("update creates the file for the default; a subcloud's row by name or id, shown with its name", async () => {
    const ctx = { dbPath: t.db };
    const d = await configUpdate(ctx, undefined, OPTS);
    expect(d.fields).toEqual([...CONFIG_COLUMNS, 'created_at', 'updated_at']);
    expect(d.values.slice(0, 6)).toEqual(['all clouds default', 'serial', 'parallel', 2, 'strict', 'migrate']);
    await withFleet();
    const b = await configUpdate(ctx, '2', { ...OPTS, max_parallel_workers: 9 });
    expect(b.values.slice(0, 6)).toEqual(['b', 'serial', 'parallel', 9, 'strict', 'migrate']);
    expect((await configListAll(ctx)).rows.map((r) => r[0])).toEqual(['all clouds default', 'b']);
    await expect(configShowOne(ctx, 'a')).rejects.toThrow('No options found for Subcloud with id 1, defaults will be used.');
    await expect(configUpdate(ctx, 'zz', OPTS)).rejects.toThrow('Unable to update patch options for subcloud zz: Subcloud not found');
    await configDelete(ctx, 'b');
    await expect(configDelete(ctx, 'b')).rejects.toThrow('Unable to delete strategy config: Subcloud patch options not found');
  });

  test('a -c check that fails rolls the update back', async () => {
    await withFleet();
    const refuse = () => {
      throw new Error('no such column');
    };
    await expect(configUpdate({ dbPath: t.db, checkResult: refuse }, 'a', OPTS)).rejects.toThrow('no such column');
    await expect(configShowOne({ dbPath: t.db }, 'a')).rejects.toThrow(/^No options found/);
  });
});
