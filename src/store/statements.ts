/**
 * Prepared statements, cached per connection. better-sqlite3 prepares anew on every `prepare`, and
 * a command over 20,000 named subclouds would otherwise prepare the same lookup 20,000 times.
 */
import type { Db, Statement } from '../platform/db.js';

const caches = new WeakMap<Db, Map<string, Statement>>();

export function sql(db: Db, text: string): Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let stmt = cache.get(text);
  if (!stmt) cache.set(text, (stmt = db.prepare(text)));
  return stmt;
}
