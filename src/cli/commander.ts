/** commander, loaded through require (see platform/cjs.ts for why); its types as usual. */
import type * as C from 'commander';
import { requireCjs } from '../platform/cjs.js';

const lib = requireCjs('commander') as typeof C;

export const Command = lib.Command;
export type Command = C.Command;
export const CommanderError = lib.CommanderError;
export type CommanderError = C.CommanderError;
export const Option = lib.Option;
export type Option = C.Option;
export const Argument = lib.Argument;
export type Argument = C.Argument;
export const InvalidArgumentError = lib.InvalidArgumentError;
export type InvalidArgumentError = C.InvalidArgumentError;
