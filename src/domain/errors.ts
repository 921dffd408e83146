/**
 * Typed errors carrying the process exit code (SPEC §8). Code throws these; the CLI's single exit
 * point turns them into one `error: <message>` line and `process.exitCode`.
 */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  aborted: 3,
  locked: 4,
  /** The strategy ended complete, but the audit after a site's last state disagreed (or did not answer): issue 49. */
  auditDisagrees: 5,
  sigint: 130,
  sigterm: 143,
} as const;

export class DcmError extends Error {
  /** Said on stderr (`warning: …`) before the error's one line: what explains it (issue 49: who create left out). */
  readonly warnings: string[] = [];

  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
    this.name = 'DcmError';
  }
}

/** Bad command line: unknown option, bad option value, options that exclude each other (exit 2). */
export class UsageError extends DcmError {
  constructor(message: string) {
    super(message, EXIT.usage);
    this.name = 'UsageError';
  }
}

/**
 * Bad input that dcmanager's client does not refuse as a usage error: a check it makes itself
 * (options that exclude each other, a required type option, an unknown -c column), or a value it
 * passes on for the server to refuse (a group's window). The client exits 1 on them, and a script
 * that tells them apart by the exit code sees the same code from dcm. Nothing is changed.
 */
export class ClientCheckError extends DcmError {
  constructor(message: string) {
    super(message, EXIT.failed);
    this.name = 'ClientCheckError';
  }
}

/** The operation cannot be done: not found, wrong state, bad file (exit 1). */
export class OperationError extends DcmError {
  constructor(message: string) {
    super(message, EXIT.failed);
    this.name = 'OperationError';
  }
}
