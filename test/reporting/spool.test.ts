// A store that will not take the counts on a stop (a full disk, a table gone): the pending
// counts go to a spool file in the data dir that the next start writes into the rollups,
// once, and removes; if even the spool file cannot be written, close() says so (a fatal
// log line, CountsLostError) instead of dropping them quietly.
import t, { type Test } from 'tap';
import { existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { TUPLE_DIMENSIONS } from '../../src/base/enums.ts';
import { ReportEngine } from '../../src/reporting/engine.ts';
import { listSpoolFiles, readSpoolFile, writeSpoolFile } from '../../src/reporting/spool-file.ts';
import type { CountRow } from '../../src/counts/tuple.ts';
import { CountsLostError, REOPEN_AFTER, RollupWriter, spoolPartKey } from '../../src/reporting/writer.ts';
import { Store } from '../../src/store/db.ts';
import { HOUR_MS } from '../../src/base/time.ts';
import { log } from '../../src/base/log.ts';

const NOW = Date.now();
const THIS_HOUR = NOW - (NOW % HOUR_MS);
const TODAY = new Date(NOW).toISOString().slice(0, 10);

function row(customerId: string, pub: string, total: number, givt = 0, hour = THIS_HOUR): CountRow {
  return { customerId, hour, dims: TUPLE_DIMENSIONS.map((d) => (d === 'pub' ? pub : d === 'adt' ? '1' : d === 'dvt' ? '2' : '')), total, givt, sivt: 0 };
}

function newDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-spool-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function totals(store: Store, customer: string, groupBy = 'pub'): Promise<Array<[string, number]>> {
  const engine = new ReportEngine(store, { retentionDays: 400 });
  const r = await engine.run(customer, new URLSearchParams({ start_date: TODAY, end_date: TODAY, group_by: groupBy }));
  return r.rows.map((x: any) => [x[groupBy], x.total_transactions]);
}

/** Log lines written while `fn` runs (the writer's logger, captured). */
async function captureLog<T>(fn: () => Promise<T>): Promise<{ value: T | undefined; error: unknown; lines: Array<Record<string, any>> }> {
  const lines: Array<Record<string, any>> = [];
  const levels = ['info', 'warn', 'error', 'fatal'] as const;
  const level = log.level;
  log.level = 'info';
  const saved = levels.map((l) => log[l]);
  for (const [i, l] of levels.entries()) {
    (log as any)[l] = (obj: unknown, msg?: string) => {
      lines.push(typeof obj === 'string' ? { level: l, msg: obj } : { level: l, ...(obj as object), msg });
      return (saved[i] as any).call(log, obj, msg);
    };
  }
  try {
    return { value: await fn(), error: undefined, lines };
  } catch (error) {
    return { value: undefined, error, lines };
  } finally {
    for (const [i, l] of levels.entries()) (log as any)[l] = saved[i];
    log.level = level;
  }
}

const breakTable = (store: Store) => store.run('ALTER TABLE rollups_daily RENAME TO rollups_away');
const mendTable = (store: Store) => store.run('ALTER TABLE rollups_away RENAME TO rollups_daily');

t.test('a stop whose final flush fails spools the counts; the next start writes them once and removes the file', async (t) => {
  const dir = newDir(t);
  let store = await Store.open(dir);
  const w = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 });
  w.add([row('a', 'pub-1', 5, 1), row('a', 'pub-2', 3)]);
  // Counts the lookup threads left in the shared table, drained by the first flush.
  const late = [row('a', 'pub-2', 2), row('b', 'pub-9', 7)];
  await breakTable(store);
  const { error, lines } = await captureLog(() => w.close());
  t.equal(error, undefined, 'close() resolves: nothing was lost');

  const files = listSpoolFiles(dir);
  t.equal(files.length, 1, 'one spool file in the data dir');
  const spool = readSpoolFile(files[0]!);
  t.match(spool.header, { tuples: 2, transactions: 8 });
  const said = lines.find((l) => /spool file/.test(l.msg ?? ''));
  t.match(said, { level: 'error', file: files[0], tuples: 2, transactions: 8 }, 'the log names the file and the counts');
  t.notOk(lines.some((l) => /these counts are lost/.test(l.msg ?? '')), 'nothing claims a loss');
  t.same(readdirSync(dir).filter((n) => n.endsWith('.tmp') && n.startsWith('reporting-spool')), [], 'no temporary file left');

  // The operator mends the store; the next start (a new writer) replays the file first.
  await mendTable(store);
  store.close();
  store = await Store.open(dir);
  t.teardown(() => store.close());
  const w2 = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400, source: () => late.splice(0) });
  t.same(await totals(store, 'a'), [['pub-1', 5], ['pub-2', 3]], 'replayed on open, before any flush');
  t.same(listSpoolFiles(dir), [], 'the file is removed once written');
  t.equal(w2.stats().spoolFiles, 0);
  t.same(await store.all('SELECT * FROM reporting_spool_applied'), [], 'its parts are forgotten with it');
  await w2.close();
  t.same(await totals(store, 'a'), [['pub-1', 5], ['pub-2', 5]], 'later counts add to them');
  t.same(await totals(store, 'b'), [['pub-9', 7]]);

  // Started again: nothing is replayed twice.
  const w3 = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 });
  await w3.close();
  t.same(await totals(store, 'a'), [['pub-1', 5], ['pub-2', 5]], 'written exactly once');
});

t.test('a replay cut short resumes: parts already written are not written again', async (t) => {
  const dir = newDir(t);
  const elsewhere = newDir(t);
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  const lastMonth = Date.UTC(new Date(NOW).getUTCFullYear(), new Date(NOW).getUTCMonth(), 1) - 24 * HOUR_MS;
  const { path } = writeSpoolFile(elsewhere, [row('a', 'pub-1', 4, 0, lastMonth), row('a', 'pub-1', 6)]);
  const spool = readSpoolFile(path);
  t.equal(spool.parts.length, 2, 'one part per UTC month, as the fleet batches them');
  // The state a crash leaves after the first part's transaction committed: its rows and its mark.
  const first = spool.parts[0]!;
  const w0 = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 });
  w0.add(first.rows.map((r) => ({ ...r })));
  await w0.close();
  await store.run('INSERT INTO reporting_spool_applied (spool_id, part) VALUES ($1, $2)', [spool.header.spoolId, spoolPartKey(first.batchId, 0, first.rows.length)]);
  renameSync(path, join(dir, basename(path)));

  const w1 = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 });
  await w1.close();
  const r = await store.one<{ n: bigint }>('SELECT sum(total) AS n FROM rollups_hourly');
  t.equal(Number(r!.n), 10, 'each part once: 4 + 6, not 4 twice');
  t.same(listSpoolFiles(dir), [], 'the file is removed');
});

t.test('a spool file that cannot be read whole is set aside, logged, and the valid parts are written', async (t) => {
  const dir = newDir(t);
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  const { path } = writeSpoolFile(dir, [row('a', 'pub-1', 4)]);
  writeFileSync(path, readFileSync(path, 'utf8') + '{"batchId":"x","rows":[{"customerId":"a"}]}\nnot json\n');
  const garbled = join(dir, 'reporting-spool-0000-garbled.jsonl');
  writeFileSync(garbled, 'no header here\n');
  const { lines } = await captureLog(async () => (await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 })).close());
  t.same(await totals(store, 'a'), [['pub-1', 4]], 'the valid part is written');
  t.same(listSpoolFiles(dir), [], 'neither is replayed again');
  t.ok(existsSync(garbled + '.unreadable') && existsSync(path + '.unreadable'), 'both kept, renamed');
  const errs = lines.filter((l) => l.level === 'error').map((l) => l.msg);
  t.ok(errs.some((m) => /could not read a spool file/.test(m)), 'the file without a header is logged');
  t.match(lines.find((l) => /lines of a spool file could not be read/.test(l.msg ?? '')), { lines: [{ line: 3 }, { line: 4 }] }, 'the bad lines are named');
});

t.test('if the spool file cannot be written either: a fatal line and CountsLostError, never a quiet success', async (t) => {
  const dir = newDir(t);
  const store = await Store.open(dir);
  const w = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 });
  w.add([row('a', 'pub-1', 9)]);
  await breakTable(store);
  // The data dir is no longer a folder at its path (DuckDB keeps its open files): no file can be made there.
  const moved = `${dir}-moved`;
  renameSync(dir, moved);
  writeFileSync(dir, 'not a folder');
  t.teardown(() => {
    rmSync(dir, { force: true });
    rmSync(moved, { recursive: true, force: true });
  });
  const { error, lines } = await captureLog(() => w.close());
  t.ok(error instanceof CountsLostError, 'close() rejects with CountsLostError');
  t.match((error as Error).message, /9 counted transactions \(1 tuples\)/);
  t.match(
    lines.find((l) => l.level === 'fatal'),
    { msg: /spool file could not be written; these counts are lost/, tuples: 1, transactions: 9 },
    'a fatal log line with the counts',
  );
  store.close();
});

t.test(`after ${REOPEN_AFTER} store failures in a row the writer takes a fresh connection; the counts wait and are written once the store works`, async (t) => {
  const dir = newDir(t);
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  const w = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 });
  await w.flush(); // after the retention pass open() queued
  await breakTable(store);
  let fresh = 0;
  for (let i = 1; i <= REOPEN_AFTER + 1; i++) {
    w.add([row('a', 'pub-1', i)]);
    const { error, lines } = await captureLog(() => w.flush());
    t.ok(error, `flush ${i} fails`);
    fresh += lines.filter((l) => /took a fresh store connection/.test(l.msg ?? '')).length;
  }
  t.equal(fresh, 1, 'one fresh connection, at the flush after the third failure (not at each one)');
  t.equal(w.stats().failedFlushes, REOPEN_AFTER + 1);
  await mendTable(store);
  const { lines } = await captureLog(() => w.flush());
  t.ok(lines.some((l) => /store takes writes again/.test(l.msg ?? '')), 'the recovery is logged');
  t.same(await totals(store, 'a'), [['pub-1', 10]], 'every count of the failed flushes written, once');
  await w.close();
});
