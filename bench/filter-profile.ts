// Where the filter thread's time goes: `ivtd serve` with one filter in front of the bare
// upstream, driven closed loop by autocannon (or at --rate by bench/paced.ts) after a 2 s
// warm-up. Under --cpu-prof it prints the filter thread's self time by function (top N) and
// a few functions' inclusive time, per request; with --perf it records `perf record -g` of
// the process instead (perf charges system calls far less than --cpu-prof, whose samples land
// on them late) and leaves the data for `perf script`.
//   node --import tsx bench/filter-profile.ts [--seconds 5] [--connections 32] [--rate N] [--top 30]
//        [--checkout DIR] [--perf [--perf-out FILE]]
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { runClient } from './client.ts';
import { numArg, startIvtd, startProcess, stopProcess, strArg, thisCheckout } from './processes.ts';
import { Store } from '../src/store/db.ts';
import { createCustomer } from '../src/store/customers.ts';
import { createServer, type AddressInfo } from 'node:net';
import { bodies } from './filter-bodies.ts';

const SECONDS = numArg('seconds', 5);
const CONNECTIONS = numArg('connections', 32);
const TOP = numArg('top', 30);
/** A fixed rate (bench/paced.ts, 16 connections) instead of autocannon's closed loop. */
const RATE = numArg('rate', 0);
const CHECKOUT = strArg('checkout', '');
/** Linux perf instead of --cpu-prof (the JIT's symbols written for it): samples of every thread to --perf-out, read with `perf script -F tid,period,ip,sym`. */
const PERF = process.argv.includes('--perf');
const PERF_OUT = strArg('perf-out', join(tmpdir(), 'ivtd-filter-perf.data'));

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

const posts = bodies(1000);

const up = await startProcess(process.execPath, ['--import', 'tsx', 'bench/bare-upstream.ts', '120'], [/\{"port":(\d+)\}/]);
const upPort = Number(up.matches[0]![1]);
const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-fprof-'));
const profDir = mkdtempSync(join(tmpdir(), 'ivtd-fprof-out-'));
const store = await Store.open(dataDir);
const c = await createCustomer(store, { name: 'Bench', username: 'bench', password: 'correct horse battery' });
await store.close();
const port = await freePort();
const ivtd = await startIvtd(CHECKOUT === '' ? thisCheckout() : thisCheckout(CHECKOUT), {
  threads: 1, nodeArgs: PERF ? ['--perf-basic-prof-only-functions'] : ['--cpu-prof', '--cpu-prof-dir', profDir],
  existing: { dataDir, partnerId: c.partner_id, key: c.prebid_key },
  args: ['--filter-port', String(port), '--filter-upstream', `http://127.0.0.1:${upPort}/openrtb2/auction`, '--filter-partner', c.partner_id, '--filter-timeout', '1000'],
});
await runClient({ kind: 'autocannon', port, paths: ['/openrtb2/auction'], bodies: posts, rate: 0, seconds: 2, connections: CONNECTIONS });
const perf = PERF ? spawn('perf', ['record', '-F', '1999', '-g', '-p', String(ivtd.pid), '-o', PERF_OUT, '--', 'sleep', String(SECONDS - 1)], { stdio: 'inherit' }) : null;
const a = RATE > 0
  ? await runClient({ kind: 'paced', port, paths: ['/openrtb2/auction'], bodies: posts, rate: RATE, seconds: SECONDS, connections: 16 })
  : await runClient({ kind: 'autocannon', port, paths: ['/openrtb2/auction'], bodies: posts, rate: 0, seconds: SECONDS, connections: CONNECTIONS });
await ivtd.stop();
await stopProcess(up.child);
rmSync(dataDir, { recursive: true, force: true });
console.log(`${a.rps} req/s (${a.rps * SECONDS} requests)${'p50Ms' in a ? ` p50 ${a.p50Ms} ms` : ''}${PERF ? `; perf data in ${PERF_OUT}` : ''}`);
// The filter thread's profile: the one whose samples include proxy.ts's judge (the request handler is in another file since the filter's own HTTP server).
for (const f of readdirSync(profDir)) {
  const p = JSON.parse(readFileSync(join(profDir, f), 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  if (!p.nodes.some((n) => n.callFrame.functionName === 'judge' && n.callFrame.url.includes('proxy'))) continue;
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const byFn = new Map<string, number>();
  let total = 0, idle = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const name = n.callFrame.functionName || '(anon)';
    if (name === '(idle)') { idle += us; continue; }
    total += us;
    const key = `${name} ${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber + 1}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
  }
  // Inclusive time of a few entry points.
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const ch of n.children ?? []) parent.set(ch, n.id);
  const incl = new Map<string, number>();
  for (const [id, us] of self) {
    const seen = new Set<string>();
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const name = byId.get(x)!.callFrame.functionName;
      if (name && !seen.has(name)) { seen.add(name); incl.set(name, (incl.get(name) ?? 0) + us); }
    }
  }
  const reqs = a.rps * SECONDS;
  console.log(`${f}: busy ${(total / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms: ${(total / reqs).toFixed(1)} µs/request`);
  for (const [k, us] of [...byFn].sort((x, y) => y[1] - x[1]).slice(0, TOP)) console.log(`  self ${(us / reqs).toFixed(1).padStart(6)} µs ${(100 * us / total).toFixed(1).padStart(5)}%  ${k}`);
  for (const name of ['onRequest', 'judge', 'lookupOrtb', 'bidRequestFrom', 'forward', 'onData', 'flush', 'end', 'send', 'parseAnswer', 'writeGeneric', 'writevGeneric', 'processTimers', 'processImmediate', 'garbage collector', '(garbage collector)', '(program)', 'onStreamRead', 'listOnTimeout'])
    if (incl.has(name)) console.log(`  incl ${(incl.get(name)! / reqs).toFixed(1).padStart(6)} µs  ${name}`);
}
rmSync(profDir, { recursive: true, force: true });
