// The filter (docs/filter.md) against going straight, same client, same run (issue 60):
//   throughput  autocannon, closed loop, POSTing bid requests to a bare uWS bid endpoint
//               straight and through `ivtd serve --filter-*` in front of it: ratio of req/s;
//   latency     bench/paced.ts at a fixed rate, µs clock: the filter's added p50 and p99.
// Rounds alternate straight and filtered; each figure is the median over the rounds.
//   npm run bench:filter -- [--rate 2000] [--seconds 5] [--rounds 2] [--connections 32]
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runClient } from './client.ts';
import { numArg, startIvtd, startProcess, stopProcess, thisCheckout } from './processes.ts';
import { Store } from '../src/store/db.ts';
import { createCustomer } from '../src/store/customers.ts';

const RATE = numArg('rate', 2000);
const SECONDS = numArg('seconds', 5);
const ROUNDS = numArg('rounds', 2);
const CONNECTIONS = numArg('connections', 32);

/** Clean web bid requests from 1 000 residential addresses and users: each is forwarded. */
function bodies(n: number): string[] {
  const ua = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
  return Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      id: `req-${i}`, at: 1, tmax: 250, cur: ['USD'],
      imp: [{ id: '1', tagid: 'slot-top', bidfloor: 0.5, banner: { w: 728, h: 90, pos: 1 } }],
      site: { id: 's1', domain: 'news.example', page: 'https://news.example/a/1', publisher: { id: 'pub-9' } },
      device: { ip: `73.162.${(i >> 8) & 255}.${i & 255}`, ua, devicetype: 2, language: 'en', geo: { country: 'USA' } },
      user: { id: `u-${i}`, buyeruid: `b-${i}` },
      source: { schain: { ver: '1.0', complete: 1, nodes: [{ asi: 'exchange1.example', sid: '1234', hp: 1 }] } },
    }),
  );
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

async function main(): Promise<void> {
  const up = await startProcess(process.execPath, ['--import', 'tsx', 'bench/bare-upstream.ts', '120'], [/\{"port":(\d+)\}/]);
  const upPort = Number(up.matches[0]![1]);
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-bench-filter-'));
  const store = await Store.open(dataDir);
  const c = await createCustomer(store, { name: 'Bench', username: 'bench', password: 'correct horse battery' });
  await store.close();
  const filterPort = await freePort();
  const ivtd = await startIvtd(thisCheckout(), {
    threads: 1,
    existing: { dataDir, partnerId: c.partner_id, key: c.prebid_key },
    args: ['--filter-port', String(filterPort), '--filter-upstream', `http://127.0.0.1:${upPort}/openrtb2/auction`, '--filter-partner', c.partner_id, '--filter-timeout', '1000'],
  });
  const paths = ['/openrtb2/auction'];
  const posts = bodies(1000);
  const rows = { straight: { rps: [] as number[], p50: [] as number[], p99: [] as number[] }, filter: { rps: [] as number[], p50: [] as number[], p99: [] as number[] } };
  try {
    // Warm-up: the filter's code, the engine's caches, the connections.
    await runClient({ kind: 'autocannon', port: filterPort, paths, bodies: posts, rate: 0, seconds: 2, connections: CONNECTIONS });
    for (let r = 0; r < ROUNDS; r++) {
      for (const [name, port] of [['straight', upPort], ['filter', filterPort]] as const) {
        const a = await runClient({ kind: 'autocannon', port, paths, bodies: posts, rate: 0, seconds: SECONDS, connections: CONNECTIONS });
        if (a.non2xx > 0) throw new Error(`${name}: ${a.non2xx} answers were not 2xx`);
        const p = await runClient({ kind: 'paced', port, paths, bodies: posts, rate: RATE, seconds: SECONDS, connections: 16 });
        rows[name].rps.push(a.rps);
        rows[name].p50.push(p.p50Ms);
        rows[name].p99.push(p.p99Ms);
        console.error(`round ${r + 1} ${name}: ${a.rps} req/s closed loop; at ${RATE}/s p50 ${p.p50Ms} ms p99 ${p.p99Ms} ms (${p.completed} answered)`);
      }
    }
  } finally {
    await ivtd.stop();
    rmSync(dataDir, { recursive: true, force: true });
    await stopProcess(up.child);
  }
  const s = rows.straight, f = rows.filter;
  const out = {
    rounds: ROUNDS,
    seconds: SECONDS,
    throughput: { straightRps: median(s.rps), filterRps: median(f.rps), ratio: +(median(f.rps) / median(s.rps)).toFixed(3), goal: '>= 0.5' },
    latencyAtRate: {
      rate: RATE,
      straight: { p50Ms: median(s.p50), p99Ms: median(s.p99) },
      filter: { p50Ms: median(f.p50), p99Ms: median(f.p99) },
      addedP50Ms: +(median(f.p50) - median(s.p50)).toFixed(3),
      addedP99Ms: +(median(f.p99) - median(s.p99)).toFixed(3),
      goal: 'added p50 <= 0.15 ms, p99 <= 1 ms',
    },
  };
  console.log(JSON.stringify(out, null, 2));
}

void main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
