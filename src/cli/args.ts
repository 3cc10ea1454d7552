// Splits a command line into subcommand words, the common option flags (handed to
// config.ts's parseOptionFlags) and the subcommand's own flags.
import { ConfigError, OPTIONS, parseOptionFlags, type OptionKey } from '../base/config.ts';

/** A mistake in how the command was typed: reported with a pointer to `ivtd help`, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Flags that never take a value; every other flag does (`--flag value` or `--flag=value`). */
const BOOLEAN_FLAGS = new Set(['json', 'password-stdin', 'help', 'version']);
const OPTION_FLAGS = new Set<string>(Object.values(OPTIONS).map((o) => o.flag));

export interface ParsedArgs {
  words: string[];
  /** Subcommand flags by name (no dashes): string for valued flags, true for boolean ones. */
  flags: Map<string, string | true>;
  options: Partial<Record<OptionKey, string>>;
}

/**
 * `valueFlags`: every subcommand flag that takes a value; `switches`: every subcommand flag
 * that takes none (`--replace`); anything else unknown is a usage error.
 */
export function parseArgs(argv: string[], valueFlags: ReadonlySet<string>, switches: ReadonlySet<string> = new Set()): ParsedArgs {
  const words: string[] = [];
  const flags = new Map<string, string | true>();
  const optionArgv: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-h') {
      flags.set('help', true);
      continue;
    }
    if (!a.startsWith('-')) {
      words.push(a);
      continue;
    }
    const m = /^--([a-z0-9][a-z0-9-]*)(?:=([\s\S]*))?$/.exec(a);
    if (!m) throw new UsageError(`unknown flag ${a}`);
    const name = m[1]!;
    let value: string | true | undefined = m[2];
    const isSwitch = BOOLEAN_FLAGS.has(name) || switches.has(name);
    if (!isSwitch && !valueFlags.has(name) && !OPTION_FLAGS.has(name)) throw new UsageError(`unknown flag --${name}`);
    if (isSwitch) {
      if (value !== undefined) throw new UsageError(`--${name} takes no value`);
      value = true;
    } else if (value === undefined) {
      const next = argv[i + 1];
      // A following flag means the value was forgotten; `--flag=--value` still allows such values.
      if (next === undefined || next.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      value = next;
      i++;
    }
    if (OPTION_FLAGS.has(name)) {
      optionArgv.push(`--${name}`, value as string);
      continue;
    }
    if (flags.has(name)) throw new UsageError(`--${name} given more than once`);
    flags.set(name, value);
  }
  let options: Partial<Record<OptionKey, string>>;
  try {
    options = parseOptionFlags(optionArgv).flags;
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message);
    throw e;
  }
  return { words, flags, options };
}
