/**
 * libpq's parameters put together as libpq does (src/platform/pg-params.ts), with real files in a
 * folder of the test's own and the environment given: the address over the service over the PG*
 * variables; the password from the address, the service, PGPASSWORD, else the password file (only
 * a private, plain one); and node-postgres' configuration made of them, which leaves it nothing to
 * read itself.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConninfoError, pgClientConfig, pgParamsOf, resolvePgParams, type PgParams } from '../../src/platform/pg-params.js';

let dir = '';
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-pgparams-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A file in the test's folder (mode 0600 unless told). */
function file(name: string, text: string, mode = 0o600): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  fs.chmodSync(p, mode);
  return p;
}

/** An environment with nothing of the machine's: HOME is the test's folder, the system's service folder too. */
const env = (more: Record<string, string> = {}): NodeJS.ProcessEnv => ({ HOME: dir, PGSYSCONFDIR: path.join(dir, 'etc'), ...more });

describe('where each parameter comes from', () => {
  test('the address, then the service, then the PG* variables; user, database and port filled in', () => {
    const services = file('services.conf', '[fleet]\nhost=svc-host\nport=6000\ndbname=svc-db\nuser=svc-user\n');
    const p = resolvePgParams('postgresql://url-user@/?service=fleet', env({ PGSERVICEFILE: services, PGHOST: 'env-host', PGPORT: '7000', PGOPTIONS: '-c search_path=x', PGAPPNAME: 'app' }));
    expect(p.conninfo).toMatchObject({ user: 'url-user', host: 'svc-host', port: '6000', dbname: 'svc-db', options: '-c search_path=x', application_name: 'app' });
    const bare = resolvePgParams('postgresql://', env());
    expect(bare.conninfo).toEqual({ user: os.userInfo().username, dbname: os.userInfo().username, port: '5432' });
    expect(resolvePgParams('postgresql://', env({ PGUSER: 'u', PGDATABASE: 'd', PGHOST: 'h' })).conninfo).toEqual({ user: 'u', dbname: 'd', host: 'h', port: '5432' });
  });

  test('PGSERVICE names the service; the user\'s file first, then the system\'s (PGSYSCONFDIR); one not found is an error naming both', () => {
    fs.mkdirSync(path.join(dir, 'etc'));
    file('etc/pg_service.conf', '[fleet]\nhost=system\n[only-system]\nhost=sys2\n');
    file('.pg_service.conf', '[fleet]\nhost=mine\n');
    expect(resolvePgParams('postgresql://', env({ PGSERVICE: 'fleet' })).conninfo.host).toBe('mine');
    expect(resolvePgParams('postgresql://?service=only-system', env()).conninfo.host).toBe('sys2');
    expect(() => resolvePgParams('postgresql://?service=nope', env())).toThrow(
      new ConninfoError(`definition of service "nope" not found (looked in ${path.join(dir, '.pg_service.conf')} and ${path.join(dir, 'etc', 'pg_service.conf')})`),
    );
  });

  test('a port that is no number is refused, as libpq refuses it', () => {
    expect(() => resolvePgParams('postgresql://db:x5432/fleet', env())).toThrow(new ConninfoError('invalid port number: "x5432"'));
  });
});

describe('the password', () => {
  const url = 'postgresql://dcm@db.example.net/fleet';

  test('the address over the service over PGPASSWORD over the password file, each said as the source', () => {
    const services = file('s.conf', '[fleet]\npassword=from-service\n');
    const passfile = file('pgpass', 'db.example.net:5432:fleet:dcm:from-file\n');
    const all = env({ PGSERVICEFILE: services, PGPASSWORD: 'from-env', PGPASSFILE: passfile });
    const pick = (u: string, e: NodeJS.ProcessEnv) => {
      const p = resolvePgParams(u, e);
      return [p.password, p.source];
    };
    expect(pick('postgresql://dcm:from-url@db.example.net/fleet?service=fleet', all)).toEqual(['from-url', 'the address']);
    expect(pick(`${url}?service=fleet`, all)).toEqual(['from-service', 'service "fleet"']);
    expect(pick(url, all)).toEqual(['from-env', 'PGPASSWORD']);
    expect(pick(url, env({ PGPASSFILE: passfile }))).toEqual(['from-file', `the password file ${passfile}`]);
    // ~/.pgpass when PGPASSFILE is not set; `passfile` of the address over PGPASSFILE.
    const home = file('.pgpass', '*:*:*:*:from-home\n');
    expect(pick(url, env())).toEqual(['from-home', `the password file ${home}`]);
    expect(pick(`${url}?passfile=${encodeURIComponent(passfile)}`, env({ PGPASSFILE: home }))).toEqual(['from-file', `the password file ${passfile}`]);
    // The password is kept apart from the other parameters.
    expect(resolvePgParams('postgresql://dcm:from-url@db/fleet', env()).conninfo).not.toHaveProperty('password');
  });

  test('a password file others may read, one that is no plain file, one with no matching line, none at all: no password, and why', () => {
    const why = (e: NodeJS.ProcessEnv) => {
      const p = resolvePgParams(url, e);
      expect(p.password).toBeNull();
      return p.source;
    };
    const open = file('open', 'db.example.net:5432:fleet:dcm:p\n', 0o640);
    expect(why(env({ PGPASSFILE: open }))).toBe(`the password file ${open} has group or world access (mode 0640): libpq ignores such a file, and so does dcm; chmod 600 it`);
    expect(why(env({ PGPASSFILE: dir }))).toBe(`the password file ${dir} is not a plain file`);
    const other = file('other', 'db.example.net:5432:fleet:someone:p\n');
    expect(why(env({ PGPASSFILE: other }))).toBe(`no line of the password file ${other} matches db.example.net:5432:fleet:dcm`);
    expect(why(env())).toBe(`there is no password file ${path.join(dir, '.pgpass')}`);
  });
});

test('resolved once per address and environment: the same parameters for every connection, anew when a variable changes', () => {
  const url = 'postgresql://dcm@db/fleet';
  const first = pgParamsOf(url, env({ PGPASSWORD: 'one' }));
  expect(pgParamsOf(url, env({ PGPASSWORD: 'one' }))).toBe(first);
  expect(pgParamsOf(url, env({ PGPASSWORD: 'two' })).password).toBe('two');
  expect(pgParamsOf(url, env({ PGPASSWORD: 'one', PGOPTIONS: '-c search_path=x' })).conninfo.options).toBe('-c search_path=x');
});

describe("node-postgres' configuration", () => {
  const params = (conninfo: Record<string, string>, password: string | null = 'pw'): PgParams => ({
    conninfo: { user: 'dcm', dbname: 'fleet', port: '5432', ...conninfo },
    password,
    source: password === null ? 'there is no password file ~/.pgpass' : 'PGPASSWORD',
  });

  test('every field given (it reads no variable of its own); the password asked for only when the server asks', () => {
    const c = pgClientConfig(params({ host: '/tmp/pg', options: '-c search_path=x', application_name: 'dcm', lock_timeout: '500' }));
    expect(c).toMatchObject({ host: '/tmp/pg', port: 5432, user: 'dcm', database: 'fleet', ssl: false, options: '-c search_path=x', application_name: 'dcm', lock_timeout: 500 });
    expect((c.password as () => string)()).toBe('pw');
    expect(pgClientConfig(params({})).host).toBe('localhost');
    const none = pgClientConfig(params({}, null));
    expect(() => (none.password as () => string)()).toThrow(
      'the server asks for a password, and none was given (PGPASSWORD, PGPASSFILE or ~/.pgpass, a service file, or the address): there is no password file ~/.pgpass',
    );
  });

  test.each([
    [{}, false],
    [{ sslmode: 'disable' }, false],
    [{ sslmode: 'allow' }, false],
    [{ sslmode: 'prefer' }, {}],
    [{ sslmode: 'require' }, {}],
    [{ sslmode: 'verify-full' }, {}],
    [{ sslmode: 'no-verify' }, { rejectUnauthorized: false }],
    [{ ssl: 'true' }, true],
    [{ ssl: 'no-verify' }, { rejectUnauthorized: false }],
  ])('TLS for %j: %j', (conninfo, ssl) => {
    expect(pgClientConfig(params(conninfo as Record<string, string>)).ssl).toEqual(ssl);
  });

  test("a certificate's file is read; a missing one is named", () => {
    const ca = file('root.crt', 'CERT');
    expect(pgClientConfig(params({ sslmode: 'verify-full', sslrootcert: ca })).ssl).toEqual({ ca: 'CERT' });
    expect(() => pgClientConfig(params({ sslmode: 'require', sslcert: path.join(dir, 'none.crt') }))).toThrow(`sslcert "${path.join(dir, 'none.crt')}" does not exist`);
  });
});
