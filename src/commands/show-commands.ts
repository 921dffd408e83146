/**
 * `strategy create --dry-run --show-commands [CLOUD]`: instead of the plan, what each state's run
 * of one subcloud would be handed, as rows of state, name and value (argv[0], argv[1], …, cwd,
 * then each variable dcm adds to the environment), so that every format prints it whole.
 */
import { UsageError } from '../domain/errors.js';
import { ConfigBook } from '../domain/strategy-config.js';
import type { ExtraArgs } from '../domain/options.js';
import type { Plan } from '../domain/planning.js';
import type { StrategyType } from '../domain/types.js';
import type { loadPreview } from '../drivers/index.js';
import type { Db } from '../store/open.js';
import { subcloudById } from '../store/subclouds.js';
import { fieldTexts } from '../domain/fields.js';
import { readLabels } from '../domain/inventory.js';
import { getDefaultConfig, getSubcloudConfig } from '../store/strategy-config.js';
import { list, type ListResult, type Value } from './plain-results.js';

export const SHOW_COMMANDS_COLUMNS = ['state', 'name', 'value'];

/** The exec driver's preview, loaded before the dry run's read transaction. */
export type Preview = Awaited<ReturnType<typeof loadPreview>>;

/** `cloud`: a subcloud of the plan by name, or `true` for the plan's first. */
export async function showCommandsView(db: Db, plan: Plan, cloud: string | true, input: { type: StrategyType; extra: ExtraArgs; dbPath: string; preview: Preview }): Promise<ListResult> {
  const step = cloud === true ? plan.steps[0] : plan.steps.find((s) => s.name === cloud);
  if (!step) throw new UsageError(`--show-commands ${cloud}: the subcloud has no step in this plan`);
  const own = await getSubcloudConfig(db, step.subcloudId);
  // A planned step's subcloud is in the file the plan was read from, in this same transaction.
  const row = (await subcloudById(db, step.subcloudId))!;
  const options = new ConfigBook(await getDefaultConfig(db), own ? [[step.subcloudId, own]] : []).optionsFor(step.subcloudId);
  const runs = input.preview(input.extra, {
    cloud: step.name,
    type: input.type,
    stage: step.stage,
    subcloud: fieldTexts(row),
    labels: readLabels(row.labels),
    options,
    dbPath: input.dbPath,
  });
  const rows: Value[][] = runs.flatMap((r) => [
    ...r.argv.map((a, i): Value[] => [r.state, `argv[${i}]`, a]),
    [r.state, 'cwd', r.cwd],
    ...r.env.map(([k, v]): Value[] => [r.state, k, v]),
  ]);
  return list(SHOW_COMMANDS_COLUMNS, rows);
}
