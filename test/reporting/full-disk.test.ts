// Reporting through a full disk (issue 22): nothing answered may go missing from the
// reports, and a failure must never look like success.
// - a stop whose final flush fails spools the counts; the next start replays them;
// - a stop that can spool nothing fails (CountsLostError; `ivtd serve` exits 1, fatal line);
// - as root, on a real 16 MB tmpfs: DuckDB's temp limit is not stuck after a spill on a
//   full disk, a store invalidated by a failed checkpoint is reopened and the writer's
//   pending counts are written once space returns, and `ivtd serve` on a full disk exits 1.
import t, { type Test } from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, closeSync, renameSync, rmSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TUPLE_DIMENSIONS } from '../../src/base/enums.ts';
import { ReportEngine } from '../../src/reporting/engine.ts';
import { listSpoolFiles } from '../../src/reporting/spool-file.ts';
import type { CountRow } from '../../src/counts/tuple.ts';
import { CountsLostError, RollupWriter } from '../../src/reporting/writer.ts';
import { Store } from '../../src/store/db.ts';
import { HOUR_MS } from '../../src/base/time.ts';
import { startTestServer } from '../helpers/server.ts';
import { basic, fixtureQuery, lookup, recentDays, report, withParams } from './client.ts';

const ROOT = join(import.meta.dirname, '..', '..');

function newDir(t: Test, prefix = 'ivtd-full-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Answered lookups (status 200) of `n` made, each with its own pub. */
async function lookups(srv: Awaited<ReturnType<typeof startTestServer>>, n: number): Promise<Map<string, number>> {
  const base = fixtureQuery('residential-desktop-chrome');
  const answered = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const pub = `pub-${i % 7}`;
    await lookup(srv, withParams(base, { pub })); // throws unless answered (200)
    answered.set(pub, (answered.get(pub) ?? 0) + 1);
  }
  return answered;
}

async function reported(srv: Awaited<ReturnType<typeof startTestServer>>, customer: Awaited<ReturnType<typeof startTestServer>>['customer']): Promise<Map<string, number>> {
  const r = await report(srv, { ...recentDays(), group_by: 'pub', limit: '1000' }, { customer });
  return new Map(r.body.rows.map((x: any) => [x.pub, x.total_transactions]));
}

t.test('the store refuses the final flush: the counts are spooled, and the next start reports every answered lookup', async (t) => {
  const dir = newDir(t);
  // An hour-long flush interval: only the shutdown path can write these counts.
  const first = await startTestServer({ flushInterval: 3600 }, dir);
  const answered = await lookups(first, 40);
  await first.server.store.run('ALTER TABLE rollups_daily RENAME TO rollups_away');
  await first.stop(); // resolves: nothing was lost
  t.equal(listSpoolFiles(dir).length, 1, 'a spool file in the data dir');

  // The operator mends the store (here: the table back); the next start replays the file.
  const mend = await Store.open(dir);
  await mend.run('ALTER TABLE rollups_away RENAME TO rollups_daily');
  mend.close();
  const second = await startTestServer({}, dir);
  t.teardown(() => second.stop());
  t.same(await reported(second, first.customer), answered, 'the report shows every answered lookup');
  t.same(listSpoolFiles(dir), [], 'the spool file is gone');
});

t.test('the store refuses the final flush and no spool file can be written: stop() fails with CountsLostError', async (t) => {
  const dir = newDir(t);
  const srv = await startTestServer({ flushInterval: 3600 }, dir);
  await lookups(srv, 5);
  await srv.server.store.run('ALTER TABLE rollups_daily RENAME TO rollups_away');
  // The data dir is no longer a folder at its path (DuckDB keeps its open files).
  const moved = `${dir}-moved`;
  renameSync(dir, moved);
  writeFileSync(dir, 'not a folder');
  t.teardown(() => {
    rmSync(dir, { force: true });
    rmSync(moved, { recursive: true, force: true });
  });
  const e = await srv.stop().then(
    () => null,
    (err: unknown) => err,
  );
  t.ok(e instanceof CountsLostError, 'stop() rejects: the counts are lost, and it says so');
  t.match((e as Error).message, /5 counted transactions/);
});

// ---- On a real tmpfs (root only) ----

function mountTmpfs(dir: string): void {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dir], { stdio: 'ignore' });
}

/** Why these tests cannot run here (false: they can): a tmpfs needs root and the right to mount. */
function tmpfsSkip(): string | false {
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs';
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-tmpfs-probe-'));
  try {
    mountTmpfs(dir);
    execFileSync('umount', [dir], { stdio: 'ignore' });
    return false;
  } catch {
    return 'cannot mount a tmpfs here';
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const skip = tmpfsSkip();

/** A fresh 16 MB tmpfs, unmounted at teardown. */
function tmpfs(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-tmpfs-'));
  mountTmpfs(dir);
  t.teardown(() => {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

const free = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

/** Fills the file system of `dir` until `leave` bytes are free (0: until it refuses a byte). */
function fill(dir: string, leave: number): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'a');
  const block = Buffer.alloc(64 * 1024);
  try {
    for (;;) {
      const room = free(dir) - leave;
      if (leave > 0 && room <= 0) break;
      try {
        writeSync(fd, leave > 0 ? block.subarray(0, Math.min(block.length, room)) : block);
      } catch {
        if (leave > 0) throw new Error('tmpfs full before the filler was written');
        break; // full: now one byte at a time, to the last one
      }
    }
    if (leave === 0) {
      for (;;) {
        try {
          writeSync(fd, Buffer.alloc(1));
        } catch {
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

const SPILL = `CREATE OR REPLACE TEMP TABLE spill AS SELECT md5(range::VARCHAR) || md5(range::VARCHAR) AS a, range AS b FROM range(400000)`;

t.test("tmpfs: a spill on a full disk does not cap DuckDB's temp space for good", { skip }, async (t) => {
  const mnt = tmpfs(t);
  const store = await Store.open(join(mnt, 'data'));
  t.teardown(() => store.close());
  await store.set('memory_limit', "'20MB'");
  await store.set('threads', 1);
  const filler = fill(mnt, 300 * 1024);
  await t.rejects(store.run(SPILL), 'no room to spill while the disk is full');
  rmSync(filler);
  await store.run(SPILL); // DuckDB's own default fixed the limit at 270 KiB at the first spill
  await store.run('DROP TABLE spill');
  t.pass('the same query spills and runs once space is back');
});

const row = (pub: string, total: number): CountRow => ({
  customerId: 'cust',
  hour: Date.now() - (Date.now() % HOUR_MS),
  dims: TUPLE_DIMENSIONS.map((d) => (d === 'pub' ? pub : d === 'adt' ? '1' : d === 'dvt' ? '2' : '')),
  total,
  givt: 0,
  sivt: 0,
});

t.test('tmpfs: a store invalidated by a checkpoint on a full disk is reopened; the writer writes every pending count once space returns', { skip }, async (t) => {
  const mnt = tmpfs(t);
  const store = await Store.open(join(mnt, 'data'));
  t.teardown(() => store.close());
  const w = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 });
  await w.flush();
  // A WAL of some megabytes (a short load), then a disk with 100 KB left.
  await store.run(`CREATE TABLE ballast AS SELECT md5(random()::VARCHAR) || md5(random()::VARCHAR) AS a, range AS b FROM range(100000)`);
  const filler = fill(mnt, 100 * 1024);
  let want = 0;
  for (let i = 0; i < 50; i++) {
    w.add([row(`pub-${i}`, i + 1)]);
    want += i + 1;
  }
  await t.rejects(store.run('CHECKPOINT'), /FATAL|invalidated/, 'the checkpoint cannot be written: DuckDB invalidates the instance');
  await t.rejects(w.flush(), 'flushes fail while the disk is full');
  w.add([row('pub-late', 7)]);
  want += 7;
  await w.flush().catch(() => undefined);
  rmSync(filler);
  await w.flush();
  const engine = new ReportEngine(store, { retentionDays: 400 });
  const today = new Date().toISOString().slice(0, 10);
  const r = await engine.run('cust', new URLSearchParams({ start_date: today, end_date: today }));
  t.equal(r.rows[0]?.total_transactions, want, 'every pending count written, once');
  t.equal(w.stats().pendingTuples, 0);
  await w.close();
});

/** `ivtd serve` on `dataDir` (one lookup thread); resolves once it is ready. */
async function serve(t: Test, dataDir: string, flushInterval: number) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0', '--flush-interval', String(flushInterval), '--threads', '1'],
    { cwd: ROOT, env: { ...process.env, IVTD_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string | null>((r) => child.once('exit', (code, signal) => r(code ?? signal)));
  const deadline = Date.now() + 30_000;
  while (!/"msg":"ivtd ready"/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`serve did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const port = Number(/"ports":\{"prebid":(\d+)/.exec(out)![1]);
  const reportingPort = Number(/"ports":\{[^}]*"reporting":(\d+)/.exec(out)![1]);
  const cred = (name: string) => new RegExp(`${name} +(\\S+)`).exec(out)![1]!;
  const customer = { customer_id: cred('customer_id'), partner_id: cred('partner_id'), prebid_key: cred('prebid_key'), reporting_key: cred('reporting_key'), username: '', password: '' };
  const base = fixtureQuery('residential-desktop-chrome').replace('{p}', customer.partner_id).replace('{k}', customer.prebid_key);
  /** One lookup with `pub`; its status. */
  const get = async (pub: string) => (await fetch(`http://127.0.0.1:${port}/api/v1/ivt/lookup?${withParams(base, { pub })}`)).status;
  const until = async (re: RegExp, what: string) => {
    const end = Date.now() + 20_000;
    while (!re.test(out)) {
      if (Date.now() > end) throw new Error(`no ${what} in:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** Transactions by pub in the running server's report of the last two days. */
  const byPub = async () => {
    const res = await fetch(`http://127.0.0.1:${reportingPort}/v1/report?${new URLSearchParams({ ...recentDays(), group_by: 'pub', limit: '1000' })}`, {
      headers: { authorization: basic(customer.customer_id, customer.reporting_key) },
    });
    const body = (await res.json()) as { rows: Array<{ pub: string; total_transactions: number }> };
    return new Map(body.rows.map((x) => [x.pub, x.total_transactions]));
  };
  return { child, exited, customer, get, until, byPub, out: () => out };
}

t.test('tmpfs: `ivtd serve` answers on through a full disk, and its reports catch up once space returns, without a restart', { skip }, async (t) => {
  const mnt = tmpfs(t);
  const dataDir = join(mnt, 'data');
  mkdirSync(dataDir);
  const s = await serve(t, dataDir, 1);
  const answered = new Map<string, number>();
  // Each with a pub of its own, long: a flush then needs more than the WAL's last page.
  const look = async (tag: string, n: number) => {
    for (let i = 0; i < n; i++) {
      const pub = `${tag}-${i}-${'x'.repeat(100)}`;
      t.equal(await s.get(pub), 200);
      answered.set(pub, (answered.get(pub) ?? 0) + 1);
    }
  };
  await look('before', 5);
  const filler = fill(mnt, 0);
  await look('full', 60);
  await s.until(/"msg":"reporting flush failed; keeping the counts for the next flush"/, 'failed flush');
  await look('still-full', 10);
  rmSync(filler);
  await s.until(/"msg":"reporting: the store takes writes again"/, 'recovery');
  // The running server's own report, no restart: every answered lookup, once.
  let now = await s.byPub();
  for (const end = Date.now() + 10_000; Date.now() < end && now.size < answered.size; now = await s.byPub()) await new Promise((r) => setTimeout(r, 200));
  t.same(now, answered, 'the running server reports every answered lookup after space returned');
  s.child.kill('SIGTERM');
  t.equal(await s.exited, 0, 'a clean stop');
  t.notMatch(s.out(), /spool file/, 'nothing needed a spool file');

  const reader = await startTestServer({}, dataDir);
  t.teardown(() => reader.stop());
  t.same(await reported(reader, s.customer), answered, 'the report shows every answered lookup');
});

t.test('tmpfs: `ivtd serve` on a full disk cannot write or spool its counts on SIGTERM: a fatal line and exit 1', { skip }, async (t) => {
  const mnt = tmpfs(t);
  const dataDir = join(mnt, 'data');
  mkdirSync(dataDir);
  const s = await serve(t, dataDir, 3600);
  for (let i = 0; i < 60; i++) t.equal(await s.get(`pub-${i}-${'x'.repeat(100)}`), 200);
  fill(mnt, 0);
  s.child.kill('SIGTERM');
  t.equal(await s.exited, 1, 'exit status 1, not 0');
  t.match(s.out(), /"level":60,[^\n]*"tuples":60,"transactions":60,[^\n]*"msg":"reporting: final flush failed and the spool file could not be written; these counts are lost"/, 'a fatal line with the counts');
  t.notMatch(s.out(), /"msg":"stopped cleanly"/);
});
