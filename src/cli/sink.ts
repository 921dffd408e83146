/**
 * Streamed output (`strategy-step logs`): written to stdout as it is read, with backpressure, and
 * stopped quietly when the reader goes away (`| head`).
 */
import type { LogSink } from '../commands/logs.js';

export function stdoutSink(out: NodeJS.WriteStream = process.stdout, err: NodeJS.WritableStream = process.stderr): LogSink {
  let closed = false;
  const waiting = new Set<(ok: boolean) => void>();
  const onError = () => {
    closed = true;
    for (const w of waiting) w(false);
    waiting.clear();
  };
  out.on('error', onError);
  return {
    write(chunk) {
      if (closed) return Promise.resolve(false);
      return new Promise((resolve) => {
        const ok = out.write(chunk, (e) => {
          if (e) onError();
        });
        if (ok) return resolve(!closed);
        waiting.add(resolve);
        out.once('drain', () => {
          waiting.delete(resolve);
          resolve(!closed);
        });
      });
    },
    note(text) {
      err.write(`dcm: ${text}\n`);
    },
  };
}
