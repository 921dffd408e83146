/**
 * A mistyped command or option says what was meant, on the one `error:` line, exit 2 (SPEC §4, §8).
 */
import { describe, test } from '@jest/globals';
import { run } from '../helpers/inprocess.js';
import { dcm } from '../helpers/cli.js';
import { expectErrorLine } from '../helpers/fleet.js';

describe('did you mean', () => {
  test.each([
    [['stratgy', 'show'], "unknown command 'stratgy'; did you mean 'strategy'?"],
    [['subcloud-grup', 'list'], "unknown command 'subcloud-grup'; did you mean 'subcloud-group'?"],
    [['strategy', 'creat'], "unknown command 'creat'; did you mean 'create'?"],
    [['strategy-step', 'lsit'], "unknown command 'lsit'; did you mean 'list'?"],
    // Typos, not prefixes: a unique prefix (`--stop-on-failur`, `--stat`) is that option, as argparse reads it.
    [['strategy', 'create', '--type', 'patch', '--stop-on-failrue'], "unknown option '--stop-on-failrue'; did you mean '--stop-on-failure'?"],
    [['strategy-step', 'list', '--sate', 'failed'], "unknown option '--sate'; did you mean '--state'?"],
    [['subcloud', 'list', '--grop', 'x'], "unknown option '--grop'; did you mean '--group'?"],
  ])('dcm %j', async (args, message) => {
    expectErrorLine(await run(args), 2, message);
  });

  test('nothing close: no suggestion, still one line', async () => {
    expectErrorLine(await run(['frobnicate']), 2, "unknown command 'frobnicate'");
    expectErrorLine(await run(['subcloud', 'list', '--zzzzzz']), 2, "unknown option '--zzzzzz'");
  });

  test('through the built binary', () => {
    expectErrorLine(dcm(['stratgy']), 2, "unknown command 'stratgy'; did you mean 'strategy'?");
  });
});
