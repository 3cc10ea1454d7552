// Every option is checked against its allowed values when the config is resolved, from a
// flag, an IVTD_* variable or the config file alike; a bad IVTD_LOG_LEVEL is refused with a
// message instead of breaking every command while it loads.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, OPTIONS, envName, resolveConfig, type OptionKey } from '../src/base/config.ts';
import { runIvtd } from './cli/run-cli.ts';

/** For each option: values it must refuse (as text), and one it must take. */
const CASES: Record<OptionKey, { bad: string[]; good: string }> = {
  dataDir: { bad: [''], good: '/var/lib/ivtd' },
  host: { bad: ['', 'not a host', 'host_name', '-lead.example', 'a..b'], good: '::1' },
  prebidPort: { bad: ['-1', '65536', '80.5', 'http', ''], good: '8080' },
  apiPort: { bad: ['65536', 'x'], good: '0' },
  reportingPort: { bad: ['70000'], good: '9900' },
  metricsHost: { bad: ['', 'two words', 'x_y'], good: '0.0.0.0' },
  metricsPort: { bad: ['-5', '65536', '99a'], good: '0' },
  threads: { bad: ['0', '65', 'two'], good: '4' },
  memoryBudget: { bad: ['31', '1e3', '219'], good: '220' }, // 220: the least with --threads 1 (below)
  config: { bad: [''], good: '' }, // the file itself: its own tests below
  mmdbCountry: { bad: [''], good: '/x/country.mmdb' },
  mmdbAsn: { bad: [''], good: '/x/asn.mmdb' },
  mmdbAnonymousIp: { bad: [''], good: '/x/anon.mmdb' },
  flushInterval: { bad: ['0', '3601'], good: '10' },
  retentionDays: { bad: ['0', '36501'], good: '30' },
  accessTokenTtl: { bad: ['0', '86401'], good: '60' },
  refreshTokenTtl: { bad: ['59'], good: '60' },
  keyGrace: { bad: ['-1', '7776001'], good: '0' },
  reportRate: { bad: ['0', '100001'], good: '5' },
  reportBurst: { bad: ['0'], good: '5' },
  logLevel: { bad: ['verbose', 'INFO', 'warning', ' info'], good: 'debug' },
  clickhouseUrl: { bad: ['clickhouse:8123', 'http://ch:8123/a/b', 'ftp://ch', 'http://ch:8123/?x=1'], good: 'http://ch:8123/fleet' },
  role: { bad: ['relay', 'Edge', 'all '], good: 'all' },
  dataRefresh: { bad: ['', '1m', 'hourly', '31d', '-6h'], good: '6h' },
  dataSources: { bad: [''], good: '/x/sources.json' },
  maxmindAccountId: { bad: [''], good: '123456' },
  maxmindLicenseKey: { bad: [''], good: 'key' },
  tlsCert: { bad: [''], good: '/x/cert.pem' }, // the pair and its files: test/http/tls.test.ts
  tlsKey: { bad: [''], good: '/x/key.pem' },
  impTtl: { bad: ['', '30s', '2d', 'soon'], good: '30m' },
  filterPort: { bad: ['-1', '65536', 'x'], good: '9902' },
  filterUpstream: { bad: ['127.0.0.1:8000', 'https://pbs.example/openrtb2/auction', 'http://u:p@pbs.example/', 'ftp://x'], good: 'http://127.0.0.1:8000/openrtb2/auction' },
  filterPartner: { bad: ['acme', '123e4567-e89b-12d3-a456-42661417400'], good: '123e4567-e89b-12d3-a456-426614174000' },
  filterName: { bad: ['', 'two words', 'é'], good: 'pbs-eu' },
  filterMode: { bad: ['Block', 'off'], good: 'monitor' },
  filterNobid: { bad: ['200', 'NBR'], good: 'nbr' },
  filterTimeout: { bad: ['0', '60001', '300ms'], good: '120' },
  trustedProxies: { bad: ['', 'proxy.example', '10.0.0.0/33', '::1/129', '10.0.0.1,', '10.0.0.0/x'], good: '10.0.0.0/8, ::1,192.168.1.7' },
  crawlerDns: { bad: ['', 'dns.example', '10.0.0.1:99999', 'on', '10.0.0.1,', '[::1'], good: '127.0.0.1:5353,[::1]:53,9.9.9.9' },
  crawlerDnsQps: { bad: ['0', '-1', '1.5', '10001'], good: '50' },
};

t.test('every option has cases here (a new option needs its rule and a test)', async (t) => {
  t.same(Object.keys(CASES).sort(), Object.keys(OPTIONS).sort());
});

t.test('bad values are refused from a flag, the environment and the config file, naming the option', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'ivtd.json');
  for (const key of Object.keys(CASES) as OptionKey[]) {
    if (key === 'config') continue; // read before the other options; see the tests below
    const flag = OPTIONS[key].flag;
    for (const bad of CASES[key].bad) {
      t.throws(() => resolveConfig({ [key]: bad }, {}), { constructor: ConfigError, message: new RegExp(`^--${flag}: ${flag} `) }, `--${flag} ${JSON.stringify(bad)}`);
      if (bad !== '') {
        // An empty variable counts as unset (systemd units often set Environment=X=).
        t.throws(() => resolveConfig({}, { [envName(key)]: bad }), { constructor: ConfigError, message: new RegExp(`^${envName(key)}: ${flag} `) }, `${envName(key)}=${JSON.stringify(bad)}`);
      }
      writeFileSync(file, JSON.stringify({ [key]: bad }));
      t.throws(() => resolveConfig({ config: file }, {}), { constructor: ConfigError, message: new RegExp(`config file key ${key}: ${flag} `) }, `config file ${key}: ${JSON.stringify(bad)}`);
    }
    const good = CASES[key].good;
    t.doesNotThrow(() => resolveConfig({ [key]: good }, {}), `--${flag} ${good} is taken`);
  }
});

t.test('--memory-budget holds the process: the least grows with --threads, the default with it', async (t) => {
  // 184 MB + 36 per lookup thread: V8 heaps 64 + 24, C heaps 24 + 12, DuckDB 48, tables 48.
  t.equal(resolveConfig({}, {}).memoryBudget, 256, 'the default, --threads 1');
  t.equal(resolveConfig({ threads: '2' }, {}).memoryBudget, 256, '--threads 2: the default is also the least');
  t.equal(resolveConfig({ threads: '4' }, {}).memoryBudget, 328, '--threads 4 without a budget: the default rises to the least');
  t.equal(resolveConfig({ threads: '8' }, {}).memoryBudget, 472, '--threads 8: 472');
  t.equal(resolveConfig({ threads: '8', memoryBudget: '1024' }, {}).memoryBudget, 1024, 'a larger budget given: kept');
  const refused = /^--memory-budget: memory-budget 256 MB is less than ivtd takes with --threads 4 before any traffic: 328 MB \(V8 heaps 64 \+ 24 per lookup thread, C heaps 24 \+ 12 per lookup thread, DuckDB's pool 48, the smallest tables 48\)\. Give --memory-budget 328 or more, or fewer --threads\.$/;
  t.throws(() => resolveConfig({ threads: '4', memoryBudget: '256' }, {}), { constructor: ConfigError, message: refused }, 'given too low for the threads: refused, saying what it takes');
  t.throws(() => resolveConfig({}, { IVTD_THREADS: '4', IVTD_MEMORY_BUDGET: '300' }), { constructor: ConfigError, message: /^IVTD_MEMORY_BUDGET: memory-budget 300 MB is less than .* Give --memory-budget 328 or more/ }, 'from the environment');
  t.same(resolveConfig({ threads: '4' }, { IVTD_MEMORY_BUDGET: '' }).memoryBudget, 328, 'an empty variable is no budget given');
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'ivtd.json');
  writeFileSync(file, JSON.stringify({ threads: 3, memoryBudget: 291 }));
  t.throws(() => resolveConfig({ config: file }, {}), { message: /^config file key memoryBudget: memory-budget 291 MB .* Give --memory-budget 292 or more/ }, 'from the config file');
  writeFileSync(file, JSON.stringify({ threads: 3, memoryBudget: 292 }));
  t.equal(resolveConfig({ config: file }, {}).memoryBudget, 292, 'the least itself is taken');
});

t.test('config file values have JSON types: numbers for whole-number options, strings for the rest', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'ivtd.json');
  const load = (o: object) => {
    writeFileSync(file, JSON.stringify(o));
    return resolveConfig({ config: file }, {});
  };
  t.match(load({ threads: 3, prebidPort: '9000', logLevel: 'warn', host: 'localhost' }), { threads: 3, prebidPort: 9000, logLevel: 'warn', host: 'localhost' });
  t.throws(() => load({ threads: true }), /config file key threads: threads must be a whole number, got true/);
  t.throws(() => load({ threads: 2.5 }), /threads must be a whole number/);
  t.throws(() => load({ logLevel: 30 }), /config file key logLevel: log-level must be a string, got 30/);
  t.throws(() => load({ host: ['127.0.0.1'] }), /host must be a string/);
  t.throws(() => load({ dataDir: {} }), /data-dir must be a string/);
  t.throws(() => load({ verbose: true }), /unknown key "verbose"/);
});

t.test('a flag overrides a bad variable; a bad variable alone is refused', async (t) => {
  t.equal(resolveConfig({ logLevel: 'warn' }, { IVTD_LOG_LEVEL: 'verbose' }).logLevel, 'warn', 'the flag decides; the variable is not read');
  t.throws(() => resolveConfig({}, { IVTD_LOG_LEVEL: 'verbose' }), /IVTD_LOG_LEVEL: log-level must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"/);
});

t.test('an unknown IVTD_LOG_LEVEL: commands that need no config work, the others say what is wrong', async (t) => {
  const env = { IVTD_LOG_LEVEL: 'verbose' };
  const version = await runIvtd(['--version'], { env });
  t.equal(version.code, 0, version.stderr);
  t.match(version.stdout, /^ivtd /);
  const help = await runIvtd(['help'], { env });
  t.equal(help.code, 0, help.stderr);
  const list = await runIvtd(['customer', 'list', '--data-dir', t.testdir()], { env });
  t.equal(list.code, 2, 'invalid value: exit 2');
  t.equal(list.stdout, '');
  t.match(list.stderr, /^ivtd: IVTD_LOG_LEVEL: log-level must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"\n/);
  t.notMatch(list.stderr, /\n\s+at /, 'no stack trace');
  const serve = await runIvtd(['serve', '--data-dir', t.testdir()], { env });
  t.equal(serve.code, 2, 'serve refuses to start');
  t.match(serve.stderr, /IVTD_LOG_LEVEL: log-level must be one of/);
});

t.test('two listeners on one port of one address are refused, naming both; other addresses and port 0 are not', async (t) => {
  const clash = /--(\S+)-port and --(\S+)-port \(IVTD_\S+, IVTD_\S+\) are both (\d+): each listener needs a port of its own/;
  const ok = (flags: Partial<Record<OptionKey, string>>, env: NodeJS.ProcessEnv, what: string) => t.doesNotThrow(() => resolveConfig(flags, env), what);
  t.throws(() => resolveConfig({ apiPort: '9898' }, {}), { constructor: ConfigError, message: /^--prebid-port and --api-port \(IVTD_PREBID_PORT, IVTD_API_PORT\) are both 9898/ }, 'the API on the pre-bid port');
  t.throws(() => resolveConfig({}, { IVTD_REPORTING_PORT: '9899' }), { message: /^--api-port and --reporting-port .* both 9899/ }, 'from the environment too');
  t.throws(() => resolveConfig({ metricsPort: '9900' }, {}), { message: clash }, 'metrics on the reporting port, both on loopback');
  ok({ metricsPort: '9900', metricsHost: '127.0.0.2' }, {}, 'metrics on another address may take the same port');
  t.throws(() => resolveConfig({ metricsPort: '9900', metricsHost: '127.0.0.2', host: '0.0.0.0' }, {}), { message: clash }, '0.0.0.0 covers every IPv4 address');
  ok({ metricsPort: '9900', metricsHost: '::1', host: '0.0.0.0' }, {}, 'but not an IPv6 one');
  t.throws(() => resolveConfig({ metricsPort: '9900', metricsHost: '::1', host: '::' }, {}), { message: clash }, ':: covers every address');
  ok({ prebidPort: '0', apiPort: '0', reportingPort: '0', metricsPort: '0' }, {}, 'port 0, the kernel\'s pick, may repeat');
  const edge = { role: 'edge', clickhouseUrl: 'http://ch:8123' };
  ok({ ...edge, apiPort: '9898', reportingPort: '9898' }, {}, 'an edge opens no account or reporting port: theirs do not clash');
  t.throws(() => resolveConfig({ ...edge, metricsPort: '9898' }, {}), { message: clash }, 'an edge\'s pre-bid and metrics ports do');
});

t.test('the config file: a byte order mark is skipped; a key that only Object.prototype has is unknown', async (t) => {
  const dir = t.testdir();
  const bom = join(dir, 'bom.json');
  writeFileSync(bom, '\ufeff{"threads": 3}');
  t.equal(resolveConfig({ config: bom }, {}).threads, 3, 'a file an editor wrote with a BOM is read');
  for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
    const f = join(dir, `${key}.json`);
    writeFileSync(f, `{"${key}": {"threads": 9}}`);
    t.throws(() => resolveConfig({ config: f }, {}), { constructor: ConfigError, message: new RegExp(`unknown key "${key}"`) }, key);
  }
});

t.test('the config file: a key written twice is refused, not read as its last value', async (t) => {
  const dir = t.testdir();
  const f = join(dir, 'twice.json');
  writeFileSync(f, '{\n  "threads": 3,\n  "dataDir": "/var/lib/ivtd",\n  "threads": 4\n}\n');
  t.throws(() => resolveConfig({ config: f }, {}), { constructor: ConfigError, message: `config file ${f}: duplicate key "threads" at character 50` });
  writeFileSync(f, '\ufeff{"threads": 3, "threads": 3}');
  t.throws(() => resolveConfig({ config: f }, {}), { message: /duplicate key "threads" at character 15$/ }, 'even with the same value; the character counted after a byte order mark');
  writeFileSync(f, '{"dataDir": "/srv/a:b", "logLevel": "info"}');
  t.equal(resolveConfig({ config: f }, {}).dataDir, '/srv/a:b', 'a colon inside a value is no key');
});

t.test('filters: the --filter-* options make one, the config file\'s `filters` more; each checked', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'ivtd.json');
  const partner = '123e4567-E89B-12d3-a456-426614174000';
  const load = (o: object, flags: Record<string, string> = {}) => {
    writeFileSync(file, JSON.stringify(o));
    return resolveConfig({ config: file, ...flags }, {});
  };
  t.same(resolveConfig({}, {}).filters, [], 'none by default');
  const one = resolveConfig({ filterPort: '9902', filterUpstream: 'http://127.0.0.1:8000/openrtb2/auction', filterPartner: partner, filterMode: 'monitor' }, {}).filters;
  t.same(one, [{ name: 'filter', port: 9902, upstream: 'http://127.0.0.1:8000/openrtb2/auction', partner: partner.toLowerCase(), mode: 'monitor', nobid: '204', timeoutMs: 300, maxSockets: 64 }], 'the flags: one filter, defaults filled, partner lowercased');
  t.same(resolveConfig({ filterPort: '9902' }, {}).filters, [], 'one flag alone makes none (serve refuses it: test/filter/start.test.ts)');
  const two = load({ filters: [{ name: 'pbs', port: 9903, upstream: 'http://10.0.0.1:8000/openrtb2/auction', partner, nobid: 'nbr', timeout: 150 }, { name: 'dsp', port: '9904', upstream: 'http://10.0.0.2/bid', partner, maxSockets: 8 }] }, { filterPort: '9902', filterUpstream: 'http://127.0.0.1:8000/', filterPartner: partner });
  t.same(two.filters.map((f) => [f.name, f.port, f.nobid, f.timeoutMs, f.maxSockets]), [['filter', 9902, '204', 300, 64], ['pbs', 9903, 'nbr', 150, 64], ['dsp', 9904, '204', 300, 8]], 'the flags\' filter, then the file\'s');
  t.throws(() => load({ filters: {} }), { constructor: ConfigError, message: /key filters must be an array/ });
  t.throws(() => load({ filters: [{ port: 1, upstream: 'http://x/', partner, colour: 'red' }] }), /filters\[0\]: unknown key "colour"/);
  t.throws(() => load({ filters: [{ port: 1, upstream: 'http://x/' }] }), /filters\[0\]: "partner" is required/);
  t.throws(() => load({ filters: [{ port: 1, upstream: 'https://x/', partner }] }), /filters\[0\]: "upstream" must be an http:\/\/ URL/);
  t.throws(() => load({ filters: [{ port: 1, upstream: 'http://x/', partner, mode: 'off' }] }), /"mode" must be one of block, monitor/);
  t.throws(() => load({ filters: [{ port: 1, upstream: 'http://x/', partner, timeout: 0 }] }), /"timeout" must be a whole number from 1 to 60000/);
  t.throws(() => load({ filters: [{ port: 70000, upstream: 'http://x/', partner }] }), /"port" must be a whole number from 0 to 65535/);
  t.throws(() => load({ filters: [{ name: 'a', port: 9, upstream: 'http://x/', partner }, { name: 'a', port: 10, upstream: 'http://x/', partner }] }), /two filters are named "a"/);
  t.throws(() => load({ filters: [{ name: 'a', port: 9, upstream: 'http://x/', partner }, { name: 'b', port: 9, upstream: 'http://x/', partner }] }), /both listen on port 9/);
  t.throws(() => load({ filters: [{ name: 'b', port: 9, upstream: 'http://x/', partner }, { name: 'filter', port: 10, upstream: 'http://x/', partner }] }, { filterPort: '9902', filterUpstream: 'http://127.0.0.1:8000/', filterPartner: partner }), {
    constructor: ConfigError,
    message: `config file ${file} key filters[1] is named "filter" like the --filter-* options' filter, which the config file cannot change (nor a reload: the options hold for the process's life): give the file's filter another name`,
  });
});
