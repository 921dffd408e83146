#!/usr/bin/env node
/**
 * Baseline of figure 1: the writes of `dcm strategy apply` without the orchestrator. On a copy of
 * the same prepared file, with the same pragmas as dcm's store, every step walks initial → the 5
 * patch states → complete, and each of those 6 transitions is its own committed transaction: one
 * guarded UPDATE of the step's state plus one step_history row. Steps go in windows of `window`
 * subclouds, transition by transition, as a window of the orchestrator would.
 *
 * usage: node bench/baseline/apply-loop.js FILE [WINDOW]
 */
import Database from 'better-sqlite3';

const [file, windowArg = '500'] = process.argv.slice(2);
const window = Number(windowArg);
const STATES = [
  'initial',
  'pre check',
  'updating patches',
  'creating VIM patch strategy',
  'applying VIM patch strategy',
  'finishing patch strategy',
  'complete',
];

const db = new Database(file, { fileMustExist: true });
db.pragma('busy_timeout = 10000');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');

const ids = db.prepare('SELECT id FROM strategy_step ORDER BY stage, id').pluck().all();
const update = db.prepare(
  `UPDATE strategy_step SET state = ?, started_at = COALESCE(started_at, ?), finished_at = ?, updated_at = ?
   WHERE id = ? AND state = ?`,
);
const history = db.prepare(
  `INSERT INTO step_history (step_id, state, attempt, started_at, finished_at, outcome) VALUES (?, ?, 1, ?, ?, 'ok')`,
);
const transition = db
  .transaction((id, from, to) => {
    const at = new Date().toISOString();
    if (update.run(to, at, to === 'complete' ? at : null, at, id, from).changes !== 1) throw new Error(`step ${id} not in ${from}`);
    history.run(id, to, at, at);
  })
  .immediate;

let commits = 0;
for (let start = 0; start < ids.length; start += window) {
  const batch = ids.slice(start, start + window);
  for (let s = 0; s + 1 < STATES.length; s++) {
    for (const id of batch) {
      transition(id, STATES[s], STATES[s + 1]);
      commits++;
    }
  }
}
db.close();
process.stdout.write(`${commits} commits\n`);
