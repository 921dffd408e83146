/**
 * libpq's connection parameters read from their texts, as libpq reads them (PostgreSQL's "Connection
 * Strings", "The Connection Service File" and "The Password File"): a `postgresql://` address, a
 * service file's section, a password file's lines. Pure: the files are read, and the parameters
 * put together, by ./pg-params.ts.
 */

/** libpq's parameters, by keyword (`host`, `port`, `dbname`, `user`, `password`, `sslmode`…). */
export type Conninfo = Record<string, string>;

/** An address, a service file or a parameter that libpq would refuse: the message says which and why. */
export class ConninfoError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConninfoError';
  }
}

/**
 * The environment variables libpq reads for a parameter the address and the service leave out
 * (PGPASSWORD, PGSERVICE and PGPASSFILE are read on their own: ./pg-params.ts).
 */
export const PG_ENV: Readonly<Record<string, string>> = {
  host: 'PGHOST',
  hostaddr: 'PGHOSTADDR',
  port: 'PGPORT',
  dbname: 'PGDATABASE',
  user: 'PGUSER',
  options: 'PGOPTIONS',
  application_name: 'PGAPPNAME',
  client_encoding: 'PGCLIENTENCODING',
  connect_timeout: 'PGCONNECT_TIMEOUT',
  sslmode: 'PGSSLMODE',
  sslcert: 'PGSSLCERT',
  sslkey: 'PGSSLKEY',
  sslrootcert: 'PGSSLROOTCERT',
  target_session_attrs: 'PGTARGETSESSIONATTRS',
};

const PREFIX = /^postgres(?:ql)?:\/\//i;

/** %XX sequences decoded; libpq refuses a broken one (and so does dcm, naming the part). */
function decode(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new ConninfoError(`invalid percent-encoding in the address's ${what}`);
  }
}

/**
 * `postgresql://[user[:password]@][host][:port][/dbname][?keyword=value&…]` as libpq reads it: the
 * user part up to the first `@` before a `/`, the host as written (`[…]` for IPv6, a socket's
 * folder percent-encoded), a query's parameters over the address's own parts. One host only: dcm
 * talks to one server (libpq's list of hosts to try in turn is refused, named).
 */
export function parsePgUrl(url: string): Conninfo {
  const m = PREFIX.exec(url);
  if (!m) throw new ConninfoError('not a postgresql:// address');
  const out: Conninfo = {};
  let rest = url.slice(m[0].length);
  const q = rest.indexOf('?');
  const query = q >= 0 ? rest.slice(q + 1) : null;
  if (q >= 0) rest = rest.slice(0, q);
  const slash = rest.indexOf('/');
  let authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash + 1) : null;
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    const userspec = authority.slice(0, at);
    authority = authority.slice(at + 1);
    const colon = userspec.indexOf(':');
    const user = decode(colon >= 0 ? userspec.slice(0, colon) : userspec, 'user');
    const password = colon >= 0 ? decode(userspec.slice(colon + 1), 'password') : '';
    if (user) out.user = user;
    if (password) out.password = password;
  }
  if (authority.includes(',')) throw new ConninfoError(`the address names several hosts (${authority}): dcm connects to one server`);
  let host = authority;
  let port = '';
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    if (close < 0) throw new ConninfoError(`missing "]" in the address's IPv6 host`);
    port = host.slice(close + 1);
    host = host.slice(1, close);
    if (port && !port.startsWith(':')) throw new ConninfoError(`unexpected "${port}" after the address's IPv6 host`);
    port = port.slice(1);
  } else {
    const colon = host.indexOf(':');
    if (colon >= 0) [host, port] = [host.slice(0, colon), host.slice(colon + 1)];
  }
  if (host) out.host = decode(host, 'host');
  if (port) out.port = decode(port, 'port');
  if (path) out.dbname = decode(path, 'database name');
  for (const part of query ? query.split('&') : []) {
    if (!part) continue;
    const eq = part.indexOf('=');
    if (eq < 0) throw new ConninfoError(`missing "=" after "${part}" in the address's parameters`);
    // '+' is a space, as node-postgres has always read these parameters (libpq takes only %20).
    const key = decode(part.slice(0, eq).replace(/\+/g, ' '), 'parameters');
    const value = decode(part.slice(eq + 1).replace(/\+/g, ' '), 'parameters');
    // libpq's own alias: `ssl=true` is sslmode=require (node-postgres reads `ssl` itself: kept too).
    if (key === 'ssl' && value === 'true' && !('sslmode' in out)) out.sslmode = 'require';
    out[key] = value;
  }
  if (out.host?.includes(',')) throw new ConninfoError(`the address names several hosts (${out.host}): dcm connects to one server`);
  return out;
}

/**
 * The parameters of `service` in a service file's text (an INI file: `[name]` sections of
 * `keyword=value` lines, `#` comments), or null when the file has no such section. As libpq:
 * blanks around a line are dropped, not around `=`; within the section the first setting of a
 * keyword holds; a line with no `=` and a `service=` line are errors, named by file and line.
 */
export function serviceSection(text: string, service: string, file: string): Conninfo | null {
  let found: Conninfo | null = null;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line || line.startsWith('#')) continue;
    if (line.startsWith('[')) {
      if (found) break;
      // libpq compares the name and its `]` only: `[name] # a note` is the section too.
      if (line.startsWith(`[${service}]`)) found = {};
      continue;
    }
    if (!found) continue;
    const eq = line.indexOf('=');
    if (eq < 0) throw new ConninfoError(`syntax error in service file "${file}", line ${i + 1}`);
    const key = line.slice(0, eq);
    if (key === 'service') throw new ConninfoError(`nested service specifications not supported in service file "${file}", line ${i + 1}`);
    if (!(key in found)) found[key] = line.slice(eq + 1);
  }
  return found;
}

/** What a password file's line is matched against. */
export interface PassKey {
  host: string;
  port: string;
  dbname: string;
  user: string;
}

/**
 * A field of a password file's line against `want`: `*` alone matches anything; `\` escapes the
 * next character (`\:`, `\\`). The rest of the line after the field's `:`, or null.
 */
function matchField(line: string, want: string): string | null {
  if (line.startsWith('*:')) return line.slice(2);
  let i = 0;
  let j = 0;
  while (i < line.length) {
    let escaped = false;
    if (line[i] === '\\') {
      i++;
      escaped = true;
    }
    if (!escaped && line[i] === ':' && j === want.length) return line.slice(i + 1);
    if (j === want.length || line[i] !== want[j]) return null;
    i++;
    j++;
  }
  return null;
}

/**
 * The password of the first line of a password file's text (`hostname:port:database:username:password`)
 * that matches `key`, escapes taken out; null when none does. Lines starting with `#` are comments.
 */
export function passwordFromPassfile(text: string, key: PassKey): string | null {
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (!line || line.startsWith('#')) continue;
    let rest: string | null = line;
    for (const want of [key.host, key.port, key.dbname, key.user]) {
      rest = matchField(rest, want);
      if (rest === null) break;
    }
    if (rest === null) continue;
    let out = '';
    for (let i = 0; i < rest.length && rest[i] !== ':'; i++) {
      if (rest[i] === '\\' && i + 1 < rest.length) i++;
      out += rest[i];
    }
    return out;
  }
  return null;
}

/** libpq's socket folder (Debian's build): a connection through it is `localhost` to a password file. */
export const DEFAULT_SOCKET_DIR = '/var/run/postgresql';

/**
 * What a password file's line is matched against for these parameters: the host as given (else
 * hostaddr), `localhost` for none or the default socket folder; port 5432 when none.
 */
export function passKey(p: Conninfo, defaults: { user: string }): PassKey {
  let host = p.host || p.hostaddr || '';
  if (!host || host === DEFAULT_SOCKET_DIR) host = 'localhost';
  const user = p.user || defaults.user;
  return { host, port: p.port || '5432', dbname: p.dbname || user, user };
}
