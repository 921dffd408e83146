/**
 * dcmanager's CLI confirmation: with CLI_CONFIRMATIONS=enabled, a high-risk command (apply,
 * delete) without `--yes` asks "yes/No" on a terminal; off a terminal there is no one to ask, so
 * it is refused (exit 1) and says to give --yes.
 */
import { OperationError } from '../domain/errors.js';

export interface ConfirmIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
}

/** The help of `--yes`, on every command where dcmanager's client confirms. */
export const YES_HELP = 'skip confirmation and proceed with the action (CLI_CONFIRMATIONS=enabled)';

const PROMPT =
  '\x1b[1m\x1b[93mWARNING: This is a high-risk operation that may cause service interruption or remove critical resources.\x1b[0m\n' +
  '\x1b[1m\x1b[93mDo you want to continue? (yes/No): \x1b[0m';

function readLine(stdin: NodeJS.ReadableStream): Promise<string | null> {
  return new Promise((resolve) => {
    let text = '';
    const done = (line: string | null) => {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.pause();
      resolve(line);
    };
    const onData = (chunk: Buffer | string) => {
      text += chunk.toString();
      const nl = text.indexOf('\n');
      if (nl >= 0) done(text.slice(0, nl).replace(/\r$/, ''));
    };
    const onEnd = () => done(text || null);
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.resume();
  });
}

export async function confirmIfRequired(yes: boolean | undefined, io: ConfirmIo, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (yes || env.CLI_CONFIRMATIONS !== 'enabled') return;
  if (!io.stdin.isTTY) {
    throw new OperationError('CLI_CONFIRMATIONS is enabled and there is no terminal to confirm on: give --yes to proceed');
  }
  io.stderr.write(PROMPT);
  const answer = await readLine(io.stdin);
  if (!answer || answer.toLowerCase() !== 'yes') throw new OperationError('Operation cancelled by the user.');
}
