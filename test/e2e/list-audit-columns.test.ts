/**
 * Issue 34, item 8 (smaller): `subcloud list -c patching_sync_status` lists the column (it was
 * dropped without a word), and `subcloud audit` over more than ten sites says nothing of a memory
 * leak (each audit in flight listens to the stop: Node warned past ten listeners).
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();

describe('subcloud list and audit', () => {
  test('-c <endpoint>_sync_status: each endpoint by the name subcloud show prints', () => {
    const t = temp();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', '--sync', 'patching=in-sync', '--sync', 'kube-rootca=unknown']);
    const r = dcmQuickOk(['--db', t.db, 'subcloud', 'list', '-f', 'csv', '-c', 'name', '-c', 'patching_sync_status', '-c', 'kube-rootca_sync_status', '-c', 'sync']);
    expect(r.stdout).toBe('"name","sync","kube-rootca_sync_status","patching_sync_status"\n"s1","out-of-sync","unknown","in-sync"\n"s2","out-of-sync","unknown","in-sync"\n');
    // Without -c naming them, the list is dcmanager's client's.
    expect(dcmQuickOk(['--db', t.db, 'subcloud', 'list', '-f', 'csv']).stdout.split('\n')[0]).toBe(
      '"id","name","management","availability","deploy status","sync","backup status","prestage status"',
    );
  });

  test('an exec audit of 15 sites, 20 at once: no MaxListenersExceededWarning', () => {
    const t = temp();
    const cfg = path.join(t.dir, 'sites.yaml');
    fs.writeFileSync(cfg, 'audit: [sh, -c, \'echo "{\\"software_version\\": \\"22.12\\"}"\']\nstates:\n  "*": [\'true\']\n');
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...Array.from({ length: 15 }, (_, i) => `s${i + 1}`)]);
    const r = dcmQuickOk(['--db', t.db, 'subcloud', 'audit', '--all', '--driver', 'exec', '--exec-config', cfg]);
    expect(r.stderr).toBe('audited 15 subcloud(s): 15 changed, 0 failed\n');
  });
});
