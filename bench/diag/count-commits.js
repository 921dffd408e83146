/**
 * Diagnostic preload (node --import): counts, per SQLite connection of the process, the committed
 * write transactions (outermost better-sqlite3 transactions, plus write statements run outside
 * one, i.e. autocommits) and the write statements. Written as JSON to $BENCH_COUNTS_OUT at exit.
 * Not used for timing: the wrappers cost a little.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');

const connections = [];
const byDb = new WeakMap();
function entry(db) {
  let e = byDb.get(db);
  if (!e) {
    e = { connection: connections.length + 1, file: path.basename(db.name), commits: 0, writeStatements: 0, rolledBack: 0 };
    byDb.set(db, e);
    connections.push(e);
  }
  return e;
}

const originalTransaction = Database.prototype.transaction;
Database.prototype.transaction = function transaction(fn) {
  const db = this;
  const tx = originalTransaction.call(this, fn);
  const wrap = (f) =>
    function counted(...args) {
      const outermost = !db.inTransaction;
      try {
        const result = f.apply(this, args);
        if (outermost) entry(db).commits++;
        return result;
      } catch (err) {
        if (outermost) entry(db).rolledBack++;
        throw err;
      }
    };
  const counted = wrap(tx);
  for (const kind of ['deferred', 'immediate', 'exclusive']) counted[kind] = wrap(tx[kind]);
  counted.default = counted;
  return counted;
};

const probe = new Database(':memory:');
const StatementPrototype = Object.getPrototypeOf(probe.prepare('SELECT 1'));
probe.close();
const originalRun = StatementPrototype.run;
StatementPrototype.run = function run(...args) {
  if (!this.reader) {
    const e = entry(this.database);
    e.writeStatements++;
    if (!this.database.inTransaction) e.commits++;
  }
  return originalRun.apply(this, args);
};

process.on('exit', () => {
  if (process.env.BENCH_COUNTS_OUT) fs.writeFileSync(process.env.BENCH_COUNTS_OUT, JSON.stringify(connections));
});
