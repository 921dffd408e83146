/** `--db postgresql://…`: a database on a PostgreSQL server rather than a file, and how messages name it. */

/** Does `--db` name a PostgreSQL database rather than a file? (`postgresql://` or `postgres://`, as libpq takes.) */
export function isPgUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** The address as messages show it: without its password. */
export function shownUrl(url: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/[^:/@?#]*):[^@/?#]*@/i, '$1:***@');
}

/**
 * The database's name in a PostgreSQL address (`postgresql://host/NAME?…`), or null when the
 * address leaves it to libpq (PGDATABASE, else the user's name).
 */
export function pgDatabaseName(url: string): string | null {
  const m = /^postgres(?:ql)?:\/\/[^/?#]*\/([^?#]+)/i.exec(url);
  return m ? decodeURIComponent(m[1]) : null;
}
