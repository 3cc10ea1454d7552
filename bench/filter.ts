// The filter (docs/filter.md) against going straight, same client, same run (issue 60):
//   throughput  autocannon, closed loop, POSTing bid requests to a bare uWS bid endpoint
//               straight and through `ivtd serve --filter-*` in front of it: ratio of req/s;
//   latency     bench/paced.ts at a fixed rate, µs clock: the filter's added p50 and p99;
//   CPU         µs of CPU a request costs the filter's ivtd process (all its threads; the
//               upstream's process, straight), closed loop and at the fixed rate: on a
//               shared host the steadier figure (/proc/PID/stat, Linux).
//   floors      the same client through a byte pipe instead of the filter: one in Node
//               (bench/byte-pipe.ts: node:net, no HTTP, no verdict) and one in C
//               (bench/byte-pipe.c, compiled with `cc` when there is one): what one extra hop
//               costs on this host and this runtime before a filter does anything; and the
//               filter itself sent the same bodies as text/plain ("filter-unjudged"): sent on
//               as is, no verdict (a media_type fail-open), so its cost less the verdict's.
// Rounds alternate straight, the floors and filtered; each figure is the median over the rounds.
//   npm run bench:filter -- [--rate 2000] [--seconds 5] [--rounds 2] [--connections 32] [--no-floors]
//                           [--ivtd PATH | --checkout DIR] [--baseline-ivtd PATH | --baseline-checkout DIR]
// --ivtd / --checkout: the build measured (default: this checkout through tsx, or its dist/ivtd
// beside a baseline binary). --baseline-*: a second filter, from another build (e.g. an earlier
// commit's binary, or its checkout with its generated data built), measured in the same rounds
// (before and after in one run).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runClient } from './client.ts';
import { defaultTarget, numArg, startIvtd, startProcess, stopProcess, targetFromArgs, type IvtdServer, type IvtdTarget } from './processes.ts';
import { Store } from '../src/store/db.ts';
import { createCustomer } from '../src/store/customers.ts';
import { bodies } from './filter-bodies.ts';
import { freePort } from '../test/helpers/ports.ts';

const RATE = numArg('rate', 2000);
const SECONDS = numArg('seconds', 5);
const ROUNDS = numArg('rounds', 2);
const CONNECTIONS = numArg('connections', 32);
/** Measure the byte pipes (the floors) too. */
const FLOORS = !process.argv.includes('--no-floors');
/** The build measured before (`--baseline-ivtd PATH` or `--baseline-checkout DIR`), in the same rounds. */
const BASELINE = targetFromArgs(process.argv, 'baseline-');
/** The build measured (`--ivtd PATH`, `--checkout DIR`); else this checkout (dist/ivtd beside a baseline binary). */
const TARGET = targetFromArgs(process.argv) ?? defaultTarget(BASELINE);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/** `ivtd serve` of `target` with one filter in front of the upstream, over a data dir of its own. */
async function startFilterIvtd(target: IvtdTarget, upPort: number): Promise<{ ivtd: IvtdServer; port: number; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-bench-filter-'));
  const store = await Store.open(dataDir);
  const c = await createCustomer(store, { name: 'Bench', username: 'bench', password: 'correct horse battery' });
  await store.close();
  const port = await freePort();
  const ivtd = await startIvtd(target, {
    threads: 1,
    existing: { dataDir, partnerId: c.partner_id, key: c.prebid_key },
    args: ['--filter-port', String(port), '--filter-upstream', `http://127.0.0.1:${upPort}/openrtb2/auction`, '--filter-partner', c.partner_id, '--filter-timeout', '1000'],
  });
  return { ivtd, port, dataDir };
}

/** The byte pipes in front of the upstream: Node's always, C's when `cc` compiles it (else a line saying why not). */
async function startPipes(upPort: number, dir: string): Promise<Array<{ name: string; port: number; child: ChildProcess }>> {
  const out: Array<{ name: string; port: number; child: ChildProcess }> = [];
  const node = await startProcess(process.execPath, ['--import', 'tsx', 'bench/byte-pipe.ts', String(upPort)], [/\{"port":(\d+)\}/]);
  out.push({ name: 'node-pipe', port: Number(node.matches[0]![1]), child: node.child });
  const exe = join(dir, 'byte-pipe');
  const cc = spawnSync('cc', ['-O2', '-o', exe, 'bench/byte-pipe.c'], { encoding: 'utf8' });
  if (cc.status === 0) {
    const c = await startProcess(exe, [String(upPort)], [/\{"port":(\d+)\}/]);
    out.push({ name: 'c-pipe', port: Number(c.matches[0]![1]), child: c.child });
  } else console.error(`no C byte pipe: cc ${cc.error?.message ?? (cc.stderr || `exited ${cc.status}`)}`);
  return out;
}

type Row = { rps: number[]; p50: number[]; p99: number[]; cpuUs: number[]; pacedCpuUs: number[] };

/** CPU seconds (user + system, every thread) a process has used so far; NaN when unreadable (not Linux). */
function cpuSeconds(pid: number): number {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // clock ticks (USER_HZ, 100 on Linux)
  } catch {
    return NaN;
  }
}

async function main(): Promise<void> {
  const up = await startProcess(process.execPath, ['--import', 'tsx', 'bench/bare-upstream.ts', '120'], [/\{"port":(\d+)\}/]);
  const upPort = Number(up.matches[0]![1]);
  const mine = await startFilterIvtd(TARGET, upPort);
  const base = BASELINE === null ? null : await startFilterIvtd(BASELINE, upPort);
  const pipeDir = mkdtempSync(join(tmpdir(), 'ivtd-bench-pipe-'));
  const pipes = FLOORS ? await startPipes(upPort, pipeDir) : [];
  const filterPort = mine.port;
  const paths = ['/openrtb2/auction'];
  const posts = bodies(1000);
  const rows: Record<string, Row> = {};
  // The filter without its verdict: the same requests as text/plain, which it sends on as is (with the floors).
  const unjudged: Array<{ name: string; port: number }> = FLOORS ? [{ name: 'filter-unjudged', port: filterPort }] : [];
  for (const name of ['straight', 'filter', 'baseline', ...pipes.map((p) => p.name), ...unjudged.map((u) => u.name)]) rows[name] = { rps: [], p50: [], p99: [], cpuUs: [], pacedCpuUs: [] };
  // The process whose CPU a run is charged to: the upstream straight, else the filter's ivtd or the pipe's (the upstream's own is the same either way).
  const pidOf = (name: string) => (name === 'straight' ? up.child.pid! : name === 'filter' || name === 'filter-unjudged' ? mine.ivtd.pid : name === 'baseline' ? base!.ivtd.pid : pipes.find((p) => p.name === name)!.child.pid!);
  try {
    // Warm-up: the filter's code, the engine's caches, the connections.
    await runClient({ kind: 'autocannon', port: filterPort, paths, bodies: posts, rate: 0, seconds: 2, connections: CONNECTIONS });
    if (base !== null) await runClient({ kind: 'autocannon', port: base.port, paths, bodies: posts, rate: 0, seconds: 2, connections: CONNECTIONS });
    for (let r = 0; r < ROUNDS; r++) {
      const filters: Array<readonly [string, number]> = base === null ? [['filter', filterPort]] : r % 2 === 0 ? [['baseline', base.port], ['filter', filterPort]] : [['filter', filterPort], ['baseline', base.port]];
      for (const [name, port] of [['straight', upPort] as const, ...pipes.map((p) => [p.name, p.port] as const), ...unjudged.map((u) => [u.name, u.port] as const), ...filters]) {
        const contentType = name === 'filter-unjudged' ? 'text/plain' : undefined;
        const cpu0 = cpuSeconds(pidOf(name));
        const a = await runClient({ kind: 'autocannon', port, paths, bodies: posts, rate: 0, seconds: SECONDS, connections: CONNECTIONS, contentType });
        const cpuUs = Math.round(((cpuSeconds(pidOf(name)) - cpu0) * 1e6) / (a.rps * SECONDS));
        if (a.non2xx > 0) throw new Error(`${name}: ${a.non2xx} answers were not 2xx`);
        const cpu1 = cpuSeconds(pidOf(name));
        const p = await runClient({ kind: 'paced', port, paths, bodies: posts, rate: RATE, seconds: SECONDS, connections: 16, contentType });
        const pacedCpuUs = Math.round(((cpuSeconds(pidOf(name)) - cpu1) * 1e6) / p.completed);
        rows[name]!.rps.push(a.rps);
        rows[name]!.p50.push(p.p50Ms);
        rows[name]!.p99.push(p.p99Ms);
        rows[name]!.cpuUs.push(cpuUs);
        rows[name]!.pacedCpuUs.push(pacedCpuUs);
        console.error(`round ${r + 1} ${name}: ${a.rps} req/s closed loop (${cpuUs} µs CPU a request in the ${name === 'straight' ? 'upstream' : name.endsWith('pipe') ? 'pipe' : 'filter'}'s process, ${Math.round((a.clientCpuMs * 1000) / (a.rps * SECONDS))} in the client); at ${RATE}/s p50 ${p.p50Ms} ms p99 ${p.p99Ms} ms (${p.completed} answered, ${pacedCpuUs} µs CPU each)`);
      }
    }
  } finally {
    for (const f of [mine, base]) {
      if (f === null) continue;
      await f.ivtd.stop();
      rmSync(f.dataDir, { recursive: true, force: true });
    }
    for (const p of pipes) await stopProcess(p.child);
    rmSync(pipeDir, { recursive: true, force: true });
    await stopProcess(up.child);
  }
  const s = rows.straight!, f = rows.filter!, b = rows.baseline!;
  const out = {
    build: TARGET.label,
    rounds: ROUNDS,
    seconds: SECONDS,
    throughput: { straightRps: median(s.rps), filterRps: median(f.rps), ratio: +(median(f.rps) / median(s.rps)).toFixed(3), goal: '>= 0.5' },
    // CPU a request costs the upstream's process (straight) and the filter's ivtd process (all its threads), closed loop.
    cpuUsPerRequest: {
      closedLoop: { upstream: median(s.cpuUs), filter: median(f.cpuUs), ...(base === null ? {} : { baseline: median(b.cpuUs) }) },
      atRate: { upstream: median(s.pacedCpuUs), filter: median(f.pacedCpuUs), ...(base === null ? {} : { baseline: median(b.pacedCpuUs) }) },
    },
    latencyAtRate: {
      rate: RATE,
      straight: { p50Ms: median(s.p50), p99Ms: median(s.p99) },
      filter: { p50Ms: median(f.p50), p99Ms: median(f.p99) },
      addedP50Ms: +(median(f.p50) - median(s.p50)).toFixed(3),
      addedP99Ms: +(median(f.p99) - median(s.p99)).toFixed(3),
      goal: 'added p50 <= 0.15 ms, p99 <= 1 ms',
    },
    // One extra hop and nothing else, in the same rounds: the least any filter could add here; and the filter less its verdict.
    ...(pipes.length + unjudged.length === 0 ? {} : {
      floors: Object.fromEntries([...pipes, ...unjudged].map((p) => {
        const r = rows[p.name]!;
        return [p.name, {
          rps: median(r.rps), ratio: +(median(r.rps) / median(s.rps)).toFixed(3),
          cpuUsPerRequest: { closedLoop: median(r.cpuUs), atRate: median(r.pacedCpuUs) },
          p50Ms: median(r.p50), p99Ms: median(r.p99),
          addedP50Ms: +(median(r.p50) - median(s.p50)).toFixed(3), addedP99Ms: +(median(r.p99) - median(s.p99)).toFixed(3),
        }];
      })),
    }),
    ...(base === null ? {} : {
      baseline: {
        build: BASELINE!.label,
        rps: median(b.rps), ratio: +(median(b.rps) / median(s.rps)).toFixed(3),
        p50Ms: median(b.p50), p99Ms: median(b.p99),
        addedP50Ms: +(median(b.p50) - median(s.p50)).toFixed(3), addedP99Ms: +(median(b.p99) - median(s.p99)).toFixed(3),
      },
    }),
  };
  console.log(JSON.stringify(out, null, 2));
}

void main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
