// The CLI's words (issue 58, item 8): flag errors name the flag, not the JSON API's path;
// every time flag takes a duration; `ivtd CMD --help` prints that command; a misspelt
// IVTD_* variable is warned about.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runIvtd } from './run-cli.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-words-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const D = ['--data-dir', dataDir];

t.before(async () => {
  const r = await runIvtd(['customer', 'create', '--name', 'Words', '--username', 'words-admin', '--password', 'correct horse battery', ...D]);
  if (r.code !== 0) throw new Error(r.stderr);
});

t.test('policy flags: the error names the flag, not entries[0].kind', async (t) => {
  const add = ['policy', 'add', '--customer', 'words-admin', ...D];
  const kind = await runIvtd([...add, '--kind', 'bogus', '--value', 'v', '--action', 'deny']);
  t.equal(kind.code, 2);
  t.match(kind.stderr, /^ivtd: --kind must be one of ip, ua/);
  t.notMatch(kind.stderr, /entries\[0\]/, 'no JSON path');
  const action = await runIvtd([...add, '--kind', 'ip', '--value', '192.0.2.1', '--action', 'block']);
  t.match(action.stderr, /^ivtd: --action must be "allow" or "deny"/);
  const value = await runIvtd([...add, '--kind', 'ip', '--value', 'notip', '--action', 'deny']);
  t.match(value.stderr, /^ivtd: --value: "notip" is not an IP address/);
  const remove = await runIvtd(['policy', 'remove', '--customer', 'words-admin', '--kind', 'bogus', '--value', 'v', ...D]);
  t.match(remove.stderr, /^ivtd: --kind must be one of/);
  const csv = join(dataDir, 'bad.csv');
  writeFileSync(csv, 'kind,value,action\nip,zzz,deny\n');
  const imp = await runIvtd(['policy', 'import', '--customer', 'words-admin', '--file', csv, ...D]);
  t.equal(imp.code, 2);
  t.match(imp.stderr, /^ivtd: --file line 2, column value: "zzz" is not an IP address/, 'said as a person reads the file (it was "--file, line 2.value")');
});

t.test('key rotate --grace takes a duration as --imp-ttl does (and still whole seconds)', async (t) => {
  const rotate = (grace: string) => runIvtd(['key', 'rotate', '--customer', 'words-admin', '--kind', 'prebid', '--grace', grace, '--json', ...D]);
  for (const [grace, seconds] of [['1h', 3600], ['90m', 5400], ['2d', 172800], ['600', 600]] as const) {
    const t0 = Date.now();
    const r = await rotate(grace);
    t.equal(r.code, 0, `${grace}: ${r.stderr}`);
    const until = Date.parse(JSON.parse(r.stdout).previous_expires_at);
    t.ok(Math.abs(until - t0 - seconds * 1000) < 60_000, `--grace ${grace}: the old key works ${seconds} s more`);
  }
  const bad = await rotate('1x');
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--grace must be a duration such as 1h, 30m or 2d, or whole seconds, from 0 to 90d, got "1x"/);
  // The options held in seconds take durations too, from the environment as from a flag.
  const env = await runIvtd(['key', 'rotate', '--customer', 'words-admin', '--kind', 'reporting', '--json', ...D], { env: { IVTD_KEY_GRACE: '2h' } });
  t.equal(env.code, 0, env.stderr);
  t.ok(Math.abs(Date.parse(JSON.parse(env.stdout).previous_expires_at) - Date.now() - 7_200_000) < 60_000, 'IVTD_KEY_GRACE=2h');
});

t.test('per-command help: that command or group, not the whole help', async (t) => {
  const whole = await runIvtd(['help']);
  const group = await runIvtd(['customer', '--help']);
  t.equal(group.code, 0);
  t.match(group.stdout, /ivtd customer create/);
  t.match(group.stdout, /ivtd customer list/);
  t.notMatch(group.stdout, /ivtd key rotate|--memory-budget/, 'no other command, no option table');
  t.ok(group.stdout.split('\n').length < whole.stdout.split('\n').length / 4, `${group.stdout.split('\n').length} lines against ${whole.stdout.split('\n').length}`);
  const one = await runIvtd(['help', 'key', 'rotate']);
  t.match(one.stdout, /^Usage:\n {2}ivtd key rotate --customer REF --kind prebid\|reporting \[--grace DURATION\]/);
  const dash = await runIvtd(['key', 'rotate', '-h']);
  t.equal(dash.stdout, one.stdout, '-h after the command: the same');
  const none = await runIvtd(['nosuch', '--help']);
  t.equal(none.code, 2);
  t.match(none.stderr, /no command "nosuch"/);
});

t.test('a misspelt IVTD_ variable is warned about, with the option it may mean', async (t) => {
  const r = await runIvtd(['customer', 'list', ...D], { env: { IVTD_LOG_LEVL: 'debug', IVTD_ZZZ: '1', IVTD_PREBID_KEY: 'ivp_x' } });
  t.equal(r.code, 0);
  t.match(r.stderr, /ivtd: warning: IVTD_LOG_LEVL is not an ivtd setting and is ignored; did you mean IVTD_LOG_LEVEL\?/);
  t.match(r.stderr, /IVTD_ZZZ is not an ivtd setting and is ignored \(ivtd help lists/);
  t.notMatch(r.stderr, /IVTD_PREBID_KEY/, "the dashboard's example variable is not ivtd's to warn about");
  const clean = await runIvtd(['customer', 'list', ...D], { env: { IVTD_LOG_LEVEL: 'debug' } });
  t.notMatch(clean.stderr, /warning/, 'a real option: no warning');
});
