/** `strategy create --probe`: the subclouds the plan takes, asked before anything is written. */
import { OperationError } from '../domain/errors.js';
import type { PlannedStep } from '../domain/planning.js';
import type { ExtraArgs } from '../domain/options.js';
import type { Db } from '../store/open.js';
import { findSubcloud, type SubcloudRow } from '../store/subclouds.js';
import { withReadDb, type Ctx } from './context.js';
import type { Probed } from './subcloud-probe.js';

/**
 * `strategy create --probe`: probe the subclouds the plan takes now. None silent: nothing to do.
 * Some silent: refused, naming them, unless `skip` (they are returned, to be recorded offline in the
 * create's own transaction, which then plans without them).
 */
export async function probeForCreate(
  ctx: Ctx,
  extra: ExtraArgs,
  plan: (db: Db) => Promise<{ steps: readonly PlannedStep[] }>,
  skip: boolean,
  warn?: (text: string) => void,
): Promise<Probed[]> {
  const rows = await withReadDb(ctx, [] as SubcloudRow[], async (db) =>
    await db
      .transaction(async (tx) => {
        const out: SubcloudRow[] = [];
        for (const st of (await plan(tx)).steps) out.push((await findSubcloud(tx, st.name))!);
        return out;
      })
      .deferred(),
  );
  const [{ proberOfStrategy }, { probeRows, DEFAULT_PROBE_PARALLEL }] = await Promise.all([import('../drivers/probe.js'), import('./subcloud-probe.js')]);
  const probed = await probeRows(await proberOfStrategy(extra, ctx.dbPath), rows, DEFAULT_PROBE_PARALLEL);
  const silent = probed.filter((p) => !p.result.answered);
  if (silent.length === 0) return [];
  const named = silent.map((p) => `${p.name} (${p.result.detail || 'no answer'})`).join(', ');
  if (!skip) {
    throw new OperationError(`${silent.length} subcloud(s) did not answer the probe: ${named}; nothing created (--skip-unreachable leaves them out)`);
  }
  warn?.(`left out ${silent.length} subcloud(s) that did not answer the probe (recorded offline): ${named}`);
  return silent;
}
