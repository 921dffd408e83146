/** SQL shared by the baselines and the bench (dcm's schema, store/migrations.ts). */

/** What `dcm strategy-step list` shows: strategy_step joined to subcloud, in step order. */
export const STEP_QUERY = `SELECT sc.name AS cloud, st.stage, st.state, st.details, st.started_at, st.finished_at
  FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id ORDER BY st.stage, st.id`;
