// Filters changed by a reload, without a restart (docs/filter.md "Change filters without a
// restart"): settings in place on the filter's thread (kept-alive connections stay, a request
// under way finishes under the settings it started with), a new upstream, a filter added, one
// removed (its request under way answered, then its port refuses), one moved to another port,
// and bad reloads refused whole with the reason. The reload here is reloadAll, the function
// SIGHUP and `ivtd reload` run; the last test sends a real `ivtd serve` SIGHUP while a
// kept-alive client sends throughout (monitor → block), then a bad `ivtd reload`.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer } from 'node:net';
import { resolveConfig, resolveConfigAsync, type Config, type OptionKey } from '../../src/base/config.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { reloadAll } from '../../src/server/reload.ts';
import { Store } from '../../src/store/db.ts';
import { createCustomer, type CreatedCustomer } from '../../src/store/customers.ts';
import { SHAPES } from '../helpers/ortb-shapes.ts';
import { freePort } from '../helpers/ports.ts';
import { until } from '../helpers/until.ts';
import { startServe } from '../helpers/serve-process.ts';
import { runIvtd } from '../cli/run-cli.ts';
import { BID_RESPONSE, startUpstream, type Upstream } from './upstream.ts';
import { keptAlive, postRequest } from './kept-alive.ts';

const SPIDER = JSON.stringify((JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'ortb', 'supplemental', 'known-spider-nbr-3.json'), 'utf8')) as { request: unknown }).request);
const CLEAN = SHAPES['web banner, site and publisher, schain in source']! as Record<string, unknown>;
/** Without its tmax (120 ms), so the filter's own timeout applies. */
const UNTIMED = JSON.stringify({ ...CLEAN, tmax: undefined });

let up: Upstream;
let up2: Upstream;
let dir: string;
let file: string;
let customer: CreatedCustomer;
/** pbs's settings as the file has them, changed test after test. */
let pbs: Entry;
let server: RunningServer;
let config: Config;

/** A `filters` entry of the config file. */
type Entry = Record<string, string | number>;
const entry = (name: string, more: Entry = {}): Entry => ({ name, port: 0, upstream: up.url, partner: customer.partner_id, nobid: 'nbr', timeout: 1500, ...more });
const writeFilters = (filters: unknown[]) => writeFileSync(file, JSON.stringify({ filters }));
/** The flags the server started with (the --filter-* options' filter "fixed" among them); a reload reads the file again with them. */
const flags = (): Partial<Record<OptionKey, string>> => ({
  config: file, dataDir: dir, host: '127.0.0.1', prebidPort: '0', apiPort: '0', reportingPort: '0', metricsPort: '0', logLevel: 'silent',
  filterPort: '0', filterUpstream: up.url, filterPartner: customer.partner_id, filterName: 'fixed',
});
const reload = () => reloadAll(server, config, () => resolveConfigAsync(flags(), {}), 'test');

async function metric(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of (await server.metrics.text()).split('\n')) {
    if (line.startsWith(name + '{') && want.every((w) => line.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

/** Whether a connection to 127.0.0.1:port is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

async function post(port: number, path: string, body: string): Promise<{ status: number; text: string; nobid: string | null }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  return { status: r.status, text: await r.text(), nobid: r.headers.get('x-ivtd-nobid') };
}

t.before(async () => {
  up = await startUpstream();
  up2 = await startUpstream();
  dir = mkdtempSync(join(tmpdir(), 'ivtd-filter-reload-'));
  file = join(dir, 'ivtd.json');
  const store = await Store.open(dir);
  customer = await createCustomer(store, { name: 'Filtered Co', username: 'filtered', password: 'correct horse battery' });
  await store.close();
  pbs = entry('pbs', { mode: 'monitor', timeout: 5000 });
  // Three filters at start (the flags' "fixed", pbs and spare): the memory plan holds three, so a
  // reload may run three at most; the first reload removes spare, the one adding dsp brings it back to three.
  writeFilters([pbs, entry('spare')]);
  config = resolveConfig(flags(), {});
  server = await startServer(config);
});
t.teardown(async () => {
  await server?.stop();
  await up?.close();
  await up2?.close();
  rmSync(dir, { recursive: true, force: true });
});


t.test('settings change in place: the connection stays, a request under way finishes under the old ones', async (t) => {
  const port = server.lookups.filterPorts.pbs!;
  const conn = await keptAlive(port);
  t.teardown(() => conn.close());
  const monitored = await conn.ask(postRequest('/', SPIDER));
  t.match(monitored, /^HTTP\/1\.1 200/, 'monitor: the spider is forwarded');
  t.ok(monitored.endsWith(BID_RESPONSE), "the upstream's answer");
  // Under way across the reload: the upstream never answers; its no-bid comes at the old timeout (5 s), in the old form (nbr).
  const other = await keptAlive(port);
  t.teardown(() => other.close());
  const sentAt = Date.now();
  let heldDone = false;
  const held = other.ask(postRequest('/?behave=hang', UNTIMED)).finally(() => (heldDone = true));
  await until('the upstream holds it', async () => up.received.some((r) => r.url.includes('hang')), 3000);

  pbs = { ...pbs, mode: 'block', nobid: '204', timeout: 300 };
  writeFilters([pbs]);
  const out = await reload();
  t.same(out, { ok: true, errors: [], changed: ['filter pbs: mode monitor → block, nobid nbr → 204, timeoutMs 5000 → 300', 'filter spare: removed'], restart: [] });
  t.notOk(heldDone, 'the held request still under way when the reload was done');
  t.same(config.filters.map((f) => [f.name, f.mode]), [['fixed', 'block'], ['pbs', 'block']], 'the running config follows');

  const blocked = await conn.ask(postRequest('/', SPIDER));
  t.match(blocked, /^HTTP\/1\.1 204 No Content\r\n/, 'block: the spider answered no-bid, in the new form (204)');
  t.match(blocked, /X-Ivtd-Nobid: blocked/);
  const t0 = Date.now();
  const late = await conn.ask(postRequest('/?behave=hang', UNTIMED));
  t.match(late, /^HTTP\/1\.1 204[^]*X-Ivtd-Nobid: upstream-timeout/, 'a new request: the new timeout, the new no-bid form');
  t.ok(Date.now() - t0 < 1200, `at the new timeout, 300 ms (${Date.now() - t0} ms)`);
  const old = await held;
  t.match(old, /^HTTP\/1\.1 200 OK[^]*X-Ivtd-Nobid: upstream-timeout[^]*"nbr":1\}$/, 'the request under way: no-bid in the old form (nbr)');
  t.ok(Date.now() - sentAt >= 4900, `at the old timeout, 5 s (${Date.now() - sentAt} ms)`);
  t.notOk(conn.closed || other.closed, 'no connection dropped');
});

t.test("a new upstream: new requests go there, the old one's connections close", async (t) => {
  const port = server.lookups.filterPorts.pbs!;
  const conn = await keptAlive(port);
  t.teardown(() => conn.close());
  t.ok((await conn.ask(postRequest('/', JSON.stringify(CLEAN)))).endsWith(BID_RESPONSE));
  t.ok((await up.connections()) >= 1, 'a kept-alive connection to the first upstream');
  // Forwarded so far: the monitored spider, two requests to the hanging upstream, this one.
  await until('counted', async () => ((await metric('ivtd_filter_requests_total', { filter: 'pbs', outcome: 'forwarded' })) ?? 0) >= 4);
  const before = (await metric('ivtd_filter_requests_total', { filter: 'pbs', outcome: 'forwarded' }))!;

  pbs = { ...pbs, upstream: up2.url, maxSockets: 4 };
  writeFilters([pbs]);
  const out = await reload();
  t.same(out.changed, [`filter pbs: upstream ${up.url} → ${up2.url}, maxSockets 64 → 4`]);
  t.ok((await conn.ask(postRequest('/', JSON.stringify(CLEAN)))).endsWith(BID_RESPONSE), 'answered on the same connection');
  t.equal(up2.received.length, 1, 'by the new upstream');
  await until("the old upstream's connections closed", async () => (await up.connections()) === 0, 3000);
  await until('the series goes on', async () => ((await metric('ivtd_filter_requests_total', { filter: 'pbs', outcome: 'forwarded' })) ?? 0) === before + 1);
  t.notOk(conn.closed);
});

let dspIndex: number;

t.test('a filter added by a reload listens and filters', async (t) => {
  writeFilters([pbs, entry('dsp', { nobid: '204', timeout: 5000 })]);
  const out = await reload();
  const port = server.lookups.filterPorts.dsp;
  t.ok(port !== undefined && port > 0, `listening on ${port}`);
  t.same(out, { ok: true, errors: [], changed: [`filter dsp: added on port ${port}`], restart: [] });
  const blocked = await post(port!, '/', SPIDER);
  t.same([blocked.status, blocked.nobid], [204, 'blocked'], 'a spider: no-bid');
  const clean = await post(port!, '/', JSON.stringify(CLEAN));
  t.equal(clean.text, BID_RESPONSE, 'a clean request: forwarded');
  await until('counted under its name', async () => (await metric('ivtd_filter_requests_total', { filter: 'dsp', outcome: 'blocked' })) === 1);
  t.same(config.filters.map((f) => f.name), ['fixed', 'pbs', 'dsp']);
  dspIndex = server.lookups.filterIndex('dsp')!;
  // A fourth: past what the memory budget was planned for at start, refused whole.
  writeFilters([pbs, entry('dsp', { nobid: '204', timeout: 5000 }), entry('more')]);
  const over = await reload();
  t.equal(over.ok, false, 'a fourth filter: refused');
  t.match(over.errors[0], /4 filters asked, but the memory budget was planned at start for 3 .*restart ivtd to run more/);
  t.same(config.filters.map((f) => f.name), ['fixed', 'pbs', 'dsp'], 'the three keep running');
  t.equal(server.lookups.filterPorts.more, undefined);
  writeFilters([pbs, entry('dsp', { nobid: '204', timeout: 5000 })]);
  await until('its thread reports its heap', async () => (await server.metrics.text()).includes(`thread="${dspIndex}"`));
});

t.test('a filter removed: the request under way is answered, its port then refuses, its thread ends', async (t) => {
  const port = server.lookups.filterPorts.dsp!;
  const conn = await keptAlive(port);
  t.teardown(() => conn.close());
  // The upstream answers it after 3 s, within dsp's 5 s.
  let done = false;
  const inflight = conn.ask(postRequest('/?behave=wait3000', UNTIMED)).finally(() => (done = true));
  await until('the upstream has it', async () => up.received.some((r) => r.url.includes('wait3000')), 3000);
  writeFilters([pbs]);
  const out = await reload();
  t.same(out.changed, ['filter dsp: removed']);
  t.notOk(done, 'still under way when the reload was done');
  await until('its port refuses new connections', () => refused(port), 1000);
  const answer = await inflight;
  t.match(answer, /^HTTP\/1\.1 200 OK[^]*Connection: close/, 'the request under way: answered, the connection closed after it');
  t.ok(answer.endsWith(BID_RESPONSE));
  await until('the connection closed', async () => conn.closed, 2000);
  t.equal(server.lookups.filterPorts.dsp, undefined);
  t.same(config.filters.map((f) => f.name), ['fixed', 'pbs']);
  await until('its thread ended', async () => !(await server.metrics.text()).includes(`thread="${dspIndex}"`), 8000);
  // Its clean request of the test before, and the one answered after the removal.
  await until("the upstream's time of the request answered after the removal counted too", async () => (await metric('ivtd_filter_upstream_duration_seconds_count', { filter: 'dsp' })) === 2, 3000);
  t.equal(await metric('ivtd_filter_requests_total', { filter: 'dsp', outcome: 'blocked' }), 1, 'its counts stay');
});

t.test('same name, another port: the old port closes, the new one serves', async (t) => {
  const old = server.lookups.filterPorts.pbs!;
  const port = await freePort();
  pbs = { ...pbs, port };
  writeFilters([pbs]);
  const out = await reload();
  t.same(out.changed, [`filter pbs: port 0 → ${port}`]);
  t.equal(server.lookups.filterPorts.pbs, port);
  await until('the old port refuses', () => refused(old), 1000);
  const blocked = await post(port, '/', SPIDER);
  t.same([blocked.status, blocked.nobid], [204, 'blocked'], 'with its settings');
});

t.test('a bad reload changes nothing and says why', async (t) => {
  const ports = { ...server.lookups.filterPorts };
  const filters = structuredClone(config.filters);
  const blocker = createServer();
  const taken = await freePort();
  await new Promise<void>((r) => blocker.listen(taken, '127.0.0.1', r));
  t.teardown(() => blocker.close());
  const extraPort = await freePort();
  const monitorAgain = { ...pbs, mode: 'monitor' };
  const p2 = await freePort();
  const cases: Array<[string, unknown[], RegExp]> = [
    ['a bad URL', [monitorAgain, entry('x', { upstream: 'ftp://127.0.0.1/bid' })], /filters\[1\]: "upstream" must be an http:\/\/ URL/],
    ['an unknown partner', [monitorAgain, entry('x', { partner: '123e4567-e89b-12d3-a456-426614174000' })], /filter x: no customer has partner ID 123e4567/],
    ['a name twice', [monitorAgain, entry('pbs')], /two filters are named "pbs"/],
    ['a port twice', [monitorAgain, entry('x', { port: p2 }), entry('y', { port: p2 })], new RegExp(`filters "x" and "y" both listen on port ${p2}`)],
    ["the options' filter's name", [monitorAgain, entry('fixed')], /is named "fixed" like the --filter-\* options' filter, which the config file cannot change/],
    // (pbs left out: three filters at most, as planned at start)
    ['a port in use', [entry('extra', { port: extraPort }), entry('busy', { port: taken })], new RegExp(`filter busy: port ${taken} on 127.0.0.1 is in use`)],
  ];
  for (const [what, list, why] of cases) {
    writeFilters(list);
    const out = await reload();
    t.equal(out.ok, false, `${what}: refused`);
    t.match(out.errors.join('; '), why, `${what}: says why`);
    t.same(server.lookups.filterPorts, ports, `${what}: the same filters listen`);
    t.same(config.filters, filters, `${what}: the running config unchanged`);
  }
  t.ok(await refused(extraPort), 'the good filter beside the busy port never listened');
  // Data that does not load: a filter already started for the reload is stopped again.
  writeFileSync(join(dir, 'hosting-asns.txt'), 'AS-not-a-number  hosting  # broken\n');
  writeFilters([monitorAgain, entry('extra', { port: extraPort })]);
  const out = await reload();
  rmSync(join(dir, 'hosting-asns.txt'));
  t.equal(out.ok, false);
  t.match(out.errors.join('; '), /hosting-asns\.txt/, 'refused for the data file');
  t.same(server.lookups.filterPorts, ports, 'the filter it started is gone again');
  await until('its port closed', () => refused(extraPort), 1000);
  t.same(config.filters, filters);
  const still = await post(ports.pbs!, '/', SPIDER);
  t.same([still.status, still.nobid], [204, 'blocked'], 'pbs still blocks');
  // And a good reload after them all.
  writeFilters([monitorAgain]);
  t.same((await reload()).changed, ['filter pbs: mode block → monitor']);
  t.equal((await post(ports.pbs!, '/', SPIDER)).text, BID_RESPONSE, 'monitor now');
});

t.test('ivtd serve: SIGHUP turns monitor into block under a kept-alive client; a bad `ivtd reload` says why', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'ivtd-filter-hup-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const store = await Store.open(home);
  const c = await createCustomer(store, { name: 'Hup Co', username: 'hup', password: 'correct horse battery' });
  await store.close();
  const cfg = join(home, 'ivtd.json');
  const port = await freePort();
  const edge = { name: 'edge', port, upstream: up.url, partner: c.partner_id, mode: 'monitor', nobid: 'nbr' };
  writeFileSync(cfg, JSON.stringify({ filters: [edge] }));
  const p = startServe(['--config', cfg, '--data-dir', home, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0']);
  t.teardown(() => {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });
  await p.waitFor(/"msg":"ivtd ready"/, 0, 60_000);
  t.match(p.out(), new RegExp(`"filter":"edge","host":"127.0.0.1","port":${port},[^\\n]*"mode":"monitor"[^\\n]*"msg":"filter listening"`), 'the start names the filter and its settings');

  // One kept-alive connection, one spider after another, throughout.
  const conn = await keptAlive(port);
  t.teardown(() => conn.close());
  const kinds: string[] = [];
  let sent = 0;
  let stop = false;
  let failure: Error | null = null;
  const loop = (async () => {
    while (!stop) {
      sent++;
      const a = await conn.ask(postRequest('/', SPIDER));
      kinds.push(a.endsWith(BID_RESPONSE) ? 'monitor' : /^HTTP\/1\.1 200 OK[^]*X-Ivtd-Nobid: blocked[^]*"nbr":3\}$/.test(a) ? 'block' : `other: ${a.slice(0, 60)}`);
      await new Promise((r) => setTimeout(r, 5)); // a steady trickle, not a flood
    }
  })().catch((e: Error) => void (failure = e));
  await until('answers before', async () => kinds.length >= 20, 10_000);
  writeFileSync(cfg, JSON.stringify({ filters: [{ ...edge, mode: 'block' }] }));
  const beforeHup = kinds.length;
  const mark = p.out().length;
  p.child.kill('SIGHUP');
  await p.waitFor(/"filter":"edge","before":\{"mode":"monitor"\},"after":\{"mode":"block"\},"msg":"filter changed"/, mark);
  const sentAfter = sent;
  await until('answers after', async () => kinds.length >= sentAfter + 20, 10_000);
  stop = true;
  await loop;
  t.equal(failure, null, 'every request answered');
  t.notOk(conn.closed, 'the connection was never dropped');
  t.same(kinds.filter((k) => k !== 'monitor' && k !== 'block'), [], 'each answer by monitor or by block rules');
  t.ok(kinds.slice(0, beforeHup).every((k) => k === 'monitor'), `before the SIGHUP: monitor (${beforeHup})`);
  t.ok(kinds.slice(sentAfter).every((k) => k === 'block'), `after the reload: block (${kinds.length - sentAfter})`);
  const switched = kinds.indexOf('block');
  t.ok(switched > 0 && kinds.slice(switched).every((k) => k === 'block'), 'one switch, never back');

  writeFileSync(cfg, JSON.stringify({ filters: [{ ...edge, partner: '123e4567-e89b-12d3-a456-426614174000' }] }));
  const bad = await runIvtd(['reload', '--json', '--data-dir', home]);
  t.equal(bad.code, 1, 'refused: exit 1');
  t.match(JSON.parse(bad.stdout), { ok: false, errors: [/filter edge: no customer has partner ID 123e4567/] }, "the answer says why");
  await p.waitFor(/no customer has partner ID[^\n]*"msg":"config reload refused: keeping the running config, data and filters"/, mark);
  const still = await post(port, '/', SPIDER);
  t.same([still.status, still.nobid], [200, 'blocked'], 'the filter runs on as it was');
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
});
