/**
 * The generated blocks of the hand-written reference pages: the strategy types (from what
 * `dcm strategy types` prints), the exec config's keys and placeholders, the exit codes, the
 * environment. Each is Markdown for one block between markers (markdown.ts).
 */
import { strategyTypes } from '../../commands/types.js';
import { CONFIG_KEYS } from '../../drivers/exec/config-keys.js';
import { PLACEHOLDERS, SUBCLOUD_FIELDS, TYPE_OPTION_KEYS } from '../../drivers/exec/placeholders.js';
import { ENV_GROUPS, ENVIRONMENT, EXIT_CODES, type EnvGroup } from './facts.js';
import { code, table } from './markdown.js';

/** The types as `dcm strategy types` lists them: states by arrows, options in backticks. */
export function typesTable(): string {
  const { rows } = strategyTypes();
  const cell = (v: unknown, each: (s: string) => string, sep: string) => (v === null ? '' : String(v).split('\n').map(each).join(sep));
  return table(
    ['type', 'alias', 'sync endpoint', 'states', 'options', 'required options'],
    rows.map(([type, alias, endpoint, states, options, required]) => [
      code(String(type)),
      code(String(alias)),
      endpoint === null ? '—' : String(endpoint),
      cell(states, String, ' → '),
      cell(options, code, ', '),
      cell(required, code, ', '),
    ]),
  );
}

export function configKeysTable(): string {
  const rows = (place: 'top' | 'entry') =>
    CONFIG_KEYS.filter((k) => k.place === place).map((k) => [code(k.key), k.type, k.default, k.example, k.since, k.meaning]);
  const head = ['key', 'type', 'default', 'example', 'since', 'meaning'];
  return [
    'The top level:',
    '',
    table(head, rows('top')),
    '',
    'An entry: a state\'s (under `states`), and `defaults` (every key but `run`), `probe`, and `audit` (only `run`, `timeout`, `kill_grace`, `env`, `cwd`):',
    '',
    table(head, rows('entry')),
  ].join('\n');
}

export function placeholdersList(): string {
  const run = PLACEHOLDERS.filter((p) => !(p in TYPE_OPTION_KEYS) && !SUBCLOUD_FIELDS.includes(p));
  return [
    `- the run: ${run.map((p) => code(`{${p}}`)).join(' ')}`,
    `- the type options: ${Object.keys(TYPE_OPTION_KEYS).map((p) => code(`{${p}}`)).join(' ')}`,
    `- the subcloud's fields, as \`subcloud show -d\` names them: ${SUBCLOUD_FIELDS.map((p) => code(`{${p}}`)).join(' ')}`,
    '- the subcloud\'s labels: `{label.KEY}`',
  ].join('\n');
}

export function exitCodesTable(): string {
  return table(['code', 'meaning'], EXIT_CODES.map((e) => [e.code, e.meaning]));
}

/** One group's variables. */
export function environmentTable(group: EnvGroup): string {
  return table(['variable', 'meaning'], ENVIRONMENT.filter((v) => v.group === group).map((v) => [v.name.split(', ').map(code).join(', '), v.meaning]));
}

export function environmentTables(): string {
  return (Object.entries(ENV_GROUPS) as [EnvGroup, string][]).map(([group, heading]) => `### ${heading}\n\n${environmentTable(group)}`).join('\n\n');
}
