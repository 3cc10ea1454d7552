// `ivtd systemd-unit`: every hardening directive the service relies on, serve options
// baked into ExecStart, refusals of values that would break the unit, and (where the
// host has it) `systemd-analyze verify` on the output.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCli } from '../../src/cli/commands.ts';
import { cacheDirCandidates, claimPrivateDir } from '../../src/runtime/cache-dir.ts';
import { execArg } from '../../src/ops/systemd.ts';
import { runIvtd } from '../cli/run-cli.ts';

const scratch = mkdtempSync(join(tmpdir(), 'ivtd-unit-'));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

async function unit(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['systemd-unit', ...args], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: (async function* () {})(),
  });
  return { code, stdout, stderr };
}

/** Section → key → values (a key may repeat). Comments and blank lines dropped. */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const out = new Map<string, Map<string, string[]>>();
  let section: Map<string, string[]> | undefined;
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const s = /^\[(\w+)\]$/.exec(line);
    if (s) {
      section = new Map();
      out.set(s[1]!, section);
      continue;
    }
    const i = line.indexOf('=');
    if (!section || i <= 0) throw new Error(`unexpected unit line: ${line}`);
    const k = line.slice(0, i);
    section.set(k, [...(section.get(k) ?? []), line.slice(i + 1)]);
  }
  return out;
}

const one = (u: Map<string, Map<string, string[]>>, section: string, key: string) => u.get(section)?.get(key)?.join('\n');

t.test('the default unit: DynamicUser, state and cache dirs, hardening, signals', async (t) => {
  const r = await unit([]);
  t.equal(r.code, 0, r.stderr);
  const u = parseUnit(r.stdout);
  t.same([...u.keys()], ['Unit', 'Service', 'Install']);
  const want: Record<string, string> = {
    Type: 'exec',
    ExecStart: '/usr/local/bin/ivtd serve',
    ExecReload: '/bin/kill -HUP $MAINPID',
    KillSignal: 'SIGTERM',
    TimeoutStopSec: '20',
    Restart: 'on-failure',
    RestartSec: '2',
    DynamicUser: 'yes',
    StateDirectory: 'ivtd',
    CacheDirectory: 'ivtd',
    LimitNOFILE: '1048576',
    ProtectSystem: 'strict',
    ProtectHome: 'yes',
    PrivateTmp: 'yes',
    NoNewPrivileges: 'yes',
    CapabilityBoundingSet: '',
    RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
  };
  for (const [k, v] of Object.entries(want)) t.equal(one(u, 'Service', k), v, k);
  t.notOk(u.get('Service')!.has('User'), 'no fixed user with DynamicUser');
  t.notOk(u.get('Service')!.has('MemoryDenyWriteExecute'), "V8's JIT needs W+X memory");
  t.notOk(u.get('Service')!.has('ReadWritePaths'), 'nothing writable beyond the state/cache dirs');
  t.equal(one(u, 'Install', 'WantedBy'), 'multi-user.target');
  t.match(r.stdout, /sudo systemctl enable --now ivtd/, 'the install commands are in the header');
});

t.test('--user, --binary and serve options go into the unit', async (t) => {
  const r = await unit(['--user', 'ivtd', '--binary', '/opt/ivtd/bin/ivtd', '--host', '0.0.0.0', '--threads', '2', '--mmdb-country', 'geo/GeoLite2-Country.mmdb']);
  t.equal(r.code, 0, r.stderr);
  const u = parseUnit(r.stdout);
  t.equal(one(u, 'Service', 'User'), 'ivtd');
  t.equal(one(u, 'Service', 'Group'), 'ivtd');
  t.notOk(u.get('Service')!.has('DynamicUser'));
  t.equal(
    one(u, 'Service', 'ExecStart'),
    `/opt/ivtd/bin/ivtd serve --host 0.0.0.0 --threads 2 --mmdb-country ${resolve('geo/GeoLite2-Country.mmdb')}`,
    'options in OPTIONS order, paths absolute',
  );

  const low = parseUnit((await unit(['--prebid-port', '80'])).stdout);
  t.equal(one(low, 'Service', 'AmbientCapabilities'), 'CAP_NET_BIND_SERVICE', 'a port below 1024 gets the one capability it needs');
  t.equal(one(low, 'Service', 'CapabilityBoundingSet'), 'CAP_NET_BIND_SERVICE');
  const lowMetrics = parseUnit((await unit(['--metrics-port', '91'])).stdout);
  t.equal(one(lowMetrics, 'Service', 'AmbientCapabilities'), 'CAP_NET_BIND_SERVICE', 'the metrics port too');

  const dd = parseUnit((await unit(['--user', 'ivtd', '--data-dir', '/srv/ivtd'])).stdout);
  t.equal(one(dd, 'Service', 'ReadWritePaths'), '/srv/ivtd', 'an explicit data dir is made writable');
  t.equal(one(dd, 'Service', 'ExecStart'), '/usr/local/bin/ivtd serve --data-dir /srv/ivtd');
});

t.test("this host's IVTD_* environment does not leak into the unit", async (t) => {
  const r = await runIvtd(['systemd-unit'], { env: { IVTD_THREADS: '9', IVTD_HOST: '10.1.1.1' } });
  t.equal(r.code, 0, r.stderr);
  t.equal(one(parseUnit(r.stdout), 'Service', 'ExecStart'), '/usr/local/bin/ivtd serve');
});

t.test('values that would make a broken unit are refused with exit 2', async (t) => {
  for (const args of [['--binary', 'ivtd'], ['--user', 'Bad User'], ['--threads', '0'], ['--prebid-port', 'x'], ['--nope', '1']]) {
    const r = await unit(args);
    t.equal(r.code, 2, args.join(' '));
    t.equal(r.stdout, '');
    t.match(r.stderr, /^ivtd: /);
  }
});

t.test('ExecStart arguments escape systemd specifiers, variables and spaces', async (t) => {
  t.equal(execArg('/usr/bin/ivtd'), '/usr/bin/ivtd');
  t.equal(execArg('/data/100%'), '/data/100%%');
  t.equal(execArg('/a b/$HOME'), '"/a b/$$HOME"');
  t.equal(execArg('say "hi"\\'), '"say \\"hi\\"\\\\"');
  t.throws(() => execArg('a\nb'), { name: 'UnitError' });
});

const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const noAnalyze = analyze.error || analyze.status !== 0 ? 'systemd-analyze is not installed here' : false;

t.test('systemd-analyze verify accepts the unit', { skip: noAnalyze }, async (t) => {
  // verify needs the ExecStart binary to exist: use this node as a stand-in.
  const cases = [
    [],
    ['--user', 'ivtd', '--host', '::', '--prebid-port', '443', '--data-dir', join(scratch, 'data dir 100%'), '--threads', '4'],
  ];
  for (const extra of cases) {
    const r = await unit(['--binary', process.execPath, ...extra]);
    t.equal(r.code, 0, r.stderr);
    const dir = mkdtempSync(join(scratch, 'verify-'));
    const file = join(dir, 'ivtd.service');
    writeFileSync(file, r.stdout);
    const v = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
    t.equal(v.status, 0, `verify exit code (${extra.join(' ') || 'defaults'})`);
    // verify exits 0 even for unknown keys or unparsable values; it only warns about them.
    const warnings = `${v.stdout}${v.stderr}`.split('\n').filter((l) => l.includes('ivtd.service'));
    t.same(warnings, [], `no warnings about the unit (${extra.join(' ') || 'defaults'})`);
  }
});

t.test("the native-addon cache uses systemd's CacheDirectory first, resolved through its symlink", async (t) => {
  // Under DynamicUser, /var/cache/ivtd is a symlink into /var/cache/private/.
  const real = join(scratch, 'private', 'ivtd');
  mkdirSync(real, { recursive: true, mode: 0o755 });
  const link = join(scratch, 'ivtd-link');
  symlinkSync(real, link);
  const c = cacheDirCandidates({ CACHE_DIRECTORY: link, XDG_CACHE_HOME: '/x' });
  t.equal(c[0], realpathSync(real), 'the real folder, so its owner and mode are what is checked');
  t.equal(c[1], '/x/ivtd', 'then XDG_CACHE_HOME');
  t.equal(claimPrivateDir(c[0]!), null, 'usable: ours, tightened to 0700');
  t.equal(cacheDirCandidates({ CACHE_DIRECTORY: 'relative' })[0], cacheDirCandidates({})[0], 'a relative CACHE_DIRECTORY is ignored');
});
