// The docs must stay true: every option (flag and environment variable) the code knows is in
// docs/configuration.md's table, every CLI subcommand in docs/cli.md, and the README gives a
// newcomer's two commands.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONS, envName, type OptionKey } from '../src/base/config.ts';
import { helpText } from '../src/cli/commands.ts';

const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');
const configuration = readFileSync(join(import.meta.dirname, '..', 'docs', 'configuration.md'), 'utf8');
const cli = readFileSync(join(import.meta.dirname, '..', 'docs', 'cli.md'), 'utf8');

t.test('every option is in the table of docs/configuration.md', async (t) => {
  for (const key of Object.keys(OPTIONS) as OptionKey[]) {
    t.match(configuration, `\`--${OPTIONS[key].flag}\``, `--${OPTIONS[key].flag}`);
    t.match(configuration, `\`${envName(key)}\``, envName(key));
  }
});

t.test('every subcommand in --help is in docs/cli.md', async (t) => {
  const commands = [...helpText().matchAll(/^ {2}ivtd ([a-z][a-z-]*(?: [a-z-]+)?)/gm)].map((m) => m[1]!.replace(/ \[.*$/, ''));
  t.ok(commands.length >= 5, 'help lists subcommands');
  for (const c of commands) t.match(cli, `ivtd ${c}`, c);
});

t.test('README gives the two commands a newcomer needs', async (t) => {
  t.match(readme, 'npm install && npm start');
  t.match(readme, 'npm install && npm test');
});
