/**
 * Where `strategy create` gets the subclouds' sysadmin password (prestage, and sw-deploy with
 * --with-prestage), so that it need not be on the command line, where every user of the machine
 * reads it in /proc/<pid>/cmdline: `--sysadmin-password-file FILE`, else `$DCM_SYSADMIN_PASSWORD`,
 * else asked on the terminal (never echoed) as dcmanager's client asks. `--sysadmin-password`
 * given without a value asks too. Off a terminal with no password given, the strategy is created
 * without one, as before.
 */
import { UsageError } from '../domain/errors.js';
import { typeOptionFlags } from '../domain/options.js';
import type { StrategyType } from '../domain/types.js';
import { readRegularFile } from '../platform/files.js';
import { askSecret, canAsk, type SecretIo } from './secret.js';

export interface PasswordInput {
  type: StrategyType;
  /** The option's value; `true` when given without one. */
  option?: string | boolean;
  file?: string;
  withPrestage?: boolean;
  dryRun?: boolean;
}

const PROMPT = 'Enter the sysadmin password for the subcloud: ';
const CONFIRM = 'Re-enter sysadmin password to confirm: ';
const TRIES = 3;

/** The file's text without its trailing newline; a regular file only (a FIFO would hang the read). */
function passwordFromFile(file: string): string {
  const text = readRegularFile(file, 64 * 1024, (why) => {
    throw new UsageError(`cannot read sysadmin password file ${file}: ${why}`);
  }).replace(/\r?\n$/, '');
  if (text === '') throw new UsageError(`sysadmin password file ${file} is empty`);
  return text;
}

async function ask(io: SecretIo): Promise<string> {
  for (let i = 0; i < TRIES; i++) {
    const first = await askSecret(io, PROMPT);
    if (first === null) break;
    if (first === '') {
      io.stderr.write('Password cannot be empty\n');
      continue;
    }
    const again = await askSecret(io, CONFIRM);
    if (again === first) return first;
    io.stderr.write('Passwords did not match\n');
  }
  throw new UsageError('no sysadmin password was entered');
}

/**
 * The password to store, `true` to let the type's checks refuse a value-less option where no
 * password is taken, or undefined for none.
 */
export async function sysadminPassword(input: PasswordInput, io: SecretIo, env: NodeJS.ProcessEnv = process.env): Promise<string | boolean | undefined> {
  const takes = typeOptionFlags(input.type).includes('--sysadmin-password');
  if (input.file !== undefined) {
    if (!takes) throw new UsageError(`--sysadmin-password-file is not an option of strategy type ${input.type}`);
    if (input.type === 'sw-deploy' && !input.withPrestage) throw new UsageError('--sysadmin-password-file can only be used with --with-prestage');
    if (typeof input.option === 'string') throw new UsageError('--sysadmin-password cannot be used with --sysadmin-password-file');
  }
  // The type's own checks say what is wrong with the option here.
  if (!takes) return input.option;
  if (typeof input.option === 'string') return input.option;
  if (input.file !== undefined) return passwordFromFile(input.file);
  // A dry run stores nothing: there is nothing to ask for.
  if (input.dryRun) return undefined;
  const needed = input.type === 'prestage' || (input.type === 'sw-deploy' && input.withPrestage === true);
  if (input.option === true && !needed) return true; // sw-deploy without --with-prestage: refused there
  if (env.DCM_SYSADMIN_PASSWORD !== undefined) {
    if (env.DCM_SYSADMIN_PASSWORD === '') throw new UsageError('DCM_SYSADMIN_PASSWORD is empty: give the password, or unset it');
    return env.DCM_SYSADMIN_PASSWORD;
  }
  if (canAsk(io)) return ask(io);
  if (input.option === true) {
    throw new UsageError(
      '--sysadmin-password was given without a value and there is no terminal to ask on: use --sysadmin-password-file FILE or DCM_SYSADMIN_PASSWORD',
    );
  }
  return undefined;
}
