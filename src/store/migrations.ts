/**
 * Schema, as forward migrations indexed by the version they start from. `PRAGMA user_version`
 * holds the version; `PRAGMA application_id` marks the file as dcm's.
 */
import Database from 'better-sqlite3';
import { sitesFileOf } from '../platform/sites-file.js';
import { nowMicros } from './clock.js';
import { formatTimestamp } from '../domain/time.js';
import type { Clock } from '../platform/clock.js';

/** "DCM1" as a 32-bit integer: tells a dcm file from any other SQLite file. */
export const APPLICATION_ID = 0x44434d31;

/** Version 13 -> 14 (store/pg/schema.ts has PostgreSQL's). */
export const WORKERS_MIGRATION = `
  CREATE TABLE apply_worker (
    id INTEGER PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    proc_start TEXT,
    token TEXT NOT NULL UNIQUE,
    started_at TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    heartbeat_ms BIGINT NOT NULL,
    lease_ms INTEGER NOT NULL,
    max_local INTEGER,
    done INTEGER NOT NULL DEFAULT 0
  );
  ALTER TABLE strategy_step ADD COLUMN owner INTEGER;
  ALTER TABLE strategy_step ADD COLUMN fence INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE step_history ADD COLUMN host TEXT;
  CREATE INDEX strategy_step_owner_idx ON strategy_step(owner) WHERE owner IS NOT NULL;
  UPDATE step_history SET outcome = 'interrupted', details = 'closed by the upgrade to one running operation per step'
    WHERE outcome = 'running' AND id NOT IN (SELECT max(id) FROM step_history WHERE outcome = 'running' GROUP BY step_id);
  CREATE UNIQUE INDEX step_history_one_running ON step_history(step_id) WHERE outcome = 'running';
`;

export const MIGRATIONS: ((db: Database.Database, clock: Clock) => void)[] = [
  // 0 -> 1
  (db, clock) => {
    db.exec(`
      CREATE TABLE subcloud_group (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        description TEXT,
        update_apply_type TEXT NOT NULL CHECK (update_apply_type IN ('parallel','serial')),
        max_parallel_subclouds INTEGER NOT NULL CHECK (max_parallel_subclouds BETWEEN 1 AND 5000),
        created_at TEXT NOT NULL,
        updated_at TEXT
      );
      CREATE TABLE subcloud (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        description TEXT,
        location TEXT,
        group_id INTEGER NOT NULL REFERENCES subcloud_group(id),
        management TEXT NOT NULL CHECK (management IN ('managed','unmanaged')),
        availability TEXT NOT NULL CHECK (availability IN ('online','offline')),
        deploy_status TEXT NOT NULL,
        software_version TEXT,
        prestage_status TEXT,
        patching_sync TEXT NOT NULL,
        usm_sync TEXT NOT NULL,
        kubernetes_sync TEXT NOT NULL,
        kube_rootca_sync TEXT NOT NULL,
        firmware_sync TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT
      );
      CREATE INDEX subcloud_group_idx ON subcloud(group_id, id);
      -- At most one strategy at a time (as in dcmanager): its id is always 1.
      CREATE TABLE strategy (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        type TEXT NOT NULL,
        subcloud_apply_type TEXT,
        max_parallel_subclouds INTEGER,
        stop_on_failure INTEGER NOT NULL,
        state TEXT NOT NULL,
        extra_args TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT
      );
      -- The window of each stage, fixed at create time so apply and resume agree.
      CREATE TABLE strategy_stage (
        stage INTEGER PRIMARY KEY,
        strategy_id INTEGER NOT NULL REFERENCES strategy(id) ON DELETE CASCADE,
        max_parallel INTEGER NOT NULL,
        group_name TEXT
      );
      CREATE TABLE strategy_step (
        id INTEGER PRIMARY KEY,
        strategy_id INTEGER NOT NULL REFERENCES strategy(id) ON DELETE CASCADE,
        subcloud_id INTEGER NOT NULL UNIQUE REFERENCES subcloud(id),
        stage INTEGER NOT NULL,
        state TEXT NOT NULL,
        details TEXT NOT NULL DEFAULT '',
        started_at TEXT,
        finished_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT,
        attempt INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX strategy_step_stage_idx ON strategy_step(stage, id);
      CREATE TABLE step_history (
        id INTEGER PRIMARY KEY,
        step_id INTEGER NOT NULL REFERENCES strategy_step(id) ON DELETE CASCADE,
        state TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        outcome TEXT NOT NULL CHECK (outcome IN ('ok','failed','skipped','timeout','interrupted','running')),
        details TEXT NOT NULL DEFAULT ''
      );
      CREATE INDEX step_history_step_idx ON step_history(step_id, id);
      CREATE INDEX step_history_running_idx ON step_history(outcome) WHERE outcome = 'running';
      CREATE TABLE apply_lock (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        started_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL,
        heartbeat_ms INTEGER NOT NULL
      );
      -- The simulated subclouds' own side of an update (drivers/sim), kept apart from the steps.
      CREATE TABLE sim_site (
        name TEXT PRIMARY KEY,
        campaign TEXT NOT NULL,
        done INTEGER NOT NULL,
        vim TEXT NOT NULL,
        busy_state TEXT,
        busy_owner TEXT
      );
    `);
    db.prepare(
      `INSERT INTO subcloud_group (id, name, description, update_apply_type, max_parallel_subclouds, created_at)
       VALUES (1, 'Default', 'Default Subcloud Group', 'parallel', 2, ?)`,
    ).run(formatTimestamp(nowMicros(clock)));
  },
  // 1 -> 2: the apply lock is a fencing token (SPEC §2.1). Every orchestrator write checks that the
  // token is still the lock's; the holder's process start time tells a live pid from a reused one.
  (db) => {
    db.exec(`
      ALTER TABLE apply_lock ADD COLUMN token TEXT NOT NULL DEFAULT '';
      ALTER TABLE apply_lock ADD COLUMN proc_start TEXT;
    `);
  },
  // 2 -> 3: strategy config (dcmanager's sw-update-options), and what the simulator was given
  (db) => {
    db.exec(`
      -- The default row (dcmanager's sw_update_opts_default). Seeded without timestamps, as
      -- dcmanager's own migration does; 'strategy-config delete RegionOne' removes it, and the
      -- built-in defaults apply until the next update creates it again.
      CREATE TABLE strategy_config_default (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        storage_apply_type TEXT NOT NULL CHECK (storage_apply_type IN ('parallel','serial')),
        worker_apply_type TEXT NOT NULL CHECK (worker_apply_type IN ('parallel','serial')),
        max_parallel_workers INTEGER NOT NULL,
        alarm_restriction_type TEXT NOT NULL CHECK (alarm_restriction_type IN ('strict','relaxed')),
        default_instance_action TEXT NOT NULL CHECK (default_instance_action IN ('stop-start','migrate')),
        created_at TEXT,
        updated_at TEXT
      );
      -- A subcloud's own options (dcmanager's sw_update_opts): removed with the subcloud.
      CREATE TABLE strategy_config (
        subcloud_id INTEGER PRIMARY KEY REFERENCES subcloud(id) ON DELETE CASCADE,
        storage_apply_type TEXT NOT NULL CHECK (storage_apply_type IN ('parallel','serial')),
        worker_apply_type TEXT NOT NULL CHECK (worker_apply_type IN ('parallel','serial')),
        max_parallel_workers INTEGER NOT NULL,
        alarm_restriction_type TEXT NOT NULL CHECK (alarm_restriction_type IN ('strict','relaxed')),
        default_instance_action TEXT NOT NULL CHECK (default_instance_action IN ('stop-start','migrate')),
        created_at TEXT NOT NULL,
        updated_at TEXT
      );
      INSERT INTO strategy_config_default
        (id, storage_apply_type, worker_apply_type, max_parallel_workers, alarm_restriction_type, default_instance_action)
        VALUES (1, 'parallel', 'parallel', 10, 'relaxed', 'stop-start');
      -- The strategy-config options the simulated subcloud last received (JSON), for tests to see.
      ALTER TABLE sim_site ADD COLUMN options TEXT;
    `);
  },
  // 3 -> 4: Fields dcmanager's client shows that dcm keeps without acting on them (`subcloud show`, the
  // detail lists): null until given.
  (db) => {
    for (const col of [
      'management_subnet', 'management_start_ip', 'management_end_ip', 'management_gateway_ip',
      'systemcontroller_gateway_ip', 'peer_group_id INTEGER', 'backup_status', 'backup_datetime',
      'prestage_versions', 'region_name', 'oam_floating_ip', 'deploy_config_sync_status',
    ]) {
      db.exec(`ALTER TABLE subcloud ADD COLUMN ${col.includes(' ') ? col : `${col} TEXT`}`);
    }
  },
  // 4 -> 5: per-state duration statistics per strategy type, for estimates (ETA, dry run). No foreign key:
  // they outlive `strategy delete`, so the next strategy of the same type starts with an estimate.
  (db) => {
    db.exec(`
      CREATE TABLE state_duration (
        type TEXT NOT NULL,
        state TEXT NOT NULL,
        count INTEGER NOT NULL,
        sum_ms REAL NOT NULL,
        sumsq_ms REAL NOT NULL,
        min_ms REAL NOT NULL,
        max_ms REAL NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (type, state)
      );
    `);
  },
  // 5 -> 6: exec driver: the process a run started, recorded as soon as it exists, so that a later apply
  // can tell whether a run left `running` by a killed dcm is still going (SPEC §7.2).
  (db) => {
    db.exec(`
      ALTER TABLE step_history ADD COLUMN pid INTEGER;
      ALTER TABLE step_history ADD COLUMN pgid INTEGER;
      ALTER TABLE step_history ADD COLUMN proc_start INTEGER;
    `);
  },
  // 6 -> 7: the failure budget (`--max-failures N|P%`, SPEC §4 "Control while applying"), as given:
  // null when none was (`stop_on_failure` then says whether it is 1).
  (db) => {
    db.exec(`ALTER TABLE strategy ADD COLUMN max_failures TEXT;`);
  },
  // 7 -> 8: the simulated sites leave the database for their own file (platform/sites-file.ts),
  // which only the sim driver opens: they are the far side of the wire, not dcm's data.
  (db) => moveSitesOut(db),
  // 8 -> 9: a run that failed and will run again records when its next attempt is due, so that the
  // retry budget and the backoff are read from the history and survive a kill -9 (SPEC §7.2).
  (db) => {
    db.exec(`ALTER TABLE step_history ADD COLUMN retry_at TEXT;`);
  },
  // 9 -> 10: free labels per subcloud (`--label k=v`), what a site's command needs that dcmanager has
  // no field for (a port, a jump host); they go with their subcloud.
  (db) => {
    db.exec(`
      CREATE TABLE subcloud_label (
        subcloud_id INTEGER NOT NULL REFERENCES subcloud(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (subcloud_id, key)
      ) WITHOUT ROWID;
    `);
  },
  // 10 -> 11: the strategy's event record (`dcm strategy events`): each operator action and
  // orchestrator event, with when and who. It belongs to the strategy and goes with it.
  (db) => {
    db.exec(`
      CREATE TABLE strategy_event (
        id INTEGER PRIMARY KEY,
        strategy_id INTEGER NOT NULL REFERENCES strategy(id) ON DELETE CASCADE,
        at TEXT NOT NULL,
        event TEXT NOT NULL,
        user TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        details TEXT NOT NULL DEFAULT ''
      );
    `);
  },
  // 11 -> 12: stage gates (README "Stage gates"): each stage's own failure budget and the gate
  // before the next stage, fixed at create (from the group's defaults or the create's options),
  // and the gate's outcome as it went, so that a restarted apply goes on where the gate was (a soak
  // waits only its rest). The groups' defaults sit in a table of their own: a group's record stays
  // dcmanager's.
  (db) => {
    db.exec(`
      ALTER TABLE strategy_stage ADD COLUMN max_failures TEXT;
      ALTER TABLE strategy_stage ADD COLUMN gate TEXT NOT NULL DEFAULT 'none';
      ALTER TABLE strategy_stage ADD COLUMN gate_check TEXT;
      ALTER TABLE strategy_stage ADD COLUMN gate_state TEXT;
      ALTER TABLE strategy_stage ADD COLUMN gate_reason TEXT;
      ALTER TABLE strategy_stage ADD COLUMN gate_at TEXT;
      ALTER TABLE strategy_stage ADD COLUMN gate_due_at TEXT;
      CREATE TABLE subcloud_group_gate (
        group_id INTEGER PRIMARY KEY REFERENCES subcloud_group(id) ON DELETE CASCADE,
        max_failures TEXT,
        gate TEXT
      );
    `);
  },
  // 12 -> 13: a group's maintenance window (`subcloud-group update --maintenance-window`), its text as
  // normalised by domain/maintenance.ts, and its IANA zone (none: UTC). A subcloud of the group
  // starts its first state only inside it.
  (db) => {
    db.exec(`
      ALTER TABLE subcloud_group ADD COLUMN maintenance_window TEXT;
      ALTER TABLE subcloud_group ADD COLUMN maintenance_tz TEXT;
    `);
  },
  // 13 -> 14: several orchestrators on one strategy (a PostgreSQL store; README "Several hosts").
  // Each is a row of apply_worker, holding a lease; a step names the worker that claimed it and
  // counts its claims (the fence its runs are given); a run's process names its host (its log is
  // there). One `running` operation per step at most is
  // the database's own rule now: should a file hold more (it never should), all but the latest are
  // closed as interrupted first, so that the index can be made.
  (db) => db.exec(WORKERS_MIGRATION),
  // 14 -> 15: the operator's words (issue 34): `--reason TEXT` of pause, resume, abort, retry,
  // update and a group's update during a strategy, kept beside the event it explains.
  (db) => db.exec(EVENT_REASON_MIGRATION),
  // 15 -> 16: strategies kept after delete (issue 34): `strategy delete` moves the record here.
  (db) => db.exec(ARCHIVE_MIGRATION),
  // 16 -> 17: a run's start and end as its own host saw them (issue 30): written by the exec
  // driver's launcher, which outlives its worker, so that a worker on another host that took the
  // run over takes its result instead of running it again, or gives up a run never started (the
  // first of the launcher and the taker to claim it wins, as the claim file does on one host).
  (db) => db.exec(RUN_END_MIGRATION),
  // 17 -> 18: a start rate that ramps (domain/start-rate.ts): each stage's rate as create or update
  // set it, the time of the stage's last start (read and moved in the commit that makes a start,
  // so that the rate holds across every worker of the strategy), and a group's default rate.
  (db) => db.exec(START_RATE_MIGRATION),
  // 18 -> 19: the steps caught mid-state of each stage, indexed apart (store/cursor.ts): a pass
  // over a stage reads those first, in three phases, and each read scanned every step of the stage
  // (the simulator's profile: the cursor's reads were a sixth of its time on fleets of ten).
  (db) => db.exec(MID_STATE_INDEX),
  // 19 -> 20: the same index, its WHERE on a column generated from the state (`mid`), so that on a
  // server a move from one mid state to the next changes no indexed column (store/pg/schema.ts).
  (db) => db.exec(MID_COLUMN_MIGRATION),
];

/** Shared with PostgreSQL's step (store/pg/schema.ts); its WHERE was the cursor's MID, word for word, until schema 20 keyed it on `mid`. */
export const MID_STATE_INDEX = `
  CREATE INDEX strategy_step_mid_idx ON strategy_step(stage, id) WHERE state NOT IN ('initial', 'complete', 'failed', 'aborted');
`;

/**
 * The step's `mid`, whether it is caught mid-state, generated from its state (virtual here: SQLite
 * has no update that keeps the row in place, and the index is read as before); the index of the
 * mid-state steps keyed on it. The cursor's MID is `st.mid`, as the index's WHERE, for the planner.
 */
export const MID_COLUMN_MIGRATION = `
  DROP INDEX strategy_step_mid_idx;
  ALTER TABLE strategy_step ADD COLUMN mid INTEGER GENERATED ALWAYS AS (state NOT IN ('initial', 'complete', 'failed', 'aborted')) VIRTUAL;
  CREATE INDEX strategy_step_mid_idx ON strategy_step(stage, id) WHERE mid;
`;

/** Shared with PostgreSQL's step (store/pg/schema.ts): the columns are text on both. */
export const START_RATE_MIGRATION = `
  ALTER TABLE strategy_stage ADD COLUMN start_rate TEXT;
  ALTER TABLE strategy_stage ADD COLUMN rate_last_at TEXT;
  ALTER TABLE subcloud_group_gate ADD COLUMN start_rate TEXT;
`;

/**
 * A deleted strategy's record, whole (its row, stages, steps, runs and events, as JSON of the rows
 * as they were), under the id its run logs are named by (domain/logs.ts strategyIdOf). A table of
 * its own rather than more rows beside the live ones: everything that reads the live strategy
 * (status, windows, the step list, the orchestrator) reads only those tables, and an archived
 * record can neither be counted by them nor changed by anything but `db prune`. The columns a
 * list shows are kept beside the JSON, so that `strategy list` parses none of it (store/pg/schema.ts
 * has PostgreSQL's).
 */
export const ARCHIVE_MIGRATION = `
  CREATE TABLE strategy_archive (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    state TEXT NOT NULL,
    steps INTEGER NOT NULL,
    complete INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT,
    deleted_at TEXT NOT NULL,
    deleted_by TEXT NOT NULL,
    strategy_json TEXT NOT NULL,
    stages_json TEXT NOT NULL,
    steps_json TEXT NOT NULL,
    runs_json TEXT NOT NULL,
    events_json TEXT NOT NULL
  );
  CREATE INDEX strategy_archive_deleted_idx ON strategy_archive(deleted_at);
`;

/** Runs' claims and ends (store/pg/schema.ts has PostgreSQL's). */
export const RUN_END_MIGRATION = `
  CREATE TABLE run_claim (
    run_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    what TEXT NOT NULL CHECK (what IN ('started', 'abandoned')),
    at TEXT NOT NULL
  );
  CREATE TABLE run_end (
    run_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    code INTEGER,
    signal TEXT,
    facts TEXT NOT NULL,
    ended_at TEXT NOT NULL
  );`;

/** The operator's reason beside an event (store/pg/schema.ts has PostgreSQL's). */
export const EVENT_REASON_MIGRATION = 'ALTER TABLE strategy_event ADD COLUMN reason TEXT;';

/**
 * Copy the sim_site rows into the sites file, committed there (durably) before the table is dropped
 * here in the migration's transaction: a crash between the two leaves the rows in both files, and
 * the next open copies again, keeping what the sites file already has (the same rows, or newer
 * ones). The table is created in the shape of the sim driver's schema version 1
 * (drivers/sim/sites.ts), which then finds it in place: written out here, not imported (the store
 * sees no driver), and a migration keeps making the shape of its time whatever the driver's
 * schema becomes later; the driver upgrades from version 1. No rows (or a database in memory: a reader's snapshot of a
 * directory it cannot write in, whose file stays as it is) need no sites file.
 */
function moveSitesOut(db: Database.Database): void {
  const rows = db.prepare('SELECT name, campaign, done, vim, busy_state, busy_owner, options FROM sim_site').all();
  if (rows.length > 0 && !db.memory) {
    const sites = new Database(sitesFileOf(db.name));
    try {
      sites.pragma('busy_timeout = 5000');
      if (sites.pragma('journal_mode', { simple: true }) !== 'wal') sites.pragma('journal_mode = WAL');
      // This one commit is durable before the rows' only other copy is dropped.
      sites.pragma('synchronous = FULL');
      sites
        .transaction(() => {
          sites.exec(`
            CREATE TABLE IF NOT EXISTS sim_site (
              name TEXT PRIMARY KEY,
              campaign TEXT NOT NULL,
              done INTEGER NOT NULL,
              vim TEXT NOT NULL,
              busy_state TEXT,
              busy_owner TEXT,
              options TEXT
            );
          `);
          if ((sites.pragma('user_version', { simple: true }) as number) === 0) sites.pragma('user_version = 1');
          const insert = sites.prepare(
            `INSERT OR IGNORE INTO sim_site (name, campaign, done, vim, busy_state, busy_owner, options)
             VALUES (@name, @campaign, @done, @vim, @busy_state, @busy_owner, @options)`,
          );
          for (const r of rows) insert.run(r);
        })
        .immediate();
    } finally {
      sites.close();
    }
  }
  db.exec('DROP TABLE sim_site');
}

export const SCHEMA_VERSION = MIGRATIONS.length;
