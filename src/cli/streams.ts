/**
 * Closed and full output streams (SPEC §2.1 "Closed pipes"). A reader whose stdout is closed
 * (`dcm strategy-step list | head -1`) stops quietly; a closed or full stderr (`2>&1 | head -2`,
 * `2>/dev/full`) drops what is written there and nothing else, so an apply goes on to its end and
 * exits with the strategy's code. Without this, Node turns the EPIPE/ENOSPC of a write into an
 * unhandled 'error' event (or a synchronous throw, for a file or device), and the process dies
 * with a stack trace in the middle of whatever it was doing.
 */

export interface GuardedStream {
  /** True once a write failed: nothing more is written to it. */
  readonly closed: boolean;
  /** Why, when it was not the reader going away (EPIPE): ENOSPC, EIO… */
  readonly failure: string | null;
}

type State = { closed: boolean; failure: string | null };

const guarded = new WeakMap<NodeJS.WritableStream, GuardedStream>();

function fail(state: State, err: unknown): void {
  state.closed = true;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  // EPIPE: the reader went away (head -1), which is no failure of ours.
  if (code !== 'EPIPE' && code !== 'ERR_STREAM_DESTROYED' && state.failure === null) {
    state.failure = code ?? String((err as Error)?.message ?? err);
  }
}

/**
 * Make `stream` never throw and never emit an unhandled error: the first failure marks it closed,
 * and later writes are dropped (they report success, so nobody waits for a 'drain' that will not
 * come). Idempotent.
 */
export function guardStream(stream: NodeJS.WritableStream): GuardedStream {
  const known = guarded.get(stream);
  if (known) return known;
  const state: State = { closed: false, failure: null };
  stream.on('error', (err) => fail(state, err));
  // A pipe Node closed itself (its reader went away) ends without an error: closed all the same.
  stream.on('close', () => {
    state.closed = true;
  });
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  stream.write = ((...args: unknown[]) => {
    const cb = args.find((a) => typeof a === 'function') as ((err?: Error | null) => void) | undefined;
    if (state.closed) {
      if (cb) process.nextTick(cb, null);
      return true;
    }
    try {
      return write(...args);
    } catch (err) {
      // A file or device (2>/dev/full) is written synchronously and throws.
      fail(state, err);
      if (cb) process.nextTick(cb, null);
      return true;
    }
  }) as typeof stream.write;
  const view: GuardedStream = {
    get closed() {
      return state.closed;
    },
    get failure() {
      return state.failure;
    },
  };
  guarded.set(stream, view);
  return view;
}

/** The process's own streams, once, at start (bin/dcm.js). */
export function guardProcessStreams(): { stdout: GuardedStream; stderr: GuardedStream } {
  return { stdout: guardStream(process.stdout), stderr: guardStream(process.stderr) };
}

/** Whether `stream` (guarded) failed or was closed by its reader: a long output should stop. */
export function streamClosed(stream: NodeJS.WritableStream): boolean {
  return guarded.get(stream)?.closed ?? false;
}

/**
 * Write `chunks` to `out` one by one, waiting for room when it is full, and stop reading them
 * (which lets go of what produces them: a list's file) once the reader has gone (`| head -1`) or a
 * write failed (`> /dev/full`). Between pieces the event loop turns, so that the error a write
 * met is known before the next piece is made.
 */
export async function writeChunks(out: NodeJS.WritableStream, chunks: AsyncIterable<string> | Iterable<string>): Promise<void> {
  for await (const chunk of chunks) {
    if (streamClosed(out)) return;
    if (!out.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          out.off('drain', done);
          out.off('close', done);
          out.off('error', done);
          resolve();
        };
        out.once('drain', done);
        out.once('close', done);
        out.once('error', done);
      });
    } else {
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (streamClosed(out)) return;
  }
}

/**
 * The exit code once the command is done: a result that could not be written because stdout is
 * full or broken (`> /dev/full`) is a failure, said on stderr, as coreutils do; a reader that went
 * away is not.
 */
export function finalExitCode(code: number, out: GuardedStream, err: NodeJS.WritableStream = process.stderr): number {
  if (code !== 0 || out.failure === null) return code;
  err.write(`error: cannot write the output (${out.failure})\n`);
  return 1;
}
