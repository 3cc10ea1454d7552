// What a filter's process holds when its upstream answers large bodies slowly (issue 60's
// memory side, docs/memory.md "Filters"): `ivtd serve` with one filter, this checkout and
// (`--baseline-checkout DIR`) another one, in the same run, one after the other, each under
// the same load: CONNECTIONS clients POSTing bid requests in a closed loop for SECONDS, the
// upstream answering each with ANSWER_MB MB written a piece every PIECE_MS. Reports each
// process's RSS idle, sampled under the load (max) and its VmHWM, the filter thread's V8 heap
// (ivtd_lookup_thread_heap_bytes, idle and the most under load), and the answers: whole, no-bid.
//   node --import tsx bench/filter-memory.ts [--seconds 20] [--connections 128] [--answer-mb 4]
//        [--piece-ms 20] [--budget 300] [--tmax 3000] [--baseline-checkout DIR] [--floor]
// --floor: also this checkout without a filter, idle (what a filter's thread adds to the process).
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { numArg, strArg, peakRssMb, rssMb, sleep, startIvtd, startProcess, stopProcess, thisCheckout, type IvtdServer } from './processes.ts';
import { Store } from '../src/store/db.ts';
import { createCustomer } from '../src/store/customers.ts';
import { bodies } from './filter-bodies.ts';
import { freePort } from '../test/helpers/ports.ts';

const SECONDS = numArg('seconds', 20);
const CONNECTIONS = numArg('connections', 128);
const ANSWER_MB = numArg('answer-mb', 4);
const PIECE_MS = numArg('piece-ms', 20);
const BUDGET = numArg('budget', 300);
const TMAX = numArg('tmax', 3000);
const BASELINE = strArg('baseline-checkout', '') || undefined;

/** The upstream, as a process of its own (`--upstream`): every answer ANSWER_MB MB, 256 KB a piece every PIECE_MS. */
function serveUpstream(): void {
  const size = Math.round(ANSWER_MB * 1048576);
  const piece = Buffer.alloc(256 << 10, 0x61);
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': size });
      let sent = 0;
      const more = () => {
        if (res.destroyed) return;
        const n = Math.min(piece.byteLength, size - sent);
        sent += n;
        if (sent >= size) res.end(piece.subarray(0, n));
        else {
          res.write(piece.subarray(0, n));
          setTimeout(more, PIECE_MS);
        }
      };
      more();
    });
  });
  srv.keepAliveTimeout = 60_000;
  srv.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: (srv.address() as AddressInfo).port }) + '\n'));
  process.on('SIGTERM', () => process.exit(0));
}


async function startFilterIvtd(root: string | undefined, upPort: number): Promise<{ ivtd: IvtdServer; port: number; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-bench-filter-memory-'));
  const store = await Store.open(dataDir);
  const c = await createCustomer(store, { name: 'Bench', username: 'bench', password: 'correct horse battery' });
  await store.close();
  const port = await freePort();
  const ivtd = await startIvtd(root === undefined ? thisCheckout() : thisCheckout(root), {
    threads: 1,
    existing: { dataDir, partnerId: c.partner_id, key: c.prebid_key },
    args: ['--memory-budget', String(BUDGET), '--filter-port', String(port), '--filter-upstream', `http://127.0.0.1:${upPort}/bid`, '--filter-partner', c.partner_id, '--filter-timeout', '5000', '--filter-nobid', 'nbr'],
  });
  return { ivtd, port, dataDir };
}

/** The filter thread's V8 heap in use (thread 1: after the one lookup thread), bytes; NaN when not reported. */
async function filterHeap(metricsPort: number): Promise<number> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const m = /^ivtd_lookup_thread_heap_bytes\{thread="1",state="used"\} (\S+)$/m.exec(text);
    return m === null ? NaN : Number(m[1]);
  } catch {
    return NaN;
  }
}

/** CONNECTIONS clients in a closed loop for SECONDS: answers whole (200, the full size), no-bid, other. */
async function load(port: number): Promise<{ whole: number; nobid: number; other: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  // The auction's time: long enough for the slow answers (the bodies' own is 250 ms).
  const posts = bodies(1000).map((b) => JSON.stringify({ ...(JSON.parse(b) as object), tmax: TMAX }));
  const size = Math.round(ANSWER_MB * 1048576);
  const out = { whole: 0, nobid: 0, other: 0 };
  const until = Date.now() + SECONDS * 1000;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const body = posts[i % posts.length]!;
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => (n += c.byteLength));
        res.on('end', () => {
          if (res.statusCode === 200 && n === size) out.whole++;
          else if (res.headers['x-ivtd-nobid'] !== undefined) out.nobid++;
          else out.other++;
          resolve();
        });
        res.on('error', () => {
          out.other++;
          resolve();
        });
      });
      req.on('error', () => {
        out.other++;
        resolve();
      });
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, w) => {
      for (let i = w; Date.now() < until; i += CONNECTIONS) await one(i);
    }),
  );
  agent.destroy();
  return out;
}

async function measure(name: string, root: string | undefined, upPort: number) {
  const f = await startFilterIvtd(root, upPort);
  try {
    await sleep(3000);
    const idleRss = rssMb(f.ivtd.pid);
    const idleHeap = await filterHeap(f.ivtd.metricsPort);
    let maxRss = 0;
    let maxHeap = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        maxRss = Math.max(maxRss, rssMb(f.ivtd.pid));
        const h = await filterHeap(f.ivtd.metricsPort);
        if (h > maxHeap) maxHeap = h;
        await sleep(250);
      }
    })();
    const answers = await load(f.port);
    sampling = false;
    await sampler;
    const row = { name, idleRssMb: +idleRss.toFixed(1), maxRssMb: +maxRss.toFixed(1), hwmMb: +peakRssMb(f.ivtd.pid).toFixed(1), filterHeapIdleMb: +(idleHeap / 1048576).toFixed(1), filterHeapMaxMb: +(maxHeap / 1048576).toFixed(1), answers, alive: rssMb(f.ivtd.pid) > 0 };
    console.error(JSON.stringify(row));
    return row;
  } finally {
    await f.ivtd.stop();
    rmSync(f.dataDir, { recursive: true, force: true });
  }
}

/** `--floor`: this checkout without a filter, idle: its RSS and its lookup thread's heap, beside the filter's process idle. */
async function withoutFilter() {
  const ivtd = await startIvtd(thisCheckout(), { threads: 1, args: ['--memory-budget', String(BUDGET)] });
  try {
    await sleep(3000);
    const text = await (await fetch(`http://127.0.0.1:${ivtd.metricsPort}/metrics`)).text();
    const m = /^ivtd_lookup_thread_heap_bytes\{thread="0",state="used"\} (\S+)$/m.exec(text);
    const row = { name: 'this checkout, no filter', idleRssMb: +rssMb(ivtd.pid).toFixed(1), lookupHeapIdleMb: m === null ? NaN : +(Number(m[1]) / 1048576).toFixed(1) };
    console.error(JSON.stringify(row));
    return row;
  } finally {
    await ivtd.stop();
  }
}

async function main(): Promise<void> {
  const floor = process.argv.includes('--floor') ? await withoutFilter() : null;
  const up = await startProcess(process.execPath, ['--import', 'tsx', 'bench/filter-memory.ts', '--upstream', '--answer-mb', String(ANSWER_MB), '--piece-ms', String(PIECE_MS)], [/\{"port":(\d+)\}/]);
  const upPort = Number(up.matches[0]![1]);
  try {
    const rows = [];
    if (BASELINE !== undefined) rows.push(await measure('baseline', BASELINE, upPort));
    rows.push(await measure('this checkout', undefined, upPort));
    const mine = rows[rows.length - 1]!;
    const base = BASELINE === undefined ? null : rows[0]!;
    console.log(JSON.stringify({
      seconds: SECONDS, connections: CONNECTIONS, answerMb: ANSWER_MB, pieceMs: PIECE_MS, budgetMb: BUDGET, rows, ...(floor === null ? {} : { floor }),
      ...(base === null ? {} : { ratio: { maxRss: +(mine.maxRssMb / base.maxRssMb).toFixed(3), hwm: +(mine.hwmMb / base.hwmMb).toFixed(3), idleRss: +(mine.idleRssMb / base.idleRssMb).toFixed(3) } }),
    }, null, 2));
  } finally {
    await stopProcess(up.child);
  }
}

if (process.argv.includes('--upstream')) serveUpstream();
else {
  void main().catch((e: Error) => {
    console.error(e.stack ?? e.message);
    process.exit(1);
  });
}
