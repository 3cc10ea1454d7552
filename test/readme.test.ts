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

t.test('the README does not contradict itself or the unit it installs (issue 58)', async (t) => {
  const { systemdUnit } = await import('../src/ops/systemd.ts');
  const header = /# {3}(sudo sh -c '\S+ systemd-unit > \S+')/.exec(systemdUnit({ binary: '/usr/local/bin/ivtd', options: {}, version: 'x' }))?.[1]?.replace('/usr/local/bin/ivtd', 'ivtd');
  t.ok(header, "the unit's header says how to install it");
  t.ok(readme.includes(header!), `the README installs it the same way: ${header}`);
  t.notMatch(readme, /systemd-unit \| sudo tee/, 'not a second way');
  t.notMatch(readme, /`(GET|POST) \/api\/v1\/ivt`/, 'no path without its endpoint (/lookup, /ortb, /imp)');
  const now = [...readme.matchAll(/npm test[^\n]*?about (\d+) minutes/g)].map((m) => m[1]);
  t.ok(now.length >= 1 && new Set(now).size === 1, `one figure for how long npm test takes (${now.join(', ')})`);
});
