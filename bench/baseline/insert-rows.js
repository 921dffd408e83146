#!/usr/bin/env node
/**
 * Baseline of figure 4: a plain batched insert, one transaction and one prepared statement, into
 * a dcm file (same schema, same pragmas).
 *
 *   node bench/baseline/insert-rows.js subclouds FILE CSV   the CSV's rows into subcloud
 *   node bench/baseline/insert-rows.js steps FILE           a patch strategy with one step per
 *                                                           subcloud, in one stage
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';

const [what, file, csv] = process.argv.slice(2);
const db = new Database(file, { fileMustExist: true });
db.pragma('busy_timeout = 10000');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
const now = new Date().toISOString();
let n = 0;

if (what === 'subclouds') {
  const lines = fs.readFileSync(csv, 'utf8').split('\n').filter(Boolean);
  const header = lines.shift().split(',');
  const insert = db.prepare(
    `INSERT INTO subcloud (name, description, location, group_id, management, availability, deploy_status,
       software_version, prestage_status, patching_sync, usm_sync, kubernetes_sync, kube_rootca_sync, firmware_sync, created_at)
     VALUES (?, ?, ?, 1, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)`,
  );
  db.transaction(() => {
    for (const line of lines) {
      const f = Object.fromEntries(line.split(',').map((v, i) => [header[i], v]));
      const sync = f.sync;
      insert.run(f.name, f.description, f.location, f.management, f.availability, f.deploy_status, f.software_version,
        sync, sync, sync, sync, sync, now);
      n++;
    }
  }).immediate();
} else if (what === 'steps') {
  const ids = db.prepare('SELECT id FROM subcloud ORDER BY id').pluck().all();
  const step = db.prepare(
    `INSERT INTO strategy_step (strategy_id, subcloud_id, stage, state, created_at) VALUES (1, ?, 1, 'initial', ?)`,
  );
  db.transaction(() => {
    db.prepare(
      `INSERT INTO strategy (id, type, subcloud_apply_type, max_parallel_subclouds, stop_on_failure, state, extra_args, created_at)
       VALUES (1, 'patch', NULL, NULL, 0, 'initial', '{}', ?)`,
    ).run(now);
    db.prepare(`INSERT INTO strategy_stage (stage, strategy_id, max_parallel, group_name) VALUES (1, 1, 2, 'Default')`).run();
    for (const id of ids) {
      step.run(id, now);
      n++;
    }
  }).immediate();
} else {
  throw new Error(`unknown mode ${what}`);
}
db.close();
process.stdout.write(`${n} rows\n`);
