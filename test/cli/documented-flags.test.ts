// Every command line the docs show is one the parser takes: each `ivtd …` in README.md,
// docs/*.md and `ivtd help` (code blocks, help lines, inline code with a flag) is turned
// into an argv, each documented flag given the way the docs show it (with a value or as a
// switch), and run through the CLI's own parser. A flag documented but not accepted
// (`policy import --replace` once), a switch documented with a value or the reverse, or a
// documented command the CLI does not know fails here, naming the file and line.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { helpText, parseCommandLine } from '../../src/cli/commands.ts';

const ROOT = join(import.meta.dirname, '..', '..');

interface Usage {
  where: string;
  text: string;
}

/**
 * The text after each `ivtd` (or `npm run ivtd --`) that reads as a command line; and the
 * rows of an option table (first column "Flag" or "option"), as flags of the command the
 * lines just before it name in inline code (`ivtd systemd-unit`), else of `serve`.
 */
function usagesIn(name: string, doc: string, wholeLines: boolean): Usage[] {
  const out: Usage[] = [];
  let fenced = false;
  // Inside a fence of program code (```go, ```java, ```json …) `ivtd` is a name, not a command.
  let otherLanguage = false;
  let optionTableOf: string | null = null;
  const lines = doc.split('\n');
  lines.forEach((raw, i) => {
    const fence = /^\s*```\s*([a-z]*)/.exec(raw);
    if (fence) {
      fenced = !fenced;
      otherLanguage = fenced && fence[1] !== '' && !['sh', 'bash', 'shell', 'console', 'text'].includes(fence[1]!);
      return;
    }
    if (otherLanguage) return;
    const where = `${name}:${i + 1}`;
    if (!fenced && /^\|\s*(flag|option)s?\s*\|/i.test(raw)) {
      const before = lines.slice(Math.max(0, i - 5), i).join('\n');
      optionTableOf = [...before.matchAll(/`ivtd ([a-z][a-z -]*?)`/g)].at(-1)?.[1] ?? 'serve';
      return;
    }
    if (optionTableOf !== null) {
      if (!raw.startsWith('|')) optionTableOf = null;
      else {
        const cell = /^\|\s*`(--[a-z0-9-]+)( [^`]*)?`/.exec(raw);
        // A row that shows no value (docs/configuration.md's table has a Default column) is an option taking one.
        if (cell) out.push({ where, text: ` ${optionTableOf} ${cell[1]}${cell[2] ?? '=VALUE'}` });
        return;
      }
    }
    // Code blocks and help lines are command lines; in prose only inline code that shows a flag.
    const pieces = wholeLines || fenced ? [raw.replace(/(^|\s+)#.*$/, '')] : [...raw.matchAll(/`([^`]*\bivtd\b[^`]*--[^`]*)`/g)].map((m) => m[1]!);
    for (const piece of pieces) {
      // `ivtd` as a command: at the start, after a space or "(", or as …/bin/ivtd (not a
      // value such as /var/lib/ivtd); it runs to the next one.
      const starts = [...piece.matchAll(/(?:^|[\s(]|bin\/)ivtd(?: --)?(?= |$)/g)];
      starts.forEach((m, j) => {
        const end = j + 1 < starts.length ? starts[j + 1]!.index : piece.length;
        // A column of description (3+ spaces) ends it too.
        out.push({ where, text: piece.slice(m.index + m[0].length, end).split(/ {3,}/)[0]! });
      });
    }
  });
  return out;
}

/** Splits a usage into argv variants: `a|b` in the command words is one variant each. */
function argvsOf(text: string): string[][] {
  const tokens: Array<{ tok: string; optional: boolean }> = [];
  let depth = 0;
  for (const m of text.matchAll(/"[^"]*"|'[^']*'|\S+/g)) {
    let tok = m[0];
    // A shell pipe, redirection or list at the top level ends the command line.
    if (depth === 0 && /^(\||\|\||&&|;|>|>>|2>|<)$/.test(tok)) break;
    const optional = depth > 0 || tok.startsWith('[') || tok.startsWith('(');
    depth += (tok.match(/[[(]/g) ?? []).length - (tok.match(/[\])]/g) ?? []).length;
    tok = tok.replace(/^[[(]+|[\]),.:;]+$/g, '');
    if (tok === '' || tok === '|') continue;
    tokens.push({ tok, optional });
  }
  // Command words: lowercase words before the first flag; a bracketed one only first (`[serve] [options]`).
  const words: string[][] = [];
  let k = 0;
  for (; k < tokens.length && words.length < 2; k++) {
    const { tok, optional } = tokens[k]!;
    if (!/^[a-z][a-z-]*(\|[a-z][a-z-]*)*$/.test(tok) || (optional && k > 0)) break;
    words.push(tok.split('|'));
  }
  const flags: string[] = [];
  for (; k < tokens.length; k++) {
    const tok = tokens[k]!.tok;
    if (!tok.startsWith('--')) continue; // placeholders the docs show outside a flag ("[options]", "…")
    flags.push(tok);
    const next = tokens[k + 1]?.tok;
    // `--flag VALUE`: the docs show a value; `--flag=value` carries its own.
    if (!tok.includes('=') && next !== undefined && !next.startsWith('--')) {
      flags.push(next.replace(/^["']|["']$/g, ''));
      k++;
    }
  }
  let variants: string[][] = [[]];
  for (const alternatives of words) variants = variants.flatMap((v) => alternatives.map((a) => [...v, a]));
  return variants.map((v) => [...v, ...flags]);
}

const docs: Array<[string, string, boolean]> = [
  ['README.md', readFileSync(join(ROOT, 'README.md'), 'utf8'), false],
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f): [string, string, boolean] => [`docs/${f}`, readFileSync(join(ROOT, 'docs', f), 'utf8'), false]),
  ['ivtd help', helpText(), true],
];

const usages = docs.flatMap(([name, text, whole]) => usagesIn(name, text, whole));

t.test('the docs show command lines with flags for every table command', async (t) => {
  const flagged = usages.filter((u) => u.text.includes('--'));
  t.ok(flagged.length >= 30, `found ${flagged.length} documented command lines with flags`);
  for (const must of ['policy import --customer REF --file PATH|- [--replace]', 'key rotate --customer REF', 'systemd-unit [--user USER]', 'systemd-unit --binary PATH', 'serve --memory-budget']) {
    t.ok(usages.some((u) => u.text.includes(must)), `the extraction sees "${must}"`);
  }
});

t.test('every documented flag of every documented command is accepted by the parser', async (t) => {
  let checked = 0;
  for (const u of usages) {
    for (const argv of argvsOf(u.text)) {
      let problem: string | null = null;
      try {
        parseCommandLine(argv);
      } catch (e) {
        // A placeholder value (`--threads N`) may fail the option's own check; what the
        // parser must never say of a documented line is that a flag or command is unknown
        // or used the wrong way.
        const msg = (e as Error).message;
        if (/unknown (flag|command)|needs a value|takes no value|given more than once/.test(msg)) problem = msg;
      }
      t.equal(problem, null, `${u.where}: ivtd ${argv.join(' ')}`);
      checked++;
    }
  }
  t.ok(checked >= 40, `${checked} documented command lines checked`);
});

t.test('the check itself catches an undocumented-but-shown flag and a switch shown with a value', async (t) => {
  const probe = (text: string) => {
    try {
      for (const argv of argvsOf(text)) parseCommandLine(argv);
      return null;
    } catch (e) {
      return (e as Error).message;
    }
  };
  t.match(probe('policy import --customer REF --file x.csv [--merge]'), /unknown flag --merge/);
  t.match(probe('customer list --kind prebid'), /unknown flag --kind for "customer list"/);
  t.match(probe('customer list [--json yes]'), /unknown command "customer list yes"/);
  t.match(probe('user disable|delete --username U'), /unknown command "user delete"/);
  t.equal(probe('policy import --customer REF --file PATH|- [--replace] [--json]'), null);
  t.same(usagesIn('x', 'run `ivtd reload --json` or `ivtd ready`', false).map((u) => u.text.trim()), ['reload --json'], 'inline code only when it shows a flag');
  t.same(argvsOf(' [serve] [options]'), [['serve']]);
  const table = 'Its options, `ivtd systemd-unit`:\n\n| option | effect |\n|---|---|\n| `--binary PATH` | x |\n| `--owner USER` | y |\n\nafter';
  t.same(usagesIn('x', table, false).map((u) => u.text.trim()), ['systemd-unit --binary PATH', 'systemd-unit --owner USER'], 'option tables name their command');
  t.match(probe('systemd-unit --owner USER'), /unknown flag --owner/);
  t.same(argvsOf(' systemd-unit | sudo tee /etc/x --bogus'), [['systemd-unit']], 'a pipe ends the command line');
});
