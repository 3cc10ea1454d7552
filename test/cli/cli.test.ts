import t from 'tap';
import { Readable } from 'node:stream';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Store } from '../../src/store/db.ts';
import { activePrebidKeys, verifyReportingKey } from '../../src/store/api-keys.ts';
import { findUserForLogin } from '../../src/store/logins.ts';
import { hashKey, verifyPassword } from '../../src/base/secrets.ts';
import { runCli, VERSION } from '../../src/cli/commands.ts';
import { runIvtd } from './run-cli.ts';

const UUID_RE = /^[0-9a-f-]{36}$/;

/** Runs the CLI in this process (for the many small usage cases; spawning each costs seconds). */
async function cli(argv: string[], stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: Readable.from([stdin]),
  });
  return { code, stdout, stderr };
}

async function withStore<T>(dir: string, fn: (s: Store) => Promise<T>): Promise<T> {
  const s = await Store.open(dir);
  try {
    return await fn(s);
  } finally {
    s.close();
  }
}

t.test('end to end: create, rotate with grace, rotate without, password from stdin', async (t) => {
  const dir = t.testdir();
  const created = await runIvtd(['customer', 'create', '--name', 'Acme Ads', '--username', 'alice', '--password', 'alice-pass-1', '--json', '--data-dir', dir]);
  t.equal(created.code, 0, created.stderr);
  t.equal(created.stderr, '');
  const c = JSON.parse(created.stdout) as Record<string, string>;
  t.same(Object.keys(c).sort(), ['customer_id', 'partner_id', 'prebid_key', 'reporting_key', 'username']);
  t.match(c.customer_id, UUID_RE);
  t.match(c.partner_id, UUID_RE);
  t.match(c.prebid_key, /^ivp_[A-Za-z0-9_-]{32}$/);
  t.match(c.reporting_key, /^ivr_[A-Za-z0-9_-]{32}$/);
  t.equal(c.username, 'alice');
  t.equal(created.stdout.trim().split('\n').length, 1, 'exactly one JSON line');

  const rotated = await runIvtd(['key', 'rotate', '--customer', c.partner_id!, '--kind', 'prebid', '--grace', '3600', '--json', '--data-dir', dir]);
  t.equal(rotated.code, 0, rotated.stderr);
  const r = JSON.parse(rotated.stdout) as { customer_id: string; kind: string; key: string; previous_expires_at: string };
  t.equal(r.customer_id, c.customer_id);
  t.equal(r.kind, 'prebid');
  t.ok(Date.parse(r.previous_expires_at) > Date.now() + 3500_000, 'old key has about an hour left');

  await withStore(dir, async (s) => {
    const hashes = (await activePrebidKeys(s)).map((k) => k.key_hash).sort();
    t.same(hashes, [hashKey(c.prebid_key!), hashKey(r.key)].sort(), 'old key still active during grace');
  });

  // Default grace comes from the key-grace option (here via the environment).
  const revoked = await runIvtd(['key', 'rotate', '--customer', 'alice', '--kind', 'prebid', '--data-dir', dir], {
    env: { IVTD_KEY_GRACE: '0' },
  });
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(revoked.stdout, /New prebid key for customer .*\n  (ivp_\S+)\nThe previous prebid key stopped working now\./);
  const newest = /\n {2}(ivp_\S+)\n/.exec(revoked.stdout)![1]!;

  const added = await runIvtd(['user', 'add', '--customer', c.customer_id!, '--username', 'bob', '--password-stdin', '--data-dir', dir], {
    stdin: 'bob pass with spaces\n',
  });
  t.equal(added.code, 0, added.stderr);
  t.match(added.stdout, /Added user "bob"/);

  await withStore(dir, async (s) => {
    t.same((await activePrebidKeys(s)).map((k) => k.key_hash), [hashKey(newest)], 'grace 0: only the newest key is active');
    t.equal(await verifyReportingKey(s, c.customer_id!, c.reporting_key!), true, 'reporting key untouched');
    const bob = await findUserForLogin(s, 'bob');
    t.equal(await verifyPassword('bob pass with spaces', bob!.password_hash), true, 'trailing newline stripped, spaces kept');
  });
});

t.test('usage errors exit 2 and name the problem, failures exit 1, no stack traces', async (t) => {
  const dir = t.testdir();
  const spawned = await runIvtd(['customer', 'create', '--name', 'X', '--passwrd', 'abcdefgh', '--data-dir', dir]);
  t.equal(spawned.code, 2);
  t.match(spawned.stderr, /unknown flag --passwrd/);
  t.equal(spawned.stdout, '');

  const notFound = await runIvtd(['user', 'disable', '--username', 'ghost', '--data-dir', dir]);
  t.equal(notFound.code, 1);
  t.match(notFound.stderr, /no ivtd database in/, 'a wrong data dir is not silently created');
  t.notMatch(notFound.stderr, /\n\s+at /, 'no stack trace');

  const cases: Array<[string[], number, RegExp]> = [
    [['customer', 'create', '--name', 'X', '--username', 'xyz'], 2, /needs --password or --password-stdin/],
    [['customer', 'create', '--username', 'xyz', '--password', 'abcdefgh'], 2, /needs --name/],
    [['customer', 'create', '--name', 'X', '--username', 'xyz', '--password', 'abcdefgh', '--password-stdin'], 2, /not both/],
    [['customer', 'create', '--name', 'X', '--username', 'x y', '--password', 'abcdefgh'], 2, /username must be/],
    [['customer', 'create', '--name', 'X', '--username', 'xyz', '--password', 'short'], 2, /at least 8/],
    [['customer', 'create', '--name', '--username', 'xyz'], 2, /--name needs a value/],
    [['customer', 'list', '--kind', 'prebid'], 2, /unknown flag --kind for "customer list"/],
    [['customer', 'delete'], 2, /unknown command "customer delete"/],
    [['key', 'rotate', '--customer', 'a', '--kind', 'both'], 2, /--kind must be prebid or reporting/],
    [['key', 'rotate', '--customer', 'a', '--kind', 'prebid', '--grace', '-5'], 2, /--grace must be/],
    [['key', 'rotate', '--customer', 'a', '--kind', 'prebid', '--grace', '1.5'], 2, /--grace must be/],
    [['key', 'rotate', '--kind', 'prebid'], 2, /needs --customer/],
    [['user', 'enable'], 2, /needs --username/],
    [['serve', '--json'], 2, /unknown flag --json for "serve"/],
    [['customer', 'list', '--threads', 'many'], 2, /threads must be a whole number/],
    [['customer', 'list', '-x'], 2, /unknown flag -x/],
    [['customer', 'list', '--json=yes'], 2, /--json takes no value/],
  ];
  for (const [argv, code, msg] of cases) {
    const r = await cli([...argv, '--data-dir', dir]);
    t.equal(r.code, code, argv.join(' '));
    t.match(r.stderr, msg, argv.join(' '));
    t.equal(r.stdout, '', 'nothing on stdout');
  }

  // Failures of the operation itself exit 1.
  t.equal((await cli(['customer', 'create', '--name', 'A', '--username', 'alice', '--password', 'abcdefgh', '--data-dir', dir])).code, 0);
  const dup = await cli(['customer', 'create', '--name', 'B', '--username', 'Alice', '--password', 'abcdefgh', '--data-dir', dir]);
  t.equal(dup.code, 1);
  t.match(dup.stderr, /already taken/);
  const ghost = await cli(['key', 'rotate', '--customer', 'ghost', '--kind', 'prebid', '--data-dir', dir]);
  t.equal(ghost.code, 1);
  t.match(ghost.stderr, /no customer with id, partner id or username "ghost"/);
  t.notMatch(ghost.stderr, /\n\s+at /);
});

t.test('list, user management, help and version in text and JSON', async (t) => {
  const dir = t.testdir();
  const created = await cli(['customer', 'create', '--name', 'Acme', '--username', 'alice', '--password-stdin', '--data-dir', dir], 'first-pass\r\n');
  t.equal(created.code, 0, created.stderr);
  t.match(created.stdout, /Created customer "Acme"\.\n {2}customer_id +\S+/);
  t.match(created.stdout, /prebid key +ivp_/);

  t.equal((await cli(['user', 'add', '--customer', 'alice', '--username', 'bob', '--password', 'bob-pass-1', '--data-dir', dir])).code, 0);
  const disabled = await cli(['user', 'disable', '--username', 'BOB', '--json', '--data-dir', dir]);
  t.same(JSON.parse(disabled.stdout), { username: 'bob', disabled: true });
  const passwd = await cli(['user', 'passwd', '--username', 'alice', '--password', 'second-pass', '--data-dir', dir]);
  t.equal(passwd.stdout, 'Changed the password of "alice".\n');

  const listed = await cli(['customer', 'list', '--json', '--data-dir', dir]);
  t.equal(listed.code, 0);
  const { customers } = JSON.parse(listed.stdout) as { customers: Array<{ name: string; users: unknown; keys: Array<{ kind: string }> }> };
  t.equal(customers.length, 1);
  t.equal(customers[0]!.name, 'Acme');
  t.same(customers[0]!.users, [
    { username: 'alice', disabled: false },
    { username: 'bob', disabled: true },
  ]);
  t.same(customers[0]!.keys.map((k) => k.kind), ['prebid', 'reporting']);
  t.notMatch(listed.stdout, /ivp_[A-Za-z0-9_-]{32}|key_hash|password/, 'no secrets listed');

  const text = await cli(['customer', 'list', '--data-dir', dir]);
  t.match(text.stdout, /^Acme\n {2}customer_id/);
  t.match(text.stdout, /users +alice, bob \(disabled\)/);

  await withStore(dir, async (s) => {
    const alice = await findUserForLogin(s, 'alice');
    t.equal(await verifyPassword('second-pass', alice!.password_hash), true);
    t.equal((await findUserForLogin(s, 'bob'))!.disabled, true);
  });
  t.match((await cli(['user', 'enable', '--username', 'bob', '--data-dir', dir])).stdout, 'Enabled user "bob"');

  const help = await cli(['help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /ivtd key rotate --customer REF --kind prebid\|reporting/);
  t.match(help.stdout, /--data-dir/);
  // A command's --help is that command's usage (it printed the whole help: test/cli/words.test.ts).
  t.match((await cli(['customer', 'create', '--help'])).stdout, /^Usage:\n {2}ivtd customer create --name NAME/);
  t.match(await cli(['--version']), { code: 0, stdout: new RegExp(`^ivtd ${VERSION}\n  built `), stderr: '' });

  const version = await runIvtd(['--version']);
  t.match(version.stdout, new RegExp(`^ivtd ${VERSION}\n`));
  t.equal(version.code, 0);
});

/** runCli with stdin given as these chunks, as a pipe delivers them. */
async function cliChunks(argv: string[], chunks: Buffer[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: Readable.from(chunks),
  });
  return { code, stdout, stderr };
}

t.test('standard input and --file: read whole as UTF-8, within a bound, never misread', async (t) => {
  const dir = t.testdir();
  // A character cut between two chunks of the pipe is still one character.
  const pw = Buffer.from('pässwörd-ünïcode\n');
  const cut = pw.indexOf(Buffer.from('ö')) + 1;
  const made = await cliChunks(['customer', 'create', '--name', 'Acme', '--username', 'alice', '--password-stdin', '--json', '--data-dir', dir], [pw.subarray(0, cut), pw.subarray(cut)]);
  t.equal(made.code, 0, made.stderr);
  await withStore(dir, async (s) => {
    const user = await findUserForLogin(s, 'alice');
    t.ok(user && (await verifyPassword('pässwörd-ünïcode', user.password_hash)), 'the password is the characters typed');
  });
  const cases: Array<[string, Buffer[], RegExp]> = [
    ['bytes that are not UTF-8', [Buffer.from([0x70, 0x61, 0x73, 0x73, 0xff, 0x77, 0x6f, 0x72, 0x64, 0x21])], /standard input is not UTF-8 text/],
    ['a password with a control character', [Buffer.from('abc\tdefgh\n')], /password must not contain control characters/],
    ['a password with a carriage return left in it', [Buffer.from('abcdefgh\r')], /password must not contain control characters/],
    ['10 MB on standard input', [Buffer.alloc(10 * 1024 * 1024, 0x61)], /standard input is over 16384 bytes, more than a password/],
  ];
  for (const [what, chunks, msg] of cases) {
    const r = await cliChunks(['user', 'add', '--customer', 'alice', '--username', 'bob', '--password-stdin', '--data-dir', dir], chunks);
    t.equal(r.code, 2, what);
    t.match(r.stderr, msg, what);
  }
  // A policy file is read within the account API's bound, not to the end of whatever it is.
  const huge = await cli(['policy', 'set', '--customer', 'alice', '--file', '/dev/zero', '--data-dir', dir]);
  t.equal(huge.code, 2, '--file /dev/zero ends');
  t.match(huge.stderr, /--file \/dev\/zero is over 16777216 bytes, more than any policy/);
  const latin1 = join(dir, 'latin1.csv');
  writeFileSync(latin1, Buffer.concat([Buffer.from('kind,action,value\r\nua_substring,deny,Caf'), Buffer.from([0xe9]), Buffer.from('Bot\r\n')]));
  const notUtf8 = await cli(['policy', 'import', '--customer', 'alice', '--file', latin1, '--data-dir', dir]);
  t.equal(notUtf8.code, 2);
  t.match(notUtf8.stderr, /--file .*latin1\.csv is not UTF-8 text/, 'a Latin-1 file is refused, not stored with U+FFFD');
  // A JSON policy with a key twice: JSON.parse kept the last, so one of the two was ignored.
  const twice = join(dir, 'twice.json');
  writeFileSync(twice, '{"medium": 0.4, "high": 0.8, "medium": 0.6, "entries": []}');
  const dup = await cli(['policy', 'set', '--customer', 'alice', '--file', twice, '--data-dir', dir]);
  t.equal(dup.code, 2, 'a key twice');
  t.match(dup.stderr, /--file: duplicate key "medium" at character 29/);
  // An editor on Windows starts the file with a byte order mark.
  writeFileSync(twice, '\ufeff{"medium": 0.4, "high": 0.8, "entries": []}');
  const bom = await cli(['policy', 'set', '--customer', 'alice', '--file', twice, '--json', '--data-dir', dir]);
  t.equal(bom.code, 0, bom.stderr);
  t.match(JSON.parse(bom.stdout), { entries: 0 }, 'a byte order mark is skipped');
  const shown = await cli(['policy', 'show', '--customer', 'alice', '--json', '--data-dir', dir]);
  t.match(JSON.parse(shown.stdout), { medium: 0.4, high: 0.8 }, 'and the policy set is the file\'s');
});

t.test('an option given twice is refused, as a command\'s own flags are: which one was meant is not for ivtd to guess', async (t) => {
  const dir = t.testdir();
  for (const argv of [
    ['customer', 'list', '--data-dir', dir, '--data-dir', `${dir}/other`],
    ['customer', 'list', `--threads=2`, '--threads', '3', '--data-dir', dir],
    ['systemd-unit', '--prebid-port', '0', '--prebid-port=0', '--data-dir', dir],
  ]) {
    const r = await cli(argv);
    t.equal(r.code, 2, argv.join(' '));
    t.match(r.stderr, /--(data-dir|threads|prebid-port) given more than once/, argv.join(' '));
  }
});
