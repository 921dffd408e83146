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

/**
 * The search_path an address (its `options`, as libpq reads them) or PGOPTIONS names, or null when
 * neither names one (the server's default, `"$user", public`, then holds).
 */
export function namedSearchPath(url: string, pgOptions: string | undefined): string | null {
  let fromUrl: string | null = null;
  const q = url.indexOf('?');
  if (q >= 0) {
    for (const part of url.slice(q + 1).split('&')) {
      const eq = part.indexOf('=');
      if (eq < 0 || part.slice(0, eq) !== 'options') continue;
      try {
        fromUrl = decodeURIComponent(part.slice(eq + 1).replace(/\+/g, ' '));
      } catch {
        fromUrl = part.slice(eq + 1);
      }
    }
  }
  for (const opts of [fromUrl, pgOptions ?? null]) {
    const m = opts === null ? null : /(?:^|\s)(?:-c\s*|--)search_path=(\S+)/.exec(opts);
    if (m) return m[1];
  }
  return null;
}

/**
 * `--db` that reads as an address and is none: `postgresql:foo.db` (the slashes left out), a
 * scheme dcm has no store for (`sqlite:///x.db`, `mysql://…`). null: a file's path or a
 * PostgreSQL address. A file whose name starts so is still reachable as `./postgresql:foo.db`.
 */
export function dbAddressProblem(db: string): string | null {
  if (isPgUrl(db)) return null;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(db)?.[1];
  if (!scheme) return null;
  const pgLike = /^(postgres(ql)?|pg(sql)?|psql)$/i.test(scheme);
  if (pgLike) return `--db '${db}' looks like a PostgreSQL address but is not one: write postgresql://… (postgresql:///NAME for a local database), or ./${db} for a file of that name`;
  if (db.slice(scheme.length + 1).startsWith('//') || /^(sqlite3?|file|mysql|mariadb)$/i.test(scheme)) {
    return `--db '${db}' is a ${scheme}: address, which dcm does not take: name a file's path or a postgresql:// address`;
  }
  return null;
}

/**
 * The address a run is handed (`{db}`, DCM_DB): the store's, without its password, which stays in
 * dcm. Both of libpq's places for one go: the user part (`user:secret@`) and a `password=`
 * parameter. A run that must reach the database gets the password another way (PGPASSFILE).
 */
export function urlWithoutPassword(url: string): string {
  if (!isPgUrl(url)) return url;
  let out = url.replace(/^(postgres(?:ql)?:\/\/[^:/@?#]*):[^@/?#]*@/i, '$1@');
  const q = out.indexOf('?');
  if (q >= 0) {
    const kept = out
      .slice(q + 1)
      .split('&')
      .filter((p) => p !== '' && !/^password=/i.test(p));
    out = out.slice(0, q) + (kept.length ? `?${kept.join('&')}` : '');
  }
  return out;
}
