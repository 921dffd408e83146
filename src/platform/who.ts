/**
 * Who acts, as the event record names them (`dcm strategy events`): the user (`$USER`, else the
 * effective user's name), this machine's name (`$DCM_HOST`, else the host name: containers often
 * share one, and the apply lock names hosts the same way) and the process.
 */
import os from 'node:os';

export interface Actor {
  user: string;
  host: string;
  pid: number;
}

export function hostName(env: NodeJS.ProcessEnv = process.env): string {
  return env.DCM_HOST || os.hostname();
}

function userName(env: NodeJS.ProcessEnv): string {
  if (env.USER) return env.USER;
  try {
    return os.userInfo().username;
  } catch {
    // A uid with no passwd entry (a container run as an arbitrary uid): the number still says who.
    return String(process.getuid?.() ?? 'unknown');
  }
}

export function whoAmI(env: NodeJS.ProcessEnv = process.env): Actor {
  return { user: userName(env), host: hostName(env), pid: process.pid };
}
