/**
 * docs/guide/first-real-rollout.md runs as a reader runs it (test/helpers/docs.ts): it starts its
 * own sshd sites on 127.0.0.1, rolls a patch out over ssh, a kubernetes upgrade past a site that
 * never answers, and a custom strategy with Ansible, then stops the sites. The ports are free ones
 * picked here (the page's defaults may be taken on a busy machine). Then the sites' own logs are
 * judged: every state once on each site, in order. Skipped, saying why, only where sshd cannot run
 * (as test/e2e/exec-ssh.test.ts); Ansible missing fails, as there.
 */
import { describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { statesOf } from '../../src/domain/types.js';
import { ROOT } from '../helpers/cli.js';
import { failure, runBlocks, runnableBlocks } from '../helpers/docs.js';

const PAGE = path.join(ROOT, 'docs', 'guide', 'first-real-rollout.md');
const sshd = fs.existsSync('/usr/sbin/sshd') && spawnSync('sh', ['-c', 'command -v ssh && command -v ssh-keygen']).status === 0;
if (!sshd) console.warn('first-real-rollout page skipped: /usr/sbin/sshd, ssh or ssh-keygen is missing (apt-get install -y openssh-server, as .ci/run does)');
const maybe = sshd ? describe : describe.skip;

async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<net.Server>((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

maybe('the first real rollout, as the guide says it', () => {
  test('over ssh, past a site that never answers, and with Ansible, on sshd sites it starts itself', async () => {
    if (spawnSync('sh', ['-c', 'command -v ansible-playbook']).status !== 0) {
      throw new Error('ansible-playbook is not installed: apt-get install -y ansible-core (as .ci/run does)');
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-guide-ssh-'));
    try {
      const ports = await freePorts(4);
      const run = await runBlocks(runnableBlocks(PAGE), dir, { PORTS: ports.slice(0, 3).join(' '), SILENT_PORT: String(ports[3]) });
      if (run.code !== 0) throw new Error(failure(run));
      // Each site's own log: the patch's states, then the kubernetes states, then the custom ones,
      // each once and in order; the silent site was never reached.
      const expected = [...statesOf('patch'), ...statesOf('kubernetes'), 'update'];
      for (const port of ports.slice(0, 3)) {
        expect(fs.readFileSync(path.join(dir, 'sites', `site-${port}.log`), 'utf8').trim().split('\n')).toEqual(expected);
      }
      expect(fs.existsSync(path.join(dir, 'sites', `site-${ports[3]}.log`))).toBe(false);
      // The page stops what it started (its sshd, its silent site).
      expect(run.leftovers).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
