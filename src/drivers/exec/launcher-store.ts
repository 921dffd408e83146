/**
 * What the exec launcher (./launcher.ts) says to a server's store, on one connection of its own:
 * each run's claim before it starts, each run's end as it ends, and, as its host wakes, which runs'
 * workers were taken over. Every write is tried again while the server cannot be reached, and
 * made so that a try whose commit went through and whose answer was lost (the connection cut
 * between the two) can be made again with the same outcome.
 */
import { formatTimestamp } from '../../domain/time.js';
import { pgClientConfig } from '../../platform/pg-params.js';
import { setLongTimeout } from '../../platform/timers.js';
import type { EndStore } from './launch.js';

type Query = (text: string, values: unknown[]) => Promise<{ rowCount: number; rows: Record<string, unknown>[] }>;

/**
 * The run's claim, one row when it is this host's: made now, or found made by this host already,
 * by a try whose commit went through and whose answer was lost with its connection. Before, the
 * try again found the claim there and took it for a taker's: a storm of cut connections gave up
 * three runs so, each "given up by a worker on another host" (test/pg/server-down.test.ts). The
 * SELECT reads the snapshot from before the INSERT: never both rows.
 */
const CLAIM = `WITH mine AS (INSERT INTO run_claim (run_id, host, what, at) VALUES ($1, $2, 'started', $3) ON CONFLICT (run_id) DO NOTHING RETURNING 1)
  SELECT 1 FROM mine UNION ALL SELECT 1 FROM run_claim WHERE run_id = $1 AND host = $2 AND what = 'started'`;

/** A run's end; the first written wins (a try again after a lost answer finds its own). */
const END = 'INSERT INTO run_end (run_id, host, code, signal, facts, ended_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id) DO NOTHING';

/**
 * The runs whose worker (DCM_FENCE's token, before its last '.') no longer holds its row, and
 * whose step no worker of this host holds either (one that took the worker over here waits for
 * the run, through its files): by their 1-based place in the arrays.
 */
const TAKEN_OVER = `SELECT t.i FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(token, cloud, i)
  WHERE NOT EXISTS (SELECT 1 FROM apply_worker w WHERE w.token = t.token)
    AND NOT EXISTS (SELECT 1 FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id JOIN apply_worker w ON w.id = st.owner
                    WHERE sc.name = t.cloud AND w.host = $3)`;

export class RunStore {
  private conn: Promise<Query> | null = null;
  /** Why the store's last try failed (its first line), for a claim given up. */
  private lastFailure = '';

  /** The server's parameters as dcm resolved them, and this host's name. */
  constructor(private readonly store: EndStore) {}

  get host(): string {
    return this.store.host;
  }

  /**
   * Claim the run before it starts: null when it is this host's to start; else why not (a worker
   * on another host gave it up first, or the server could not be reached for a minute).
   */
  async claim(runId: string): Promise<string | null> {
    const n = await this.tried(CLAIM, [runId, this.store.host, formatTimestamp(Date.now() * 1000)], 60_000);
    if (n === null) return `not started: the database could not be reached to claim the run${this.lastFailure ? ` (${this.lastFailure})` : ''}`;
    return n === 1 ? null : 'not started: given up by a worker on another host';
  }

  /** A run's end, tried again for up to an hour while the server cannot take it. */
  async writeEnd(runId: string, code: number | null, signal: string | null, facts: string): Promise<void> {
    await this.tried(END, [runId, this.store.host, code, signal, facts, formatTimestamp(Date.now() * 1000)], 3_600_000);
  }

  /** Of these runs (their workers' tokens, their clouds), the 1-based places of those taken over (TAKEN_OVER); once. */
  async takenOver(tokens: readonly string[], clouds: readonly string[]): Promise<number[]> {
    const { rows } = await (await this.connection())(TAKEN_OVER, [tokens, clouds, this.store.host]);
    return rows.map((r) => Number(r.i));
  }

  /** A look that failed (the wake check's): said with the next claim given up. */
  failed(err: unknown): void {
    this.lastFailure = String((err as Error)?.message ?? err).split('\n')[0];
  }

  /** `text` on the store, tried again (200 ms, doubling to 10 s) until `forMs` has passed: its rows' count, or null then. */
  private async tried(text: string, values: unknown[], forMs: number): Promise<number | null> {
    for (let wait = 200, until = Date.now() + forMs; ; wait = Math.min(wait * 2, 10_000)) {
      try {
        return (await (await this.connection())(text, values)).rowCount;
      } catch (err) {
        this.failed(err);
        if (Date.now() > until) return null;
        await new Promise<void>((r) => setLongTimeout(r, wait));
      }
    }
  }

  private connection(): Promise<Query> {
    return (this.conn ??= connect(this.store));
  }
}

/**
 * One connection, made on the first use; a lost one is made again by the next try. Returns rows
 * affected, and the rows. node-postgres is given every parameter (pg-params.ts): it reads no
 * variable and no password file of its own, and so never warns.
 */
function connect(store: EndStore): Promise<Query> {
  const { params } = store;
  return import('pg').then(({ default: pg }) => {
    let client: InstanceType<typeof pg.Client> | null = null;
    return async (text: string, values: unknown[]) => {
      if (!client) {
        const c = new pg.Client(pgClientConfig(params));
        c.on('error', () => {
          if (client === c) client = null;
        });
        await c.connect();
        client = c;
      }
      try {
        const r = await client.query(text, values);
        return { rowCount: r.rowCount ?? 0, rows: r.rows as Record<string, unknown>[] };
      } catch (err) {
        client.end().catch(() => {});
        client = null;
        throw err;
      }
    };
  });
}
