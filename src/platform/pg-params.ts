/**
 * How dcm connects to a PostgreSQL server: libpq's parameters resolved once, as libpq resolves them
 * (PostgreSQL's "Connection Strings", "Environment Variables", "The Connection Service File", "The
 * Password File"), and handed to node-postgres as an explicit configuration: it never reads a
 * password file or a variable itself (node-postgres' own password-file support is deprecated and
 * says so on stderr), and what claims runs (the exec driver's launcher) is handed the same
 * parameters, password included, through its input.
 *
 * The order, first found wins: the address (`postgresql://user:password@host:port/dbname?k=v`);
 * the service it or PGSERVICE names, in PGSERVICEFILE (else ~/.pg_service.conf), then in
 * PGSYSCONFDIR's pg_service.conf (else Debian's /etc/postgresql-common); the PG* variables; the
 * defaults (this user's name, the database of that name, port 5432). A password the address, the
 * service and PGPASSWORD leave out comes from the password file (the `passfile` parameter, else
 * PGPASSFILE, else ~/.pgpass): the first line that matches, and only from a plain file no group or
 * other user may read, as libpq requires.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ClientConfig } from 'pg';
import type { ConnectionOptions } from 'node:tls';
import { ConninfoError, PG_ENV, parsePgUrl, passKey, passwordFromPassfile, serviceSection, type Conninfo } from './pg-conninfo.js';

export { ConninfoError };

/** One server's parameters, resolved. Plain data: it crosses to the launcher as JSON. */
export interface PgParams {
  /** Every parameter but the password, `user`, `dbname` and `port` filled in. */
  conninfo: Conninfo;
  /** null: none was given (a server that asks for one refuses the connection, saying `source`). */
  password: string | null;
  /** Where the password came from (`PGPASSWORD`, `the password file ~/.pgpass`…), or why there is none. */
  source: string;
}

/** Debian's libpq looks for the system-wide service file here (`pg_config --sysconfdir`). */
const SYSCONFDIR = '/etc/postgresql-common';


function osUser(): { name: string; home: string } {
  try {
    const u = os.userInfo();
    return { name: u.username, home: u.homedir };
  } catch {
    return { name: process.env.USER ?? 'postgres', home: '' };
  }
}

/** A file's text, or null when there is none; any other failure is the caller's error. */
function readIfThere(file: string, what: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw new ConninfoError(`cannot read ${what} "${file}": ${code ?? (err as Error).message}`);
  }
}

/** The named service's parameters: the user's file first, then the system's; libpq's error when neither has it. */
function serviceParams(name: string, fromUrl: Conninfo, env: NodeJS.ProcessEnv, home: string): Conninfo {
  const files = [fromUrl.servicefile || env.PGSERVICEFILE || path.join(home, '.pg_service.conf'), path.join(env.PGSYSCONFDIR || SYSCONFDIR, 'pg_service.conf')];
  for (const file of files) {
    const text = readIfThere(file, 'service file');
    const section = text === null ? null : serviceSection(text, name, file);
    if (section) return section;
  }
  throw new ConninfoError(`definition of service "${name}" not found (looked in ${files.join(' and ')})`);
}

/** The password file's password for these parameters, or why there is none. */
function fromPassfile(conninfo: Conninfo, env: NodeJS.ProcessEnv, home: string): { password: string | null; source: string } {
  const file = conninfo.passfile || env.PGPASSFILE || path.join(home, '.pgpass');
  const none = (why: string) => ({ password: null, source: why });
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return none(`there is no password file ${file}`);
  }
  if (!st.isFile()) return none(`the password file ${file} is not a plain file`);
  // libpq ignores a password file others may read or write (it says so, and connects without it).
  if (st.mode & 0o077) return none(`the password file ${file} has group or world access (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}): libpq ignores such a file, and so does dcm; chmod 600 it`);
  const text = readIfThere(file, 'password file') ?? '';
  const key = passKey(conninfo, { user: conninfo.user });
  const password = passwordFromPassfile(text, key);
  if (password === null) return none(`no line of the password file ${file} matches ${key.host}:${key.port}:${key.dbname}:${key.user}`);
  return { password, source: `the password file ${file}` };
}

/** libpq's parameters for `url` in this environment (throws ConninfoError on what libpq would refuse). */
export function resolvePgParams(url: string, env: NodeJS.ProcessEnv = process.env): PgParams {
  const user = osUser();
  const home = env.HOME || user.home;
  const fromUrl = parsePgUrl(url);
  const serviceName = fromUrl.service || env.PGSERVICE;
  const fromService = serviceName ? serviceParams(serviceName, fromUrl, env, home) : {};
  const conninfo: Conninfo = { ...fromService, ...fromUrl };
  for (const [key, name] of Object.entries(PG_ENV)) {
    const v = env[name];
    if (!(key in conninfo) && v) conninfo[key] = v;
  }
  conninfo.user ||= user.name;
  conninfo.dbname ||= conninfo.user;
  conninfo.port ||= '5432';
  if (!/^\d+$/.test(conninfo.port.trim()) || Number(conninfo.port) > 65535) throw new ConninfoError(`invalid port number: "${conninfo.port}"`);
  let given: { password: string | null; source: string };
  if (fromUrl.password) given = { password: fromUrl.password, source: 'the address' };
  else if (fromService.password) given = { password: fromService.password, source: `service "${serviceName}"` };
  else if (env.PGPASSWORD) given = { password: env.PGPASSWORD, source: 'PGPASSWORD' };
  else given = fromPassfile(conninfo, env, home);
  delete conninfo.password;
  return { conninfo, ...given };
}

const resolved = new Map<string, PgParams>();

/**
 * `url`'s parameters in this process's environment, resolved on its first connection and kept:
 * every connection of the command (its store, the lease's, the launcher's) uses the same. Kept by
 * the address and the variables they were resolved with (HOME and PG*), which a process that runs
 * several commands (the tests' in-process dcm) may change between them.
 */
export function pgParamsOf(url: string, env: NodeJS.ProcessEnv = process.env): PgParams {
  const key = JSON.stringify([url, Object.entries(env).filter(([k]) => k === 'HOME' || k.startsWith('PG')).sort()]);
  let p = resolved.get(key);
  if (!p) resolved.set(key, (p = resolvePgParams(url, env)));
  return p;
}

function certFile(file: string, what: string): string {
  const text = readIfThere(file, what);
  if (text === null) throw new ConninfoError(`${what} "${file}" does not exist`);
  return text;
}

/**
 * TLS as node-postgres 8 has always read it from an address (README "A database on PostgreSQL"):
 * none unless asked; `disable` and `allow` none (libpq's `allow` tries without first); `prefer`,
 * `require`, `verify-ca` and `verify-full` the server's certificate and name checked; node-postgres'
 * own `no-verify` (and `ssl=no-verify`) encrypted unchecked; `ssl=true` (or 1) encrypted, checked.
 */
function tlsOf(c: Conninfo): ClientConfig['ssl'] {
  const mode = c.sslmode;
  if (mode === 'disable' || mode === 'allow' || (!mode && (c.ssl === 'false' || c.ssl === '0'))) return false;
  const files = c.sslcert || c.sslkey || c.sslrootcert;
  if (!mode && !files) {
    if (c.ssl === 'no-verify') return { rejectUnauthorized: false };
    return c.ssl === 'true' || c.ssl === '1';
  }
  const o: ConnectionOptions = {};
  if (c.sslcert) o.cert = certFile(c.sslcert, 'sslcert');
  if (c.sslkey) o.key = certFile(c.sslkey, 'sslkey');
  if (c.sslrootcert) o.ca = certFile(c.sslrootcert, 'sslrootcert');
  if (mode === 'no-verify' || c.ssl === 'no-verify') o.rejectUnauthorized = false;
  return o;
}

/** A setting node-postgres sends in its start-up packet, as a number when it is one. */
function numeric(v: string | undefined): number | undefined {
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}

/**
 * node-postgres' configuration for these parameters: every field given, so that it reads no
 * variable and no password file of its own. The password is a function, asked only when the
 * server asks: none given is then an error that says where a password may come from.
 */
export function pgClientConfig(p: PgParams): ClientConfig {
  const c = p.conninfo;
  const config: ClientConfig = {
    host: c.host || c.hostaddr || 'localhost',
    port: Number(c.port),
    user: c.user,
    database: c.dbname,
    password: () => {
      if (p.password !== null) return p.password;
      throw new ConninfoError(`the server asks for a password, and none was given (PGPASSWORD, PGPASSFILE or ~/.pgpass, a service file, or the address): ${p.source}`);
    },
    ssl: tlsOf(c),
  };
  if (c.options) config.options = c.options;
  if (c.application_name) config.application_name = c.application_name;
  if (c.client_encoding) config.client_encoding = c.client_encoding;
  const statementTimeout = numeric(c.statement_timeout);
  if (statementTimeout !== undefined) config.statement_timeout = statementTimeout;
  const lockTimeout = numeric(c.lock_timeout);
  if (lockTimeout !== undefined) config.lock_timeout = lockTimeout;
  return config;
}
