/** Queries of the subcloud_label table: a subcloud's free labels, and selecting subclouds by them. */
import type { LabelChanges, LabelSelector, Labels } from '../domain/labels.js';
import type { Db } from './open.js';
import { sql } from './statements.js';

/** Set (a value) or remove (null) labels of one subcloud, inside the caller's transaction. */
export function changeLabels(db: Db, subcloudId: number, changes: LabelChanges): void {
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) sql(db, 'DELETE FROM subcloud_label WHERE subcloud_id = ? AND key = ?').run(subcloudId, key);
    else {
      sql(db, 'INSERT INTO subcloud_label (subcloud_id, key, value) VALUES (?, ?, ?) ON CONFLICT (subcloud_id, key) DO UPDATE SET value = excluded.value')
        .run(subcloudId, key, value);
    }
  }
}

export function labelsOf(db: Db, subcloudId: number): Labels {
  const rows = sql(db, 'SELECT key, value FROM subcloud_label WHERE subcloud_id = ? ORDER BY key').raw(true).all(subcloudId) as [string, string][];
  return Object.fromEntries(rows);
}

/**
 * The labels of every subcloud as one `k=v;k2=v2` text (keys sorted), for a SELECT over `subcloud`
 * aliased `alias`: null for a subcloud without labels.
 */
export function labelsColumn(alias: string): string {
  return `(SELECT group_concat(l.key || '=' || l.value, ';' ORDER BY l.key) FROM subcloud_label l WHERE l.subcloud_id = ${alias}.id)`;
}

/**
 * A WHERE condition for a SELECT over `subcloud` aliased `alias` that holds for the subclouds the
 * selector picks (every label as given; null: the subcloud has no such label), and its arguments.
 */
export function labelCondition(alias: string, selector: LabelSelector): { conds: string[]; args: unknown[] } {
  const conds: string[] = [];
  const args: unknown[] = [];
  for (const [key, value] of Object.entries(selector)) {
    if (value === null) {
      conds.push(`NOT EXISTS (SELECT 1 FROM subcloud_label l WHERE l.subcloud_id = ${alias}.id AND l.key = ?)`);
      args.push(key);
    } else {
      conds.push(`EXISTS (SELECT 1 FROM subcloud_label l WHERE l.subcloud_id = ${alias}.id AND l.key = ? AND l.value = ?)`);
      args.push(key, value);
    }
  }
  return { conds, args };
}
