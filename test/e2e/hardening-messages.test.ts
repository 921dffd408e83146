/**
 * Issue 15, break 8: `strategy-step history` of a subcloud that does not exist is an error, as
 * `strategy-step logs` says it (exit 1), not an empty table; with a file that does not exist too.
 * (A read-only folder under apply: file-faults.test.ts; a takeover's note: apply-fence.test.ts.)
 */
import { afterAll, describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { dcm, dcmOk, tempDir } from '../helpers/cli.js';
import { expectErrorLine } from '../helpers/fleet.js';

const t = tempDir();
afterAll(() => t.cleanup());

describe('history of a subcloud that does not exist', () => {
  test('exit 1 as logs, in a file with subclouds and in none; an existing subcloud without runs is an empty list', () => {
    dcmOk(['--db', t.db, 'subcloud', 'add', 's1']);
    for (const verb of ['history', 'logs']) {
      expectErrorLine(dcm(['--db', t.db, 'strategy-step', verb, 'nosuch']), 1, 'Subcloud nosuch does not exist');
      expectErrorLine(dcm(['--db', path.join(t.dir, 'none.db'), 'strategy-step', verb, 'nosuch']), 1, 'Subcloud nosuch does not exist');
    }
    const r = dcm(['--db', t.db, 'strategy-step', 'history', 's1', '-f', 'value']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(dcm(['--db', t.db, 'strategy-step', 'history', '-f', 'json']).code).toBe(0);
  });
});
