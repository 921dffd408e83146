/**
 * What a driver is handed for one operation: the subcloud, its state and attempt, whether its
 * last run was cut off, its retries so far, the fence its site may check, its options, and (read
 * only when the driver asks) its fields and labels; its abort signal, made when asked for.
 *
 * Owns: the subclouds' fields read for runs in flight, and which subclouds have a label the
 * driver reads. Never touches: the registry's map (it is handed the worker, and a lookup), the commit.
 */
import type { OperationRequest } from '../drivers/driver.js';
import { fieldTexts } from '../domain/fields.js';
import { visible } from '../domain/outside-text.js';
import { readLabels, type Labels } from '../domain/inventory.js';
import type { ExtraArgs } from '../domain/options.js';
import type { ConfigBook } from '../domain/strategy-config.js';
import type { StrategyType } from '../domain/types.js';
import type { CursorStep } from '../store/cursor.js';
import { subcloudById, subcloudsLabelled } from '../store/subclouds.js';
import type { Worker } from './registry.js';
import type { Runtime } from './runtime.js';
import type { RunProcess } from '../platform/proc.js';

/** The labels of a subcloud that has none the driver reads. */
const NO_LABELS: Labels = Object.freeze({});

type Fields = { fields: Record<string, string | null>; labels: Labels };

/** What a request says beside the worker's own data. */
export interface RunContext {
  type: StrategyType;
  states: readonly string[];
  campaign: string;
  extra: ExtraArgs;
  config: ConfigBook;
  resumed: boolean;
  failures: number;
  fence: string | undefined;
  /** The run began at its site: its process (null: none to record) is recorded with the next commit. */
  onStarted(proc: RunProcess | null): void;
  /** A progress line of the run (dropped once the run has ended). */
  onProgress(text: string): void;
}

export class RunRequests {
  /**
   * The subclouds with a label the driver reads (its `labelKeys`), read as the apply starts and on
   * resume: any other subcloud's labels are none, without a read of its row at its first state.
   * Null: the driver may read any label (from the row, as its fields).
   */
  private labelled: Set<number> | null = null;
  /** A subcloud's fields, read once per subcloud in flight rather than once per state. */
  private readonly fields = new Map<number, Fields>();

  constructor(private readonly rt: Runtime) {}

  async readLabelled(): Promise<void> {
    const keys = this.rt.driver.labelKeys;
    this.labelled = keys ? await subcloudsLabelled(this.rt.db, keys) : null;
  }

  /** The subcloud ended or let its slot go: its fields are read again next time. */
  forget(stepId: number): void {
    this.fields.delete(stepId);
  }

  /**
   * The request for the worker's run. A subcloud's fields are read before it (once per subcloud in
   * flight) when the driver may read them: a driver that names the labels it reads gets them read
   * only for a subcloud that has one, and no fields.
   */
  async request(worker: Worker, c: RunContext): Promise<OperationRequest> {
    const labelled = this.labelled;
    const id = worker.step.subcloudId;
    return new RunRequest(worker, c, labelled === null || labelled.has(id) ? await this.subcloudFields(worker.step) : null);
  }

  private async subcloudFields(step: CursorStep): Promise<Fields> {
    let f = this.fields.get(step.id);
    if (!f) {
      const row = await subcloudById(this.rt.db, step.subcloudId);
      // A step's subcloud cannot be deleted (subcloud delete refuses), so the row is there.
      f = row ? { fields: fieldTexts(row), labels: readLabels(row.labels) } : { fields: {}, labels: {} };
      this.fields.set(step.id, f);
    }
    return f;
  }
}

/**
 * One run's request: a class, so that its getters are the prototype's, not three closures made
 * for every run (with the request's own, a kilobyte of garbage a run, figure 1's GC).
 */
class RunRequest implements OperationRequest {
  readonly cloud: string;
  readonly type: StrategyType;
  readonly state: string;
  readonly stateIndex: number;
  readonly states: readonly string[];
  readonly attempt: number;
  readonly resumed: boolean;
  readonly failures: number;
  readonly stage: number;
  readonly campaign: string;
  readonly fence: string | undefined;
  readonly extra: ExtraArgs;
  readonly options: Readonly<Record<string, string | number>>;
  // Recorded by the next commit, in one transaction for all: until then the run's own pid file
  // beside its log tells a later apply where the run is.
  readonly onStarted: (proc: RunProcess | null) => void;
  readonly onProgress: (text: string) => void;
  // Private to the class (#): a driver that copies or prints the request never sees them.
  readonly #worker: Worker;
  readonly #read: Fields | null;

  constructor(worker: Worker, c: RunContext, read: Fields | null) {
    const { step, state } = worker;
    this.#worker = worker;
    this.#read = read;
    this.cloud = step.cloud;
    this.type = c.type;
    this.state = state;
    this.stateIndex = c.states.indexOf(state);
    this.states = c.states;
    this.attempt = worker.attempt;
    this.resumed = c.resumed;
    this.failures = c.failures;
    this.stage = step.stage;
    this.campaign = c.campaign;
    this.fence = c.fence;
    this.extra = c.extra;
    this.options = c.config.optionsFor(step.subcloudId);
    this.onStarted = c.onStarted;
    // Outside text (the site's script wrote it), escaped as every driver's words are (drivers/visible.ts).
    const progress = c.onProgress;
    this.onProgress = (text) => progress(visible(text));
  }

  // Read from the store only by a driver that asks (exec's placeholders; the sim, for its
  // sim_unreachable label, at a step's first state, only for a subcloud that has it), once per
  // subcloud in flight.
  get subcloud(): Record<string, string | null> {
    // A driver with `labelKeys` reads no fields (the sim reads its label only).
    if (!this.#read) throw new Error(`the fields of ${this.cloud} were not read: its driver names the labels it reads (labelKeys)`);
    return this.#read.fields;
  }

  get labels(): Labels {
    return this.#read ? this.#read.labels : NO_LABELS;
  }

  get signal(): AbortSignal {
    const worker = this.#worker;
    if (!worker.controller) {
      worker.controller = new AbortController();
      if (worker.abandoned) worker.controller.abort();
    }
    return worker.controller.signal;
  }
}
