/**
 * The PostgreSQL pass of the suite (jest.pg.config.js): one throw-away cluster for the whole run,
 * its address handed to every test process as DCM_TEST_PG_URL; test/helpers/cli.ts's tempDir then
 * gives each test a database of its own on it instead of a file.
 *
 * The cluster: initdb in a temporary folder, a server on a Unix socket in that folder only (no TCP
 * port), trust authentication for one superuser, stopped and removed at the end. (A test that
 * needs a server asking for passwords starts one of its own: startCluster's `passwords`.) As root (CI), the
 * server runs as the `postgres` user that Debian's package creates, since PostgreSQL refuses to
 * run as root. (All in this one module: jest loads a global setup without the suite's module map.)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface Cluster {
  /** The superuser's address of the `postgres` database. */
  url: string;
  dir: string;
  /** A crash and a start again (`pg_ctl restart -m immediate`): every session is cut. */
  restart: () => void;
  /** The server shuts down (`pg_ctl stop -m fast`: every session is told "terminating connection due to administrator command"), its data kept. */
  down: () => void;
  /** The server starts again after `down`, with the options of its first start. */
  up: () => void;
  stop: () => void;
}

/** Where initdb and pg_ctl are: PG_BINDIR, else pg_config's, else Debian's newest. */
export function pgBinDir(): string | null {
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR;
  const r = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const fromConfig = r.status === 0 ? r.stdout.trim() : '';
  if (fromConfig && fs.existsSync(path.join(fromConfig, 'initdb'))) return fromConfig;
  const debian = '/usr/lib/postgresql';
  if (!fs.existsSync(debian)) return null;
  const versions = fs.readdirSync(debian).filter((v) => fs.existsSync(path.join(debian, v, 'bin', 'initdb')));
  versions.sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(debian, versions[0], 'bin') : null;
}

/**
 * `passwords`: the cluster asks for a password over TCP, as a production server does: a listener
 * on 127.0.0.1 at that port (the socket's port too), SCRAM-SHA-256 for every TCP connection
 * (initdb's pg_hba.conf: `host all all 127.0.0.1/32 scram-sha-256`), trust on the socket only.
 */
export function startCluster(opts: { passwords?: { port: number } } = {}): Cluster {
  const bin = pgBinDir();
  if (!bin) throw new Error('PostgreSQL server binaries not found (install Debian\'s postgresql; .ci/run does)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-pg-'));
  const asRoot = process.getuid?.() === 0;
  // Run as postgres when root: the folder is theirs, the commands through setpriv.
  const run = (cmd: string, args: string[]) => {
    const argv = asRoot ? ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--', cmd, ...args] : [cmd, ...args];
    execFileSync(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
  };
  if (asRoot) execFileSync('chown', ['postgres:postgres', dir]);
  const data = path.join(dir, 'data');
  const port = String(opts.passwords?.port ?? 20000 + (process.pid % 20000));
  const auth = opts.passwords ? ['--auth-local=trust', '--auth-host=scram-sha-256'] : ['-A', 'trust'];
  run(path.join(bin, 'initdb'), ['-D', data, '-U', 'dcm_test', ...auth, '--locale=C', '-E', 'UTF8', '--no-sync']);
  const listen = opts.passwords ? '-c listen_addresses=127.0.0.1 -c password_encryption=scram-sha-256' : '-c listen_addresses=';
  // fsync off: a test cluster needs no durability against power loss, and a busy CI disk is slow.
  const start = () => run(path.join(bin, 'pg_ctl'), [
    '-D', data, '-l', path.join(dir, 'server.log'), '-w', '-t', '60',
    '-o', `-k ${dir} -p ${port} ${listen} -c fsync=off -c max_connections=300`,
    'start',
  ]);
  start();
  const url = `postgresql://dcm_test@/postgres?host=${encodeURIComponent(dir)}&port=${port}`;
  return {
    url,
    dir,
    // The options of the first start are kept (postmaster.opts); immediate: a crash, then recovery.
    restart: () => run(path.join(bin, 'pg_ctl'), ['-D', data, '-l', path.join(dir, 'server.log'), '-m', 'immediate', '-w', '-t', '60', 'restart']),
    down: () => run(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']),
    up: start,
    stop: () => {
      try {
        run(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}


declare global {
  var dcmPgCluster: Cluster | undefined;
}

export default function setup(): void {
  if (process.env.DCM_TEST_PG_URL) return; // a server of the caller's
  const cluster = startCluster();
  globalThis.dcmPgCluster = cluster;
  process.env.DCM_TEST_PG_URL = cluster.url;
}
