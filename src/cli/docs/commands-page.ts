/**
 * docs/reference/commands.md: every command and option, from the program's definitions (model.ts).
 * The type aliases (`patch-strategy …`) and the old name of strategy-config are the same commands
 * as `strategy …` and `strategy-config …`: they get one table, not a copy of every section.
 */
import { aliasCreateOptions, allCommands, type CommandDoc, type OptionDoc } from './model.js';
import { anchor, code, GENERATED_NOTICE, table, text } from './markdown.js';

const title = (c: CommandDoc) => `dcm ${c.path}`.trim();
const link = (c: CommandDoc, label = c.path.split(' ').pop()!) => `[${label}](#${anchor(title(c))})`;

function optionRow(o: OptionDoc): string[] {
  const notes: string[] = [];
  if (o.mandatory) notes.push('required');
  if (o.choices) notes.push(`one of ${o.choices.map(code).join(', ')}`);
  if (o.default !== null) notes.push(`default ${code(o.default)}`);
  return [code(o.flags), `${text(o.description)}${notes.length ? ` (${notes.join('; ')})` : ''}`];
}

function commandSection(c: CommandDoc, level: number): string[] {
  const out = [`${'#'.repeat(level)} ${title(c)}`, '', '```', c.usage, '```', ''];
  out.push(text(c.description), '');
  if (c.arguments.length) {
    out.push(table(['argument', 'meaning'], c.arguments.map((a) => [code(a.term), `${text(a.description)}${a.choices ? ` (one of ${a.choices.map(code).join(', ')})` : ''}`])), '');
  }
  if (c.options.length) out.push(table(['option', 'meaning'], c.options.map(optionRow)), '');
  if (c.commands.length) out.push(table(['command', 'what it does'], c.commands.map((s) => [link(s, s.path), text(s.summary)])), '');
  if (c.examples.length) out.push('Examples:', '', '```sh', ...c.examples, '```', '');
  return out;
}

function aliasSection(program: CommandDoc): string[] {
  const aliases = program.commands.filter((c) => c.aliasOf);
  const rows = aliases.map((a) => {
    const of = a.aliasOf!;
    const stands = of.type ? `\`dcm strategy VERB --type ${of.type}\`` : `\`dcm ${of.path} VERB\``;
    const create = aliasCreateOptions(program, a);
    const createCell = create
      ? `${code(create.usage)}${create.typeOptions.length ? `; its type's options: ${create.typeOptions.map((o) => code(o.flags)).join(', ')}` : ''}`
      : '';
    return [code(`dcm ${a.path}`), stands, a.commands.map((s) => s.path.split(' ').pop()!).join(', '), createCell];
  });
  return [
    '## Aliases',
    '',
    "dcmanager's command names for each strategy type, and strategy-config's old name, are the same commands:",
    "each verb takes the options of the command it stands for, without `--type`. An alias's `create` takes one",
    "cloud name, as dcmanager's client does (`strategy create` takes several), and only its own type's options.",
    '',
    table(['command', 'stands for', 'verbs', 'create'], rows),
    '',
  ];
}

export function commandsPage(program: CommandDoc, version: string): string {
  const own = program.commands.filter((c) => !c.aliasOf);
  const contents = own.map((c) => `- ${link(c, `dcm ${c.path}`)}${c.commands.length ? `: ${c.commands.map((s) => link(s)).join(', ')}` : ''}`);
  const out = [
    GENERATED_NOTICE,
    '',
    '# Commands and options',
    '',
    `Every command of dcm ${version}, as \`dcm COMMAND --help\` prints it, with its Examples. The same`,
    'text is the man page (`man dcm`, from [docs/man/dcm.1](../man/dcm.1)). Global options work before or',
    'after the command (`dcm -f json strategy show` is `dcm strategy show -f json`); every long option may',
    "be shortened to a prefix that names it alone (`--max-parallel 3`), as dcmanager's client takes them.",
    'What the output looks like: [output.md](output.md); exit codes: [exit-codes.md](exit-codes.md).',
    '',
    ...contents,
    '- [Aliases](#aliases): ' + program.commands.filter((c) => c.aliasOf).map((c) => code(c.path)).join(', '),
    '',
    '## Global options',
    '',
    table(['option', 'meaning'], [...program.options.map(optionRow), [code('-h, --help'), 'the command\'s help, ending with its Examples (`dcm help COMMAND` too)']]),
    '',
    'Examples:',
    '',
    '```sh',
    ...program.examples,
    '```',
    '',
  ];
  for (const c of own) {
    out.push(...commandSection(c, 2));
    for (const s of allCommands(c)) out.push(...commandSection(s, 3));
  }
  out.push(...aliasSection(program));
  return `${out.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}
