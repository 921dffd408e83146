/**
 * The store's password stays in dcm (README "A database on PostgreSQL"): a run's `{db}` and
 * DCM_DB name the server without it, and PGPASSWORD, the store's password when dcm was given it
 * so, is not in a run's environment. Judged by what the runs themselves saw: their argv and their
 * whole environment, written by each run.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { dcm, dcmOk, waitFor } from '../helpers/cli.js';
import { execFixture, overlapsPerCloud, type ExecFixture } from '../helpers/exec.js';
import { SyncPg } from '../helpers/sync-pg.js';
import { names, runsPerState, stopWorkers, worker } from '../helpers/workers.js';
import { startCluster } from './global-setup.js';

let f: ExecFixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});

test('no run sees the database password, in its argv or its environment', () => {
  f = execFixture();
  // The pass's server trusts its user: any password is accepted, and so must be kept out of runs.
  const db = f.db.replace('://dcm_test@', '://dcm_test:url-secret-4711@');
  expect(db).toContain('url-secret-4711');
  const seen = path.join(f.dir, 'seen.txt');
  const yaml = `states:\n  "*": ["/bin/sh", "-c", "printf 'argv %s\\\\n' \\"$*\\" >> \\"$SEEN\\"; env >> \\"$SEEN\\"; cat /proc/$$/cmdline >> \\"$SEEN\\"; echo >> \\"$SEEN\\"", "x", "{db}"]\n`;
  dcmOk(['--db', db, 'subcloud', 'add', 's1', 's2']);
  dcmOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', f.config(yaml)]);
  const r = dcm(['--db', db, 'strategy', 'apply', '-q'], { env: { SEEN: seen, PGPASSWORD: 'env-secret-4712' } });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const text = fs.readFileSync(seen, 'utf8');
  // Every state of both sites ran and wrote what it saw, the address without its password included.
  expect(text.match(/^argv /gm)?.length).toBeGreaterThanOrEqual(2);
  expect(text).toContain(`DCM_DB=${f.db}`);
  expect(text).toContain(`argv ${f.db}`);
  expect(text).not.toContain('url-secret-4711');
  expect(text).not.toContain('env-secret-4712');
});

/**
 * Every way libpq takes a password, against a server that asks for one (SCRAM-SHA-256 over TCP on
 * 127.0.0.1: a cluster of this file's own, since the pass's server trusts every user on its
 * socket): PGPASSWORD, a password file (PGPASSFILE), a service file (PGSERVICEFILE), the address.
 * Two workers as two hosts apply the strategy: each one's launcher claims its runs in the store
 * and writes their ends there with the same password dcm connected with, handed through its input.
 * Judged by the runs' own log and by what each run wrote of its environment and argv: every run
 * claimed, run once and ended; the password in none of them; no warning from any command.
 */
describe('a server that asks for a password', () => {
  // A ':' and a '\' (escaped in a password file, percent-encoded in an address) and a space.
  const PASSWORD = 'Sc:ram\\pw 4713';
  const N = 12;
  let server: ReturnType<typeof startCluster> | null = null;
  let admin: SyncPg | null = null;
  let port = 0;
  let n = 0;

  beforeAll(async () => {
    port = await freePort();
    server = startCluster({ passwords: { port } });
    admin = new SyncPg(server.url);
    admin.query(`CREATE ROLE dcm_pw LOGIN PASSWORD '${PASSWORD}'`);
  }, 120_000);
  afterAll(() => {
    admin?.close();
    server?.stop();
  });

  /** A new database of dcm_pw's; its address over TCP without a password, and the superuser's look at it (on the socket). */
  function database(): { name: string; tcp: string; read: <T>(text: string) => T[] } {
    const name = `dcm_pw_${++n}`;
    admin!.query(`CREATE DATABASE ${name} OWNER dcm_pw`);
    const look = new SyncPg(server!.url.replace('@/postgres?', `@/${name}?`));
    lookers.push(look);
    return { name, tcp: `postgresql://dcm_pw@127.0.0.1:${port}/${name}`, read: <T>(text: string) => look.query(text).rows as T[] };
  }
  const lookers: SyncPg[] = [];
  afterEach(() => {
    stopWorkers();
    for (const l of lookers.splice(0)) l.close();
  });

  /** Each way: the address dcm is given, the environment it runs in, and what a run's DCM_DB says. */
  const ways: [string, (db: ReturnType<typeof database>, dir: string) => { db: string; env: Record<string, string>; shown: string }][] = [
    ['PGPASSWORD', (d) => ({ db: d.tcp, env: { PGPASSWORD: PASSWORD }, shown: d.tcp })],
    [
      'a password file (PGPASSFILE)',
      (d, dir) => {
        const file = path.join(dir, 'pgpass');
        // A comment, a line for another user first, then the one that matches by a wildcard.
        const escaped = PASSWORD.replace(/[\\:]/g, (c) => `\\${c}`);
        fs.writeFileSync(file, `# hostname:port:database:username:password\n127.0.0.1:${port}:*:someone:not-this\n127.0.0.1:${port}:*:dcm_pw:${escaped}\n`, { mode: 0o600 });
        return { db: d.tcp, env: { PGPASSFILE: file }, shown: d.tcp };
      },
    ],
    [
      'a service file (PGSERVICEFILE)',
      (d, dir) => {
        const file = path.join(dir, 'services.conf');
        fs.writeFileSync(file, `# dcm's fleet\n[other]\nhost=192.0.2.1\n\n[fleet]\nhost=127.0.0.1\nport=${port}\ndbname=${d.name}\nuser=dcm_pw\npassword=${PASSWORD}\n`, { mode: 0o600 });
        return { db: 'postgresql://?service=fleet', env: { PGSERVICEFILE: file }, shown: 'postgresql://?service=fleet' };
      },
    ],
    ['the address', (d) => ({ db: d.tcp.replace('dcm_pw@', `dcm_pw:${encodeURIComponent(PASSWORD)}@`), env: {}, shown: d.tcp })],
  ];

  test.each(ways)('%s: two workers on two hosts claim and end every run; the password reaches no run; no warning', async (_way, make) => {
    f = execFixture();
    const fx = f;
    const d = database();
    // HOME apart: no ~/.pgpass or ~/.pg_service.conf of the machine's takes part.
    const { db, env: given, shown } = make(d, fx.dir);
    const seen = path.join(fx.dir, 'seen');
    fs.mkdirSync(seen);
    const env = { ...fx.env, ...given, HOME: fx.dir, SEEN: seen };
    // Each run writes its environment and its argv (as /proc has them), then runs the fixture's step.
    const dump = 'd="$SEEN/$DCM_CLOUD.$DCM_STATE.$$"; env > "$d.env"; tr "\\0" "\\n" < /proc/$$/cmdline > "$d.argv"; exec "$0" "$@"';
    const yaml = `defaults: {env: {STEP_MIN_MS: "300", STEP_MAX_MS: "500"}}\nstates:\n  "*": ${JSON.stringify(['/bin/sh', '-c', dump, fx.step, '{cloud}', '{state}', '{db}'])}\n`;
    const ok = (args: string[]) => {
      const r = dcm(['--db', db, ...args], { env });
      expect([args[0], r.code, r.stderr]).toEqual([args[0], 0, '']);
    };
    ok(['subcloud', 'add', ...names(N)]);
    ok(['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '4', '--driver', 'exec', '--exec-config', fx.config(yaml), '--log-dir', path.join(fx.dir, 'logs')]);
    const a = worker(db, { ...env, DCM_HOST: 'host-a' });
    await waitFor(() => d.read<{ n: number }>('SELECT count(*) AS n FROM run_claim')[0].n > 0, 60_000, 50);
    const b = worker(db, { ...env, DCM_HOST: 'host-b' });
    const [endA, endB] = await Promise.all([a.done, b.done]);
    expect([endA.code, endA.stderr]).toEqual([0, '']);
    expect([endB.code, endB.stderr]).toEqual([0, '']);
    expect(d.read('SELECT state FROM strategy')).toEqual([{ state: 'complete' }]);
    // The runs' own log: every state of every site ran once, none overlapping another of its site.
    const runs = fx.readRuns();
    expect(runs).toHaveLength(N * 5);
    expect([...runsPerState(runs)].filter(([, k]) => k !== 1)).toEqual([]);
    expect(overlapsPerCloud(runs)).toEqual([]);
    // Every run was claimed by its host's launcher, both hosts' launchers claimed some, and each
    // launcher wrote its runs' ends.
    expect(d.read('SELECT host, count(*) AS n FROM run_claim GROUP BY host ORDER BY host').map((r) => (r as { host: string }).host)).toEqual(['host-a', 'host-b']);
    expect(d.read<{ n: number }>('SELECT count(*) AS n FROM run_claim')[0].n).toBe(N * 5);
    expect(d.read<{ n: number }>('SELECT count(*) AS n FROM run_end WHERE code = 0')[0].n).toBe(N * 5);
    // What each run saw: the database as `{db}` and DCM_DB without the password, and the password nowhere.
    const files = fs.readdirSync(seen);
    expect(files.filter((x) => x.endsWith('.env'))).toHaveLength(N * 5);
    expect(files.filter((x) => x.endsWith('.argv'))).toHaveLength(N * 5);
    for (const file of files) {
      const text = fs.readFileSync(path.join(seen, file), 'utf8');
      expect([file, text.includes(PASSWORD) || text.includes(encodeURIComponent(PASSWORD)) || /^PGPASSWORD=/m.test(text)]).toEqual([file, false]);
      if (file.endsWith('.env')) expect(text).toContain(`\nDCM_DB=${shown}\n`);
      else expect(text.trim().split('\n').at(-1)).toBe(shown);
    }
  }, 180_000);

  test('no password, a password file others may read, a wrong password: one line saying so, exit 1', () => {
    f = execFixture();
    const d = database();
    const home = { HOME: f.dir };
    const none = dcm(['--db', d.tcp, 'subcloud', 'list'], { env: home });
    expect([none.code, none.stdout]).toEqual([1, '']);
    expect(none.stderr).toBe(
      `error: cannot open database ${d.tcp}: the server asks for a password, and none was given (PGPASSWORD, PGPASSFILE or ~/.pgpass, a service file, or the address): there is no password file ${path.join(f.dir, '.pgpass')}\n`,
    );
    const file = path.join(f.dir, '.pgpass');
    fs.writeFileSync(file, `*:*:*:dcm_pw:${PASSWORD.replace(/[\\:]/g, (c) => `\\${c}`)}\n`, { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const open = dcm(['--db', d.tcp, 'subcloud', 'list'], { env: home });
    expect([open.code, open.stdout]).toEqual([1, '']);
    expect(open.stderr).toMatch(/: the password file .*\/\.pgpass has group or world access \(mode 0644\): libpq ignores such a file, and so does dcm; chmod 600 it\n$/);
    // Made private, the same file is read (~/.pgpass, HOME's).
    fs.chmodSync(file, 0o600);
    expect(dcm(['--db', d.tcp, 'subcloud', 'list', '-f', 'value'], { env: home })).toMatchObject({ code: 0, stderr: '' });
    const wrong = dcm(['--db', d.tcp, 'subcloud', 'list'], { env: { ...home, PGPASSWORD: 'not-it' } });
    expect([wrong.code, wrong.stderr]).toEqual([1, `error: cannot open database ${d.tcp}: password authentication failed for user "dcm_pw" (the password from PGPASSWORD)\n`]);
  }, 60_000);
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
