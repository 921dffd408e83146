/**
 * Asking for a secret on the terminal, as Python's getpass does for dcmanager's client: the
 * prompt on stderr, the answer read from the terminal with echo off, so it is never shown nor
 * left in the scrollback. Ctrl-C stops the command (exit 130); Ctrl-D ends the answer.
 */
import { DcmError, EXIT } from '../domain/errors.js';

export interface SecretIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (on: boolean) => unknown };
  stderr: NodeJS.WritableStream;
}

/** Whether there is a terminal to ask on. */
export function canAsk(io: SecretIo): boolean {
  return io.stdin.isTTY === true && typeof io.stdin.setRawMode === 'function';
}

/** One answer, typed without echo; null when the input ended before any was given. */
export function askSecret(io: SecretIo, prompt: string): Promise<string | null> {
  const { stdin, stderr } = io;
  stderr.write(prompt);
  // Raw mode: the terminal neither echoes nor edits the line; this loop does the editing.
  stdin.setRawMode!(true);
  return new Promise((resolve, reject) => {
    let text = '';
    const finish = (answer: string | null, err?: Error) => {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.setRawMode!(false);
      stdin.pause();
      stderr.write('\n');
      if (err) reject(err);
      else resolve(answer);
    };
    const onData = (chunk: Buffer | string) => {
      for (const ch of chunk.toString()) {
        if (ch === '\r' || ch === '\n') return finish(text);
        if (ch === '\x03') return finish(null, new DcmError('interrupted at the password prompt', EXIT.sigint));
        if (ch === '\x04') return finish(text === '' ? null : text);
        if (ch === '\x7f' || ch === '\b') text = [...text].slice(0, -1).join('');
        else if (ch === '\x15') text = ''; // Ctrl-U
        else if (ch >= ' ') text += ch;
      }
    };
    const onEnd = () => finish(text === '' ? null : text);
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.resume();
  });
}
