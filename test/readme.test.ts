// README must stay true: every option (flag and environment variable) and every CLI
// subcommand the code knows is documented there.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONS, envName, type OptionKey } from '../src/base/config.ts';
import { helpText } from '../src/cli/commands.ts';

const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');

t.test('every option is in the README table', async (t) => {
  for (const key of Object.keys(OPTIONS) as OptionKey[]) {
    t.match(readme, `\`--${OPTIONS[key].flag}\``, `--${OPTIONS[key].flag}`);
    t.match(readme, `\`${envName(key)}\``, envName(key));
  }
});

t.test('every subcommand in --help is in the README', async (t) => {
  const commands = [...helpText().matchAll(/^ {2}ivtd ([a-z][a-z-]*(?: [a-z-]+)?)/gm)].map((m) => m[1]!.replace(/ \[.*$/, ''));
  t.ok(commands.length >= 5, 'help lists subcommands');
  for (const c of commands) t.match(readme, `ivtd ${c}`, c);
});

t.test('README gives the two commands a newcomer needs', async (t) => {
  t.match(readme, 'npm install && npm start');
  t.match(readme, 'npm install && npm test');
});
