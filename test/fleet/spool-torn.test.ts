// A spool torn by kill -9: a child process spools as fast as it can and is killed mid-write;
// its DuckDB WAL is then also cut at several lengths (a write the kill left half done, or a
// tail lost with the page cache). Every cut must open (never a refusal to start), and the
// spool must hold whole spool() transactions only (rows a multiple of one spool's, every
// batch readable), never fewer for a longer file, and all of it delivered once.
import t from 'tap';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { FleetWriter, spooledRows } from '../../src/fleet/spool.ts';
import { DB_FILE, Store } from '../../src/store/db.ts';
import { SPOOL_ROWS } from './spool-torn-writer.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

t.test('kill -9 mid-spool, then the WAL cut at several lengths: opens, whole transactions, delivered once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-spool-torn-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fleet/spool-torn-writer.ts', dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the writer exited (${code}) before spooling`)));
  });
  await new Promise((r) => setTimeout(r, 1500));
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  const wal = join(dir, `${DB_FILE}.wal`);
  t.ok(existsSync(wal), 'the kill left a WAL to replay');
  const size = statSync(wal).size;
  let before = -1;
  for (const fraction of [0.03, 0.25, 0.5, 0.77, 0.999, 1]) {
    const copy = `${dir}-${fraction}`;
    t.teardown(() => rmSync(copy, { recursive: true, force: true }));
    cpSync(dir, copy, { recursive: true });
    truncateSync(join(copy, `${DB_FILE}.wal`), Math.floor(size * fraction));
    const store = await Store.open(copy); // throws, failing the test, if it does not open
    const spooled = await store.all<{ rows_json: string; row_count: number }>('SELECT rows_json, row_count FROM fleet_spool');
    const rows = spooled.reduce((n, b) => n + b.row_count, 0);
    t.equal(rows % SPOOL_ROWS, 0, `WAL cut to ${fraction}: opens, ${spooled.length} batches, ${rows} rows: whole spools only`);
    t.ok(spooled.every((b) => spooledRows(b.rows_json)?.length === b.row_count), 'every batch readable, as long as it says');
    t.ok(rows >= before, `no fewer rows than a shorter cut (${before})`);
    before = rows;
    let sent = 0;
    const ch = { rows: async () => [{ n: '0' }], insert: async (table: string, r: readonly object[]) => void (table === 'rollups_hourly' && (sent += r.length - 1)) };
    const w = await FleetWriter.open(store, ch as unknown as ClickHouse, { flushIntervalMs: 3_600_000, closeDeliveryMs: 500 });
    await w.deliver();
    t.equal(sent, rows, 'all of it delivered, once');
    t.equal(w.stats().droppedBatches, 0, 'nothing dropped');
    await w.close();
    await store.close();
  }
  t.ok(before > SPOOL_ROWS, `${before} rows spooled before the kill`);
});
