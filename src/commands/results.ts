/**
 * What commands return: typed records, never display rows. How each is printed (columns, their
 * order, cliff's formats) is the CLI's business (src/cli/output/views.ts).
 */
import type { GroupRow } from '../store/groups.js';
import type { HistoryRow, StepRow } from '../store/steps.js';
import type { Strategy } from '../store/strategy.js';
import type { SubcloudRow } from '../store/subclouds.js';

export type { GroupRow, HistoryRow, StepRow, Strategy, SubcloudRow };

/** A group; `created_at` is null only for the Default of a file not created yet. */
export type GroupRecord = Omit<GroupRow, 'created_at'> & { created_at: string | null };

/** One line of `strategy-step list`: cloud, stage, state, details, started_at, finished_at. */
export type StepLine = [string, number, string, string, string | null, string | null];

/**
 * Rows read from the file as they are printed (a list command's result): iterating opens the file,
 * yields each row and closes it; the CLI may stream them to stdout or gather them (to sort, or to
 * size a table's columns). A list of 100,000 rows then never lives in memory at once.
 */
export interface RowStream<T> extends AsyncIterable<T> {
  readonly streamed: true;
}

export function isRowStream<T>(rows: readonly T[] | RowStream<T>): rows is RowStream<T> {
  return !Array.isArray(rows);
}

export type CommandResult =
  /** `subcloud list` (and add, update of several): `detail` asks for every column. */
  | { kind: 'subclouds'; rows: SubcloudRow[] | RowStream<SubcloudRow>; detail: boolean }
  /** `subcloud-group list-subclouds`: dcmanager prints the detail columns. */
  | { kind: 'group-subclouds'; rows: SubcloudRow[] }
  /**
   * One subcloud. `reply` for the commands whose record is the server's reply to a change rather
   * than a show (manage, unmanage, prestage): only the fields that reply holds, and for prestage
   * its `prestage_software_version` (null when no release was given).
   */
  | { kind: 'subcloud'; row: SubcloudRow; detail: boolean; reply?: { prestageSoftwareVersion?: string | null } }
  | { kind: 'groups'; rows: GroupRecord[] }
  | { kind: 'group'; row: GroupRecord }
  | { kind: 'strategy'; strategy: Strategy }
  | { kind: 'steps'; rows: StepLine[] | RowStream<StepLine> }
  | { kind: 'step'; row: StepRow }
  | { kind: 'history'; rows: HistoryRow[] }
  | { kind: 'imported'; count: number }
  /** Nothing to print (`subcloud delete`, `subcloud-group delete`, as dcmanager). */
  | { kind: 'nothing' };

/** Anything a command may hand the CLI to print: a typed record, or a plain table. */
export type Printable = CommandResult | import('./plain-results.js').Result;

/** A command's answer: what to print, and the exit code when it is not 0. */
export interface Outcome {
  result?: Printable;
  /** Text printed as it is (a completion script), instead of a rendered result. */
  text?: string;
  exitCode?: number;
  /** Said on stderr (`warning: …`) once the command has succeeded. */
  warnings?: string[];
  /** What the command did beyond its record, said on stderr as it is (unless -q), so stdout keeps its format. */
  notes?: string[];
  /** A `--watch` command: draws frames until it returns its exit code (cli/watch.ts). */
  watch?: (emit: (r: Printable) => Promise<boolean>) => Promise<number>;
}
