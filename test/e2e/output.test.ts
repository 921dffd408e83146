/**
 * Output through the built binary on a non-TTY (SPEC §8): dcmanager's table layout byte for byte,
 * every format on a show and a list command, -c selection, empty lists, global options anywhere.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import YAML from 'yaml';
import { dcm, dcmOk, expectErrorLine, Fixture, withSql } from '../helpers/fleet.js';

/**
 * subcloud1 and subcloud3 out-of-sync, subcloud2 in-sync: a patch strategy has two steps in stage 1.
 * The steps are then given the states and times of the example, the strategy fixed times.
 */
let fx: Fixture;
beforeAll(async () => {
  fx = await Fixture.made(async (db) => {
    dcmOk(['--db', db, 'subcloud', 'add', 'subcloud1', 'subcloud2', 'subcloud3']);
    dcmOk(['--db', db, 'subcloud', 'update', 'subcloud2', '--sync', 'patching=in-sync']);
    dcmOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '2']);
    await withSql(db, async (d) => {
      await d.prepare(
        `UPDATE strategy_step SET started_at = '2025-01-01 10:01:00.000000', finished_at = '2025-01-01 10:05:00.000000',
           created_at = '2025-01-01 10:00:00.000000', updated_at = '2025-01-01 10:05:00.000000'`,
      ).run();
      await d.prepare("UPDATE strategy_step SET state = 'complete' WHERE subcloud_id = 1").run();
      await d.prepare("UPDATE strategy_step SET state = 'failed', details = 'apply phase failed' WHERE subcloud_id = 3").run();
      await d.prepare("UPDATE strategy SET created_at = '2025-01-01 10:00:00.000000', updated_at = NULL").run();
    });
  });
});
afterAll(() => fx.cleanup());

const STEP_TABLE = `+-----------+----------+----------+--------------------+----------------------------+----------------------------+
| cloud     | stage    | state    | details            | started_at                 | finished_at                |
+-----------+----------+----------+--------------------+----------------------------+----------------------------+
| subcloud1 | Complete | complete |                    | 2025-01-01 10:01:00.000000 | 2025-01-01 10:05:00.000000 |
| subcloud3 | Complete | failed   | apply phase failed | 2025-01-01 10:01:00.000000 | 2025-01-01 10:05:00.000000 |
+-----------+----------+----------+--------------------+----------------------------+----------------------------+
`;

const SHOW_TABLE = `+------------------------+----------------------------+
| Field                  | Value                      |
+------------------------+----------------------------+
| strategy type          | patch                      |
| subcloud apply type    | None                       |
| max parallel subclouds | 2                          |
| stop on failure        | False                      |
| upload only            | False                      |
| state                  | initial                    |
| created_at             | 2025-01-01 10:00:00.000000 |
| updated_at             | None                       |
+------------------------+----------------------------+
`;

const SHOW_DATA = {
  'strategy type': 'patch',
  'subcloud apply type': null,
  'max parallel subclouds': 2,
  'stop on failure': false,
  // The old client's patch field (issue 33).
  'upload only': false,
  state: 'initial',
  created_at: '2025-01-01 10:00:00.000000',
  updated_at: null,
};

// The step's stage as the server sends it (STAGE_MAP in SwUpdateStrategyController.get): an ended step is Complete.
const STEP_DATA = [
  { cloud: 'subcloud1', stage: 'Complete', state: 'complete', details: '', started_at: '2025-01-01 10:01:00.000000', finished_at: '2025-01-01 10:05:00.000000' },
  { cloud: 'subcloud3', stage: 'Complete', state: 'failed', details: 'apply phase failed', started_at: '2025-01-01 10:01:00.000000', finished_at: '2025-01-01 10:05:00.000000' },
];

describe('every format, on a list and on a show command', () => {
  let db: string;
  beforeAll(() => {
    db = fx.fresh().db;
  });
  const out = (...args: string[]) => {
    const r = dcm(['--db', db, ...args]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout;
  };

  test('table (the default): dcmanager layout byte for byte', () => {
    expect(out('strategy-step', 'list')).toBe(STEP_TABLE);
    expect(out('strategy', 'show', '-f', 'table')).toBe(SHOW_TABLE);
  });

  test('json: typed values, 2-space indent; --noindent compact', () => {
    const list = out('strategy-step', 'list', '-f', 'json');
    expect(JSON.parse(list)).toEqual(STEP_DATA);
    // Python's json.dump: with indent=2 the same text as JSON.stringify for ASCII data.
    expect(list).toBe(JSON.stringify(STEP_DATA, null, 2) + '\n');
    expect(out('strategy', 'show', '-f', 'json')).toBe(JSON.stringify(SHOW_DATA, null, 2) + '\n');
    // --noindent: Python's separators ", " and ": ".
    expect(out('strategy', 'show', '-f', 'json', '--noindent')).toBe(
      '{"strategy type": "patch", "subcloud apply type": null, "max parallel subclouds": 2, "stop on failure": false, ' +
        '"upload only": false, "state": "initial", "created_at": "2025-01-01 10:00:00.000000", "updated_at": null}\n',
    );
  });

  test('csv: every non-numeric field quoted', () => {
    expect(out('strategy-step', 'list', '-f', 'csv')).toBe(
      '"cloud","stage","state","details","started_at","finished_at"\n' +
        '"subcloud1","Complete","complete","","2025-01-01 10:01:00.000000","2025-01-01 10:05:00.000000"\n' +
        '"subcloud3","Complete","failed","apply phase failed","2025-01-01 10:01:00.000000","2025-01-01 10:05:00.000000"\n',
    );
    // csv is a list format in cliff; dcm also prints a show command as one header and one row.
    expect(out('strategy', 'show', '-f', 'csv')).toBe(
      '"strategy type","subcloud apply type","max parallel subclouds","stop on failure","upload only","state","created_at","updated_at"\n' +
        '"patch","",2,False,False,"initial","2025-01-01 10:00:00.000000",""\n',
    );
  });

  test('value: values joined by a space, one row a line', () => {
    expect(out('strategy-step', 'list', '-f', 'value', '-c', 'cloud', '-c', 'stage', '-c', 'state')).toBe('subcloud1 Complete complete\nsubcloud3 Complete failed\n');
    // dcm's stage number, its own column, only when named.
    expect(out('strategy-step', 'list', '-f', 'value', '-c', 'cloud', '-c', 'stage number')).toBe('subcloud1 1\nsubcloud3 1\n');
    expect(out('strategy', 'show', '-f', 'value')).toBe('patch\nNone\n2\nFalse\nFalse\ninitial\n2025-01-01 10:00:00.000000\nNone\n');
  });

  test('yaml: the same data', () => {
    expect(YAML.parse(out('strategy-step', 'list', '-f', 'yaml'))).toEqual(STEP_DATA);
    expect(YAML.parse(out('strategy', 'show', '-f', 'yaml'))).toEqual(SHOW_DATA);
  });

  test('-c: repeatable, names with spaces, table order kept', () => {
    // dcmanager's subcloud list reads -c against its detail columns (deploy_status, not deploy status).
    expect(out('subcloud', 'list', '-c', 'sync', '-c', 'deploy_status', '-c', 'name')).toBe(
      [
        '+-----------+---------------+-------------+',
        '| name      | deploy_status | sync        |',
        '+-----------+---------------+-------------+',
        '| subcloud1 | complete      | out-of-sync |',
        '| subcloud2 | complete      | out-of-sync |',
        '| subcloud3 | complete      | out-of-sync |',
        '+-----------+---------------+-------------+',
        '',
      ].join('\n'),
    );
    expect(out('strategy', 'show', '-c', 'state', '-c', 'max parallel subclouds', '-f', 'json', '--noindent')).toBe(
      '{"max parallel subclouds": 2, "state": "initial"}\n',
    );
  });

  test('unknown columns: ignored beside a known one; alone, exit 1 (as cliff in the client) naming the known columns', () => {
    expect(out('strategy-step', 'list', '-c', 'nosuch', '-c', 'cloud', '-f', 'value')).toBe('subcloud1\nsubcloud3\n');
    const r = dcm(['--db', db, 'strategy-step', 'list', '-c', 'deploy_status']);
    expectErrorLine(r, 1, /deploy_status/);
    for (const c of ['cloud', 'stage', 'state', 'details', 'started_at', 'finished_at']) expect(r.stderr).toContain(`'${c}'`);
    const s = dcm(['--db', db, 'strategy', 'show', '-c', 'State']);
    expectErrorLine(s, 1, /State.*'strategy type'.*'state'/);
  });

  test('an empty list: one <none> row in every format, as dcmanager\'s client prints it', () => {
    expect(out('strategy-step', 'list', '--state', 'aborted')).toBe(
      [
        '+--------+--------+--------+---------+------------+-------------+',
        '| cloud  | stage  | state  | details | started_at | finished_at |',
        '+--------+--------+--------+---------+------------+-------------+',
        '| <none> | <none> | <none> | <none>  | <none>     | <none>      |',
        '+--------+--------+--------+---------+------------+-------------+',
        '',
      ].join('\n'),
    );
    expect(out('strategy-step', 'list', '--stage', '2', '-f', 'json', '--noindent')).toBe(
      '[{"cloud": "<none>", "stage": "<none>", "state": "<none>", "details": "<none>", "started_at": "<none>", "finished_at": "<none>"}]\n',
    );
    expect(out('strategy-step', 'list', '--stage', '2', '-f', 'csv')).toBe(
      '"cloud","stage","state","details","started_at","finished_at"\n"<none>","<none>","<none>","<none>","<none>","<none>"\n',
    );
    expect(out('strategy-step', 'list', '--stage', '2', '-f', 'value')).toBe('<none> <none> <none> <none> <none> <none>\n');
  });

  test('no colour codes when stdout is not a terminal', () => {
    expect(out('strategy-step', 'list')).not.toMatch(/\u001b\[/);
  });
});

describe('global options before or after the command', () => {
  test('dcm -f json strategy show ≡ dcm strategy show -f json ≡ --db last', () => {
    const { db } = fx.fresh();
    const a = dcmOk(['-f', 'json', '--db', db, 'strategy', 'show']).stdout;
    const b = dcmOk(['strategy', 'show', '-f', 'json', '--db', db]).stdout;
    const c = dcmOk(['--format=json', 'strategy', '--db=' + db, 'show']).stdout;
    expect(JSON.parse(a)).toEqual(SHOW_DATA);
    expect(b).toBe(a);
    expect(c).toBe(a);
  });

  test('-c before the command', () => {
    const { db } = fx.fresh();
    expect(dcmOk(['-c', 'cloud', '--db', db, '-f', 'value', 'strategy-step', 'list']).stdout).toBe('subcloud1\nsubcloud3\n');
  });
});
