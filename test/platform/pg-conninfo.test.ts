/**
 * libpq's texts as libpq reads them (src/platform/pg-conninfo.ts): an address, a service file's
 * section, a password file's lines (wildcards, escapes, first match), and what a password file is
 * matched against.
 */
import { describe, expect, test } from '@jest/globals';
import { ConninfoError, parsePgUrl, passKey, passwordFromPassfile, serviceSection } from '../../src/platform/pg-conninfo.js';

describe('an address', () => {
  test.each([
    ['postgresql://', {}],
    ['postgres://db.example.net/fleet', { host: 'db.example.net', dbname: 'fleet' }],
    ['postgresql://dcm@db:5433/fleet', { user: 'dcm', host: 'db', port: '5433', dbname: 'fleet' }],
    ['postgresql://dcm:s%3Acr%40t%2F@db/fleet', { user: 'dcm', password: 's:cr@t/', host: 'db', dbname: 'fleet' }],
    // An empty password is none (a password file is then looked at).
    ['postgresql://dcm:@db/fleet', { user: 'dcm', host: 'db', dbname: 'fleet' }],
    ['postgresql://[::1]:5433/fleet', { host: '::1', port: '5433', dbname: 'fleet' }],
    ['postgresql://%2Fvar%2Frun%2Fpostgresql/fleet', { host: '/var/run/postgresql', dbname: 'fleet' }],
    // A parameter over the address's own part, a socket's folder as `host`.
    ['postgresql://dcm@/fleet?host=/tmp/pg%20x&port=6000', { user: 'dcm', dbname: 'fleet', host: '/tmp/pg x', port: '6000' }],
    ['postgresql:///fleet?options=-c+search_path%3Dfleet&dbname=other', { dbname: 'other', options: '-c search_path=fleet' }],
    ['postgresql://db/?service=fleet&sslmode=disable', { host: 'db', service: 'fleet', sslmode: 'disable' }],
    ['POSTGRESQL://db?ssl=true', { host: 'db', ssl: 'true', sslmode: 'require' }],
    ['postgresql://db?password=p%26w', { host: 'db', password: 'p&w' }],
  ])('%s', (url, conninfo) => {
    expect(parsePgUrl(url)).toEqual(conninfo);
  });

  test.each([
    ['postgresql://a,b/fleet', 'the address names several hosts (a,b): dcm connects to one server'],
    ['postgresql:///fleet?host=a,b', 'the address names several hosts (a,b): dcm connects to one server'],
    ['postgresql://db/fleet?sslmode', 'missing "=" after "sslmode" in the address\'s parameters'],
    ['postgresql://dcm:%zz@db/fleet', "invalid percent-encoding in the address's password"],
    ['postgresql://[::1/fleet', 'missing "]" in the address\'s IPv6 host'],
    ['mysql://db', 'not a postgresql:// address'],
  ])('refused: %s', (url, message) => {
    expect(() => parsePgUrl(url)).toThrow(new ConninfoError(message));
  });
});

describe('a service file', () => {
  const text = [
    '# services',
    '[other]',
    'host=elsewhere',
    '',
    '  [fleet]   ',
    'host=db.example.net',
    '  # a comment',
    'port=5433',
    'port=6000',
    'options=-c search_path=fleet',
    '[after]',
    'user=nobody',
  ].join('\n');

  test("the section's parameters: blanks around a line dropped, comments skipped, the first setting of a keyword held, up to the next section", () => {
    expect(serviceSection(text, 'fleet', 'f.conf')).toEqual({ host: 'db.example.net', port: '5433', options: '-c search_path=fleet' });
    expect(serviceSection(text, 'other', 'f.conf')).toEqual({ host: 'elsewhere' });
  });

  test('no such section: null (the next file is looked in); a name is matched whole', () => {
    expect(serviceSection(text, 'flee', 'f.conf')).toBeNull();
    expect(serviceSection('', 'fleet', 'f.conf')).toBeNull();
    expect(serviceSection('[fleet] # ours\nhost=x\n', 'fleet', 'f.conf')).toEqual({ host: 'x' });
  });

  test('a line with no "=", a service naming another: errors naming the file and the line', () => {
    expect(() => serviceSection('[fleet]\nhost=x\nport 5432\n', 'fleet', 'f.conf')).toThrow('syntax error in service file "f.conf", line 3');
    expect(() => serviceSection('[fleet]\nservice=other\n', 'fleet', 'f.conf')).toThrow('nested service specifications not supported in service file "f.conf", line 2');
    // A broken line of another section is not this one's concern.
    expect(serviceSection('[other]\nbroken\n[fleet]\nhost=x\n', 'fleet', 'f.conf')).toEqual({ host: 'x' });
  });
});

describe('a password file', () => {
  const key = { host: 'db.example.net', port: '5432', dbname: 'fleet', user: 'dcm' };

  test('the first line that matches; `*` matches any field; comments and short lines are skipped', () => {
    const text = ['# hostname:port:database:username:password', 'db.example.net:5432:fleet:other:no', 'db.example.net:5432:fleet:dcm', '*:5432:*:dcm:first', 'db.example.net:5432:fleet:dcm:second'].join('\n');
    expect(passwordFromPassfile(text, key)).toBe('first');
    expect(passwordFromPassfile(text, { ...key, port: '5433' })).toBeNull();
    expect(passwordFromPassfile('', key)).toBeNull();
  });

  test('escapes: `\\:` and `\\\\` in a field and in the password; the password ends at an unescaped `:`; CRLF lines', () => {
    expect(passwordFromPassfile('db.example.net:5432:fleet:dcm:s\\:cr\\\\t:extra\r\n', key)).toBe('s:cr\\t');
    expect(passwordFromPassfile('db\\.example.net:5432:fleet:dcm:p\n', key)).toBe('p');
    expect(passwordFromPassfile('*:*:fle\\:et:dcm:p\n', { ...key, dbname: 'fle:et' })).toBe('p');
    // `*` is a wildcard only alone; `db*` is a name.
    expect(passwordFromPassfile('db*:*:*:*:p\n', key)).toBeNull();
    expect(passwordFromPassfile('\\*:*:*:*:p\n', key)).toBeNull();
    expect(passwordFromPassfile('\\*:*:*:*:p\n', { ...key, host: '*' })).toBe('p');
  });

  test('what a line is matched against: localhost for no host or the default socket folder, port 5432, the user\'s database', () => {
    expect(passKey({}, { user: 'me' })).toEqual({ host: 'localhost', port: '5432', dbname: 'me', user: 'me' });
    expect(passKey({ host: '/var/run/postgresql', user: 'dcm' }, { user: 'me' })).toEqual({ host: 'localhost', port: '5432', dbname: 'dcm', user: 'dcm' });
    expect(passKey({ host: '/tmp/pg', port: '6000', dbname: 'fleet' }, { user: 'me' })).toEqual({ host: '/tmp/pg', port: '6000', dbname: 'fleet', user: 'me' });
    expect(passKey({ hostaddr: '192.0.2.1' }, { user: 'me' })).toMatchObject({ host: '192.0.2.1' });
  });
});
