// The `ivtd` subcommands: parse the command line, run the operation (through a running
// server's control socket when there is one, else on the store directly), print text or JSON.
import { existsSync } from 'node:fs';
import { parsePolicyCsv, policyToCsv } from '../policy/policy-csv.ts';
import { DEFAULT_THRESHOLDS, MAX_ENTRIES, PolicyError, parseEntry } from '../policy/model.ts';
import type { StoredPolicy } from '../store/policies.ts';
import { join } from 'node:path';
import { ConfigError, OPTIONS, optionsHelp, resolveConfig, resolveConfigAsync, type Config } from '../base/config.ts';
import { DB_FILE, Store, StoreLockedError } from '../store/db.ts';
import type { CustomerListing } from '../store/customers.ts';
import { StoreError } from '../store/store-error.ts';
import { parseArgs, UsageError } from './args.ts';
import { ControlError, ControlUnavailableError, sendControl } from '../provisioning/control.ts';
import { runOperation, type OperationName, type OperationResult, type ReloadOutcome } from '../provisioning/operations.ts';
import { DEFAULT_BINARY, UnitError, systemdUnit } from '../ops/systemd.ts';
import { formatVersion, versionInfo } from '../ops/version.ts';
import { SourcesError } from '../data/sources.ts';
import { LockBusyError } from '../data/files.ts';
import { POLICY_BODY_LIMIT } from '../account/policy-routes.ts';
import { PASSWORD_MAX } from '../base/secrets.ts';
import { fileChunks, readText } from './read-text.ts';
import { ListenError } from '../base/errors.ts';
import { DOCUMENT_LIMITS, jsonFault, type JsonValue } from '../base/bounded-json.ts';
import { withoutBom } from '../base/text.ts';
import { TlsError } from '../http/tls.ts';
import { DATA_USAGE, dataStatus, dataUpdate, statusText, updateText } from './data-commands.ts';
import { isWholeNumberIn, parseWholeNumber } from '../base/whole-number.ts';
import { parseDuration } from '../base/time.ts';
import { unknownEnvWarnings } from './env-check.ts';
import pkg from '../../package.json' with { type: 'json' };
import { limitMallocArenasAtStart } from '../runtime/malloc-arenas.ts';

export interface CliIO {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  stdin: AsyncIterable<string | Buffer>;
}

interface Context {
  words: string;
  flags: Map<string, string | true>;
  config: Config;
  stdin: CliIO['stdin'];
}

interface Command {
  words: string;
  usage: string;
  summary: string;
  /** Subcommand flags this command accepts (besides --json and the common options). */
  flags: string[];
  op: OperationName;
  args(ctx: Context): Promise<Record<string, unknown>>;
  text(result: unknown, args: Record<string, unknown>): string;
}

/** Declares a command with its result type checked against the operation it runs. */
function command<N extends OperationName>(
  c: Omit<Command, 'op' | 'text'> & { op: N; text(result: OperationResult<N>, args: Record<string, unknown>): string },
): Command {
  return c as Command;
}

function need(ctx: Context, flag: string): string {
  const v = ctx.flags.get(flag);
  if (typeof v !== 'string') throw new UsageError(`"${ctx.words}" needs --${flag}`);
  return v;
}

async function readPassword(ctx: Context): Promise<string> {
  const given = ctx.flags.get('password');
  const fromStdin = ctx.flags.get('password-stdin') === true;
  if (given !== undefined && fromStdin) throw new UsageError('give either --password or --password-stdin, not both');
  if (typeof given === 'string') return given;
  if (!fromStdin) throw new UsageError(`"${ctx.words}" needs --password or --password-stdin`);
  const text = await readText(ctx.stdin, PASSWORD_STDIN_MAX, 'standard input', `more than a password (at most ${PASSWORD_MAX} characters)`);
  // `echo pw | ivtd …` and here-docs end with a newline that is not part of the password.
  return text.replace(/\r?\n$/, '');
}

/** Room for PASSWORD_MAX characters of four bytes each and a line end. */
const PASSWORD_STDIN_MAX = 16 * 1024;

function parseKind(ctx: Context): 'prebid' | 'reporting' {
  const v = need(ctx, 'kind');
  if (v !== 'prebid' && v !== 'reporting') throw new UsageError(`--kind must be prebid or reporting, got "${v}"`);
  return v;
}

function parseGrace(ctx: Context): number {
  const v = ctx.flags.get('grace');
  if (v === undefined) return ctx.config.keyGrace;
  const max = OPTIONS.keyGrace.max;
  // Seconds, or a duration as --imp-ttl takes (1h, 30m, 2d), like every other time flag.
  const ms = typeof v === 'string' && /[smhd]$/i.test(v.trim()) ? parseDuration(v) : null;
  const n = ms !== null && ms % 1000 === 0 ? ms / 1000 : typeof v === 'string' ? parseWholeNumber(v) : undefined;
  if (!isWholeNumberIn(n, 0, max)) {
    throw new UsageError(`--grace must be a duration such as 1h, 30m or 2d, or whole seconds, from 0 to ${max / 86400}d, got "${String(v)}"`);
  }
  return n;
}

/** --file PATH, or "-" for standard input. */
async function readFileFlag(ctx: Context): Promise<string> {
  const path = need(ctx, 'file');
  const tooLarge = `more than any policy (at most ${MAX_ENTRIES} entries)`;
  if (path === '-') return readText(ctx.stdin, POLICY_BODY_LIMIT, 'standard input', tooLarge);
  try {
    return await readText(fileChunks(path), POLICY_BODY_LIMIT, `--file ${path}`, tooLarge);
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`cannot read --file ${path}: ${(e as Error).message}`);
  }
}

/** A CSV's entries; a problem in it is a usage error naming the line. */
function csvEntries(text: string): unknown[] {
  try {
    return parsePolicyCsv(text);
  } catch (e) {
    // The CSV's own faults already begin with where they are ("line 3: …"): said once.
    // "line 2.value" is the model's path: said as a person reads the file, "line 2, column value".
    if (e instanceof PolicyError) {
      const where = e.field.replace(/^(line \d+)\.(\w+)$/, '$1, column $2');
      const own = e.message.startsWith(`${e.field} `) || e.message.startsWith(`${e.field}:`);
      throw new UsageError(`--file ${where}${own ? e.message.slice(e.field.length) : `: ${e.message}`}`);
    }
    throw e;
  }
}

/**
 * The entry of `policy add` / `policy remove` from its flags, checked here so a fault names
 * the flag (--kind), not the JSON API's path (entries[0].kind).
 */
function flagEntry(ctx: Context, withAction: boolean): Record<string, string> {
  const raw: Record<string, string> = { kind: need(ctx, 'kind'), value: need(ctx, 'value') };
  if (withAction) raw.action = need(ctx, 'action');
  try {
    parseEntry(raw, 'entry', { actionOptional: !withAction });
  } catch (e) {
    if (!(e instanceof PolicyError)) throw e;
    const flag = `--${e.field.replace(/^entry\.?/, '') || 'value'}`;
    const own = e.message.startsWith(`${e.field} `) || e.message.startsWith(`${e.field}:`);
    throw new UsageError(own ? `${flag}${e.message.slice(e.field.length)}` : `${flag}: ${e.message}`);
  }
  return raw;
}

function policyText(p: StoredPolicy & { customer_id: string }): string {
  const lines = [
    `Policy of customer ${p.customer_id} (version ${p.version}${p.updated_at ? `, changed ${p.updated_at}` : ''})`,
    `  medium from   ${p.medium ?? `${DEFAULT_THRESHOLDS.medium} (default)`}`,
    `  high from     ${p.high ?? `${DEFAULT_THRESHOLDS.high} (default)`}`,
    `  entries       ${p.entries.length}`,
  ];
  for (const e of p.entries) lines.push(`  ${e.action.padEnd(5)} ${e.kind.padEnd(12)} ${e.value}`);
  return lines.join('\n') + '\n';
}

/** "1 entry", "3 entries" (with an adjective: "1 new entry"). */
function entriesText(n: number, adjective = ''): string {
  return `${n} ${adjective}${n === 1 ? 'entry' : 'entries'}`;
}

function keyLine(k: CustomerListing['keys'][number]): string {
  return `${k.kind.padEnd(9)} ${k.key_prefix}…  ${k.expires_at ? `until ${k.expires_at}` : 'current'}`;
}

function listText(customers: CustomerListing[]): string {
  if (customers.length === 0) return 'No customers yet. Create one with: ivtd customer create --name NAME --username USER --password-stdin\n';
  return customers
    .map((c) => {
      const users = c.users.map((u) => (u.disabled ? `${u.username} (disabled)` : u.username)).join(', ') || '-';
      const keys = c.keys.map(keyLine).join('\n               ') || '-';
      return [
        c.name,
        `  customer_id  ${c.customer_id}`,
        `  partner_id   ${c.partner_id}`,
        `  created      ${c.created_at}`,
        `  users        ${users}`,
        `  keys         ${keys}`,
      ].join('\n');
    })
    .join('\n\n')
    .concat('\n');
}

const COMMANDS: Command[] = [
  command({
    words: 'customer create',
    usage: 'customer create --name NAME --username USER (--password PW | --password-stdin) [--json]',
    summary: 'Create a customer with its first dashboard user and its pre-bid and reporting keys.',
    flags: ['name', 'username', 'password', 'password-stdin'],
    op: 'customer.create',
    args: async (ctx) => ({ name: need(ctx, 'name'), username: need(ctx, 'username'), password: await readPassword(ctx) }),
    text: (r, a) =>
      [
        `Created customer "${String(a.name)}".`,
        `  customer_id    ${r.customer_id}   (reporting API username)`,
        `  partner_id     ${r.partner_id}   (pre-bid parameter p)`,
        `  username       ${r.username}   (dashboard login)`,
        `  prebid key     ${r.prebid_key}   (pre-bid parameter k)`,
        `  reporting key  ${r.reporting_key}   (reporting API password)`,
        'The keys are shown only now; ivtd stores only their hashes.',
        '',
      ].join('\n'),
  }),
  command({
    words: 'customer list',
    usage: 'customer list [--json]',
    summary: 'List customers with their users and the prefixes of their live keys.',
    flags: [],
    op: 'customer.list',
    args: async () => ({}),
    text: (r) => listText(r.customers),
  }),
  command({
    words: 'key rotate',
    usage: 'key rotate --customer REF --kind prebid|reporting [--grace DURATION] [--json]',
    summary: 'Issue a new key; the old one keeps working for --grace (1h, 2d or seconds; default --key-grace; 0 revokes it now).',
    flags: ['customer', 'kind', 'grace'],
    op: 'key.rotate',
    args: async (ctx) => ({ customer: need(ctx, 'customer'), kind: parseKind(ctx), graceSeconds: parseGrace(ctx) }),
    text: (r, a) => {
      const prev =
        r.previous_expires_at === null
          ? `There was no previous ${r.kind} key.`
          : a.graceSeconds === 0
            ? `The previous ${r.kind} key stopped working now.`
            : `The previous ${r.kind} key works until ${r.previous_expires_at}.`;
      return `New ${r.kind} key for customer ${r.customer_id}:\n  ${r.key}\n${prev}\n`;
    },
  }),
  command({
    words: 'user add',
    usage: 'user add --customer REF --username USER (--password PW | --password-stdin) [--json]',
    summary: 'Add a dashboard user to a customer.',
    flags: ['customer', 'username', 'password', 'password-stdin'],
    op: 'user.add',
    args: async (ctx) => ({ customer: need(ctx, 'customer'), username: need(ctx, 'username'), password: await readPassword(ctx) }),
    text: (r) => `Added user "${r.username}" to customer ${r.customer_id}.\n`,
  }),
  command({
    words: 'user passwd',
    usage: 'user passwd --username USER (--password PW | --password-stdin) [--json]',
    summary: "Set a user's password; the user's sessions end.",
    flags: ['username', 'password', 'password-stdin'],
    op: 'user.passwd',
    args: async (ctx) => ({ username: need(ctx, 'username'), password: await readPassword(ctx) }),
    text: (r) => `Changed the password of "${r.username}".\n`,
  }),
  command({
    words: 'user disable',
    usage: 'user disable --username USER [--json]',
    summary: 'Stop a user from logging in; the user\'s sessions end.',
    flags: ['username'],
    op: 'user.disable',
    args: async (ctx) => ({ username: need(ctx, 'username') }),
    text: (r) => `Disabled user "${r.username}".\n`,
  }),
  command({
    words: 'user enable',
    usage: 'user enable --username USER [--json]',
    summary: 'Let a disabled user log in again.',
    flags: ['username'],
    op: 'user.enable',
    args: async (ctx) => ({ username: need(ctx, 'username') }),
    text: (r) => `Enabled user "${r.username}".\n`,
  }),
  command({
    words: 'policy show',
    usage: 'policy show --customer REF [--json]',
    summary: "Print a customer's policy: band thresholds and allow/deny entries (docs/policy.md).",
    flags: ['customer'],
    op: 'policy.show',
    args: async (ctx) => ({ customer: need(ctx, 'customer') }),
    text: (r) => policyText(r),
  }),
  command({
    words: 'policy set',
    usage: 'policy set --customer REF --file PATH|- [--json]',
    summary: 'Replace the whole policy with a JSON file {"medium", "high", "entries": [{"kind", "value", "action"}]}.',
    flags: ['customer', 'file'],
    op: 'policy.set',
    args: async (ctx) => {
      const text = withoutBom(await readFileFlag(ctx));
      let policy: unknown;
      try {
        policy = JSON.parse(text);
      } catch (e) {
        throw new UsageError(`--file is not valid JSON: ${(e as Error).message}`);
      }
      // JSON.parse keeps the last of a key written twice ("medium" given twice: one is ignored).
      const fault = jsonFault(text, policy as JsonValue, DOCUMENT_LIMITS);
      if (fault !== null) throw new UsageError(`--file: ${fault}`);
      return { customer: need(ctx, 'customer'), policy };
    },
    text: (r) => `Policy of customer ${r.customer_id} set: ${entriesText(r.entries)}.\n`,
  }),
  command({
    words: 'policy add',
    usage: 'policy add --customer REF --kind KIND --value VALUE --action allow|deny [--json]',
    summary: 'Add one entry (KIND: ip, ua, ua_substring, app, domain, publisher, seller, ssai), or change its action.',
    flags: ['customer', 'kind', 'value', 'action'],
    op: 'policy.add',
    args: async (ctx) => ({ customer: need(ctx, 'customer'), entries: [flagEntry(ctx, true)] }),
    text: (r) => `${r.added === 1 ? 'Added the entry' : 'Changed the entry'}; the policy of ${r.customer_id} has ${entriesText(r.entries)}.\n`,
  }),
  command({
    words: 'policy remove',
    usage: 'policy remove --customer REF --kind KIND --value VALUE [--json]',
    summary: 'Remove one entry.',
    flags: ['customer', 'kind', 'value'],
    op: 'policy.remove',
    args: async (ctx) => ({ customer: need(ctx, 'customer'), entries: [flagEntry(ctx, false)] }),
    text: (r) => `${r.removed === 1 ? 'Removed the entry' : 'No such entry (nothing changed)'}; the policy of ${r.customer_id} has ${entriesText(r.entries)}.\n`,
  }),
  command({
    words: 'policy import',
    usage: 'policy import --customer REF --file PATH|- [--replace] [--json]',
    summary: 'Add the entries of a CSV file (header kind,action,value); --replace makes them the whole list (thresholds kept).',
    flags: ['customer', 'file', 'replace'],
    op: 'policy.import',
    args: async (ctx) => ({ customer: need(ctx, 'customer'), entries: csvEntries(await readFileFlag(ctx)), replace: ctx.flags.get('replace') === true }),
    text: (r, a) => `${a.replace ? 'Replaced the list' : `Added ${entriesText(r.added, 'new ')}`}; the policy of ${r.customer_id} has ${entriesText(r.entries)}.\n`,
  }),
  command({
    words: 'policy export',
    usage: 'policy export --customer REF [--json]',
    summary: "Print a customer's entries as CSV (kind,action,value), the format policy import reads.",
    flags: ['customer'],
    op: 'policy.show',
    args: async (ctx) => ({ customer: need(ctx, 'customer') }),
    text: (r) => policyToCsv(r.entries),
  }),
];

/** Flags of `ivtd systemd-unit` (besides the serve options it bakes into ExecStart). */
const SYSTEMD_UNIT_FLAGS = ['user', 'binary'];

/** Flags that take no value. */
const SWITCHES = new Set(['password-stdin', 'replace']);
const VALUE_FLAGS = new Set([...COMMANDS.flatMap((c) => c.flags).filter((f) => !SWITCHES.has(f)), ...SYSTEMD_UNIT_FLAGS]);

/** `ivtd reload`: what SIGHUP does, asked over the control socket, with its outcome. */
const EXPLAIN_USAGE = {
  usage: "explain 'QUERY' [--file BIDREQUEST.json|-] [--json]",
  summary: 'Why a lookup answers as it does (reason codes, categories, signals), judged by the running server:\n' +
    "      QUERY is a lookup's query string (p=…&k=…&ip=…&ua=…); with --file the BidRequest of an OpenRTB lookup.",
};

const RELOAD_USAGE = {
  usage: 'reload [--json]',
  summary:
    'Make the server running on the data dir re-read its config and data files, as on SIGHUP,\n' +
    '      and report the outcome: exit 0 when applied, 1 when refused (with the reason) or when no server runs.',
} as const;

/** Commands handled outside the COMMANDS table, with the flags each accepts (besides the common options). */
const OTHER_COMMANDS: Record<string, readonly string[]> = {
  '': [],
  serve: [],
  'systemd-unit': SYSTEMD_UNIT_FLAGS,
  'data update': ['json'],
  'data status': ['json'],
  reload: ['json'],
};

export interface CommandLine {
  /** The subcommand words joined by a space ('' for a bare `ivtd`); 'help' or 'version' for those. */
  line: string;
  flags: Map<string, string | true>;
  options: ReturnType<typeof parseArgs>['options'];
  /** The table command, when it is one. */
  cmd: Command | undefined;
  /** `ivtd explain QUERY`: the lookup's query string. */
  query?: string;
}

/** Parses a command line and checks that each flag belongs to its command; UsageError otherwise. Runs nothing. */
export function parseCommandLine(argv: string[]): CommandLine {
  const { words, flags, options } = parseArgs(argv, VALUE_FLAGS, SWITCHES);
  if (flags.get('version') === true) return { line: 'version', flags, options, cmd: undefined };
  if (flags.get('help') === true || words[0] === 'help') {
    // `ivtd customer --help`, `ivtd help key rotate`: that command's (or group's) usage alone.
    const asked = (words[0] === 'help' ? words.slice(1) : words).join(' ');
    return { line: asked === '' ? 'help' : `help ${asked}`, flags, options, cmd: undefined };
  }
  const line = words.join(' ');
  if (words[0] === 'explain') {
    for (const f of flags.keys()) if (f !== 'json' && f !== 'file') throw new UsageError(`unknown flag --${f} for "explain"`);
    if (words.length !== 2) throw new UsageError(`"explain" takes one lookup query string, quoted: ivtd ${EXPLAIN_USAGE.usage}`);
    return { line: 'explain', flags, options, cmd: undefined, query: words[1]!.replace(/^\?/, '') };
  }
  const own = OTHER_COMMANDS[line];
  if (own !== undefined) {
    for (const f of flags.keys()) if (!own.includes(f)) throw new UsageError(`unknown flag --${f} for "${line || 'serve'}"`);
    return { line, flags, options, cmd: undefined };
  }
  const cmd = COMMANDS.find((c) => c.words === line);
  if (!cmd) throw new UsageError(`unknown command "${line}"`);
  for (const f of flags.keys()) {
    if (f !== 'json' && !cmd.flags.includes(f)) throw new UsageError(`unknown flag --${f} for "${cmd.words}"`);
  }
  return { line, flags, options, cmd };
}

export const VERSION: string = pkg.version;

export function helpText(): string {
  const cmds = COMMANDS.map((c) => `  ivtd ${c.usage}\n      ${c.summary}`).join('\n');
  return `ivtd ${VERSION} — ad-verification (invalid traffic) service

Usage:
  ivtd [serve] [options]
      Serve pre-bid lookups, the account API, the dashboard and the reporting API (the default).
${cmds}
  ivtd systemd-unit [--user USER] [--binary PATH] [serve options]
      Print a hardened systemd unit running "PATH serve [serve options]" (default binary
      ${DEFAULT_BINARY}; without --user systemd allocates a user: DynamicUser=yes).
  ivtd ${DATA_USAGE.update.usage}
      ${DATA_USAGE.update.summary}
  ivtd ${DATA_USAGE.status.usage}
      ${DATA_USAGE.status.summary}
  ivtd ${RELOAD_USAGE.usage}
      ${RELOAD_USAGE.summary}
  ivtd ${EXPLAIN_USAGE.usage}
      ${EXPLAIN_USAGE.summary}
  ivtd help | --help
  ivtd --version [--json]
      Version, build date and the dates of the embedded data.

REF is a customer_id, a partner_id or the username of one of the customer's users.
While a server runs on the data dir, commands go to it over <data-dir>/ivtd.sock;
otherwise they open the database directly. --json prints one JSON object on stdout.
Exit status: 0 success, 1 failure (not found, conflict, store busy), 2 invalid usage or value.

Options (every subcommand; flag > environment > config file > default):
${optionsHelp()}
`;
}

/** Every command's usage and summary, the table's and the others, for per-command help. */
function usages(): Array<{ words: string; usage: string; summary: string }> {
  return [
    { words: 'serve', usage: '[serve] [options]', summary: 'Serve pre-bid lookups, the account API, the dashboard and the reporting API (the default).' },
    ...COMMANDS,
    { words: 'systemd-unit', usage: 'systemd-unit [--user USER] [--binary PATH] [serve options]', summary: `Print a hardened systemd unit running "PATH serve [serve options]" (default binary ${DEFAULT_BINARY}).` },
    { words: 'data update', ...DATA_USAGE.update },
    { words: 'data status', ...DATA_USAGE.status },
    { words: 'reload', ...RELOAD_USAGE },
    { words: 'explain', ...EXPLAIN_USAGE },
  ];
}

/**
 * The usage of the commands `asked` names (`customer`: every customer command; `key rotate`:
 * that one), with a pointer to the options; null when it names none (the whole help then).
 */
export function commandHelp(asked: string): string | null {
  const found = usages().filter((c) => c.words === asked || c.words.startsWith(`${asked} `));
  if (found.length === 0) return null;
  const lines = found.map((c) => `  ivtd ${c.usage}\n      ${c.summary}`).join('\n');
  return `Usage:\n${lines}\n\nREF is a customer_id, a partner_id or the username of one of the customer's users.\nEvery command also takes the common options (--data-dir, --config…): "ivtd help" lists them all.\n`;
}

/** Runs the operation in the server that owns the data dir, or on the store directly when none is running. */
async function execute(op: OperationName, args: Record<string, unknown>, dataDir: string): Promise<unknown> {
  try {
    return await sendControl(dataDir, op, args);
  } catch (e) {
    if (!(e instanceof ControlUnavailableError)) throw e;
  }
  // Only creating a customer may start a new database; anything else on a missing one is a wrong --data-dir.
  if (op !== 'customer.create' && !existsSync(join(dataDir, DB_FILE))) {
    throw new StoreError('not_found', `no ivtd database in ${dataDir} (check --data-dir)`);
  }
  const store = await Store.open(dataDir);
  try {
    return await runOperation(store, op, args);
  } finally {
    await store.close();
  }
}

/** Exit code and message for an error; a stack only for the unexpected ones. */
function report(e: unknown, io: CliIO): number {
  if (e instanceof UsageError || e instanceof ConfigError || e instanceof UnitError) {
    io.stderr.write(`ivtd: ${e.message}\nRun "ivtd help" for usage.\n`);
    return 2;
  }
  if (e instanceof SourcesError) {
    // A mistake in the sources file, named by its key: the command's usage would not help.
    io.stderr.write(`ivtd: ${e.message}\n`);
    return 2;
  }
  if (e instanceof StoreError) {
    io.stderr.write(`ivtd: ${e.message}\n`);
    return e.code === 'invalid' ? 2 : 1;
  }
  if (e instanceof TlsError) {
    // A --tls-cert/--tls-key that cannot be read or used: a value not allowed, said with its file.
    io.stderr.write(`ivtd: ${e.message}\n`);
    return 2;
  }
  if (e instanceof StoreLockedError || e instanceof ControlError || e instanceof LockBusyError || e instanceof ListenError) {
    io.stderr.write(`ivtd: ${e.message}\n`);
    return 1;
  }
  const err = e as NodeJS.ErrnoException;
  // System errors (EACCES, ENOSPC, EADDRINUSE…) are about the environment, not a bug.
  io.stderr.write(`ivtd: ${typeof err?.code === 'string' ? err.message : (err?.stack ?? String(e))}\n`);
  return 1;
}

export async function runCli(argv: string[], io: CliIO): Promise<number> {
  for (const w of unknownEnvWarnings(process.env)) io.stderr.write(`ivtd: ${w}\n`);
  try {
    const { line, flags, options, cmd, query } = parseCommandLine(argv);
    const json = flags.get('json') === true;
    if (line === 'version') {
      const info = versionInfo();
      io.stdout.write(json ? JSON.stringify(info) + '\n' : formatVersion(info));
      return 0;
    }
    if (line === 'help') {
      io.stdout.write(helpText());
      return 0;
    }
    if (line.startsWith('help ')) {
      const own = commandHelp(line.slice(5));
      if (own === null) {
        io.stderr.write(`ivtd: no command "${line.slice(5)}"; every command:\n`);
        io.stdout.write(helpText());
        return 2;
      }
      io.stdout.write(own);
      return 0;
    }
    if (line === '' || line === 'serve') {
      // First, in the process's first turn: before any thread but the main one and V8's
      // exists (src/runtime/malloc-arenas.ts). Only the server lives long enough to need it.
      limitMallocArenasAtStart();
      const config = resolveConfig(options);
      const { serve } = await import('../server/serve.ts');
      // SIGHUP re-resolves the config the same way (the file and environment may have changed).
      await serve(config, () => resolveConfigAsync(options));
      return 0;
    }
    if (line === 'systemd-unit') {
      const user = flags.get('user');
      const binary = flags.get('binary');
      io.stdout.write(
        systemdUnit({
          binary: typeof binary === 'string' ? binary : DEFAULT_BINARY,
          user: typeof user === 'string' ? user : undefined,
          options,
          version: VERSION,
        }),
      );
      return 0;
    }
    if (line === 'data update' || line === 'data status') {
      const config = resolveConfig(options);
      if (line === 'data status') {
        const st = dataStatus(config);
        io.stdout.write(json ? JSON.stringify(st) + '\n' : statusText(st));
        return 0;
      }
      const u = await dataUpdate(config);
      io.stdout.write(json ? JSON.stringify(u) + '\n' : updateText(u));
      // A failed source is a failure of the command, though the others were applied.
      return u.report.items.some((i) => i.result === 'failed') || (u.server !== null && !u.server.reloaded) ? 1 : 0;
    }
    if (line === 'reload') return await reloadServer(resolveConfig(options), json, io);
    if (line === 'explain') return await explainCommand(resolveConfig(options), query ?? '', flags, io);
    if (!cmd) throw new UsageError(`unknown command "${line}"`);
    const config = resolveConfig(options);
    const ctx: Context = { words: cmd.words, flags, config, stdin: io.stdin };
    const args = await cmd.args(ctx);
    const result = await execute(cmd.op, args, config.dataDir);
    io.stdout.write(json ? JSON.stringify(result) + '\n' : cmd.text(result, args));
    return 0;
  } catch (e) {
    return report(e, io);
  }
}

/** `ivtd explain`: the running server judges the lookup with its data, keys and history; without one, that is said (exit 1). */
async function explainCommand(config: Config, query: string, flags: Map<string, string | true>, io: CliIO): Promise<number> {
  const file = flags.get('file');
  let body: string | null = null;
  if (typeof file === 'string') {
    const limit = 64 * 1024;
    body = file === '-' ? await readText(io.stdin, limit, 'standard input', 'more than a bid request (64 KB)') : await readText(fileChunks(file), limit, `--file ${file}`, 'more than a bid request (64 KB)').catch((e: Error) => {
      if (e instanceof UsageError) throw e;
      throw new UsageError(`cannot read --file ${file}: ${e.message}`);
    });
  }
  let r: Explained;
  try {
    r = (await sendControl(config.dataDir, 'lookup.explain', { query, body })) as Explained;
  } catch (e) {
    if (!(e instanceof ControlUnavailableError)) throw e;
    io.stderr.write(`ivtd: no ivtd server is running on ${config.dataDir} (${e.socketPath} does not answer): explain judges a lookup with the running server's data and keys; start it, or ask GET /v1/account/explain\n`);
    return 1;
  }
  if (flags.get('json') === true) {
    io.stdout.write(JSON.stringify(r) + '\n');
    return 0;
  }
  const band = r.response?.botRisk;
  const lines = [
    `Answer ${r.status}${band ? `: band ${band.band} (score ${band.score})` : `: ${r.response?.error ?? ''} ${r.response?.message ?? ''}`.trimEnd()}`,
  ];
  if (r.transaction) lines.push(`  transaction   ${r.transaction}${r.category ? ` (category ${r.category})` : ''}`);
  if (r.reasons?.length) lines.push(`  reasons       ${r.reasons.join(', ')}`);
  for (const c of r.categories ?? []) lines.push(`    ${c.category.padEnd(18)} ${c.reasons.join(', ')}`);
  if (r.signals?.uaConsistency) lines.push(`  UA            ${r.signals.uaConsistency}`);
  if (r.signals?.schainError) lines.push(`  schain        ${r.signals.schainError}`);
  io.stdout.write(lines.join('\n') + '\n');
  return 0;
}

interface Explained {
  status: number;
  transaction?: string | null;
  category?: string | null;
  reasons?: string[];
  categories?: Array<{ category: string; reasons: string[] }>;
  signals?: { uaConsistency?: string; schainError?: string } | null;
  response?: { botRisk?: { band: string; score: number }; error?: string; message?: string };
}

/** `ivtd reload`: only a running server can reload; without one there is nothing to do, and that is said (exit 1). */
async function reloadServer(config: Config, json: boolean, io: CliIO): Promise<number> {
  let r: ReloadOutcome;
  try {
    // Reading large MMDB files can take a while; the server answers when the swap is done.
    r = await sendControl(config.dataDir, 'server.reload', {}, { timeoutMs: 120_000 });
  } catch (e) {
    if (!(e instanceof ControlUnavailableError)) throw e;
    const message = `no ivtd server is running on ${config.dataDir} (${e.socketPath} does not answer): nothing was reloaded; the next start reads the config and data files`;
    if (json) io.stdout.write(JSON.stringify({ ok: false, errors: [message], changed: [], restart: [] }) + '\n');
    io.stderr.write(`ivtd: ${message}\n`);
    return 1;
  }
  if (json) io.stdout.write(JSON.stringify(r) + '\n');
  if (!r.ok) {
    io.stderr.write(`ivtd: reload refused, the server keeps its running config and data: ${r.errors.join('; ')}\n`);
    return 1;
  }
  if (!json) {
    const lines = ['Reloaded: the server applied the config and data files.'];
    const named = (keys: string[]) => keys.map((k) => (Object.hasOwn(OPTIONS, k) ? `--${OPTIONS[k as keyof typeof OPTIONS].flag}` : k)).join(', ');
    if (r.changed.length) lines.push(`  changed now:             ${named(r.changed)}`);
    if (r.restart.length) lines.push(`  changed, need a restart: ${named(r.restart)}`);
    io.stdout.write(lines.join('\n') + '\n');
  }
  return 0;
}
