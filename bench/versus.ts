// Lookup speed of this build against a baseline build, by the same client in one run: the
// figure issue-style comparisons ask for ("per lookup, against the round's first commit").
// Both servers run side by side, each with --threads 1; saturation rounds alternate between
// them and the bare uWebSockets.js handler (bench/bare-server.ts) with the same wrk script
// of 2 000 varied GET lookups, so a change in host load hits all three alike. Per round and
// server: requests/s, and the server process's CPU time per request (utime + stime from
// /proc, all its threads), which holds on a busy host where the client cannot saturate
// the server. Medians over the rounds, and their ratios.
// `--processes K` (default 3) starts the three servers K times afresh, each time with its
// rounds, the two builds started in turn first: one process of the same build runs up to
// about 10 % faster or slower than another for its whole life (the same binary against
// itself measured 1.107 and 0.964 in two runs, 2026-12-06: memory layout, caches), so one
// pair of processes can show a gain or a loss that is not there. The medians and ratios are
// over all rounds of all processes; each process pair's own new/old is listed too.
// `--loads get,ortb` adds the same lookups as OpenRTB bid requests (bench/requests.ts, POSTed
// to /api/v1/ivt/ortb), alternating with the GET rounds: per build its OpenRTB lookups/s over
// its own GET lookups/s (issue 23's ratio), and new/old for each load.
//   node --import tsx bench/versus.ts --baseline-ivtd OLD/dist/ivtd [--ivtd PATH | --checkout DIR]
//        [--processes 3] [--rounds 5] [--duration 6] [--connections 50] [--loads get,ortb]
// Beside a baseline binary the new build is this checkout's dist/ivtd unless named (processes.ts
// defaultTarget: refused when older than src/).
import { readFileSync } from 'node:fs';
import { numArg, sleep, strArg, startBare, startIvtd, targetFromArgs, defaultTarget, type IvtdServer } from './processes.ts';
import { lookupPaths, ortbRequests } from './requests.ts';
import { bodiesScript, pathsScript, wrkAsync, wrkAvailable } from './wrk.ts';

const PROCESSES = numArg('processes', 3);
const ROUNDS = numArg('rounds', 5);
const DURATION = numArg('duration', 6);
const CONNECTIONS = numArg('connections', 50);
const LOADS = strArg('loads', 'get').split(',');
for (const l of LOADS) if (l !== 'get' && l !== 'ortb') throw new Error(`--loads takes get, ortb (got ${l})`);
if (!LOADS.includes('get')) throw new Error('--loads must include get (the bare handler and the OpenRTB ratio are against it)');

/** CPU seconds the process has used (all threads): utime + stime from /proc/PID/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // fields 14 and 15 of stat(5), in clock ticks (USER_HZ 100)
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

type Load = 'get' | 'ortb';

async function main(): Promise<void> {
  if (!wrkAvailable()) throw new Error('bench/versus.ts needs wrk (apt-get install wrk)');
  const baseline = targetFromArgs(process.argv, 'baseline-');
  if (!baseline) throw new Error('give --baseline-ivtd PATH or --baseline-checkout DIR');
  const target = targetFromArgs(process.argv) ?? defaultTarget(baseline);
  const loads = LOADS as Load[];
  const targets = { new: target, old: baseline };
  const labels = { new: target.label, old: baseline.label };
  const rps = { new: { get: [] as number[], ortb: [] as number[] }, old: { get: [] as number[], ortb: [] as number[] }, bare: [] as number[] };
  const cpuUs = { new: { get: [] as number[], ortb: [] as number[] }, old: { get: [] as number[], ortb: [] as number[] } };
  /** Each process pair's own median new/old (GET). */
  const pairs: number[] = [];
  for (let p = 0; p < PROCESSES; p++) {
    const from = rps.new.get.length;
    await processPair(p % 2 ? (['old', 'new'] as const) : (['new', 'old'] as const));
    pairs.push(median(rps.new.get.slice(from)) / median(rps.old.get.slice(from)));
  }

  /** Starts the two builds (in `order`) and the bare handler, runs ROUNDS rounds, stops them. */
  async function processPair(order: readonly ['new' | 'old', 'new' | 'old']): Promise<void> {
    const servers: Array<{ name: 'new' | 'old'; ivtd: IvtdServer; scripts: Record<Load, string> }> = [];
    let bare: Awaited<ReturnType<typeof startBare>> | null = null;
    try {
      for (const name of order) {
        const ivtd = await startIvtd(targets[name], { threads: 1 });
        const scripts = { get: pathsScript(lookupPaths(ivtd.partnerId, ivtd.key, 2000)), ortb: loads.includes('ortb') ? bodiesScript(ortbRequests(ivtd.partnerId, ivtd.key, 2000)) : '' };
        servers.push({ name, ivtd, scripts });
      }
      const sample = await (await fetch(`http://127.0.0.1:${servers[0]!.ivtd.prebidPort}${lookupPaths(servers[0]!.ivtd.partnerId, servers[0]!.ivtd.key, 1)[0]}`)).text();
      bare = await startBare(Buffer.byteLength(sample));
      const bareScript = pathsScript(lookupPaths('00000000-0000-4000-8000-000000000000', 'k', 2000));
      for (const s of servers) for (const l of loads) await wrkAsync({ port: s.ivtd.prebidPort, script: s.scripts[l], connections: CONNECTIONS, seconds: 2 }); // warm (JIT, caches)
      for (let round = 0; round < ROUNDS; round++) {
        const turn = round % 2 ? [...servers].reverse() : servers;
        for (const l of round % 2 ? [...loads].reverse() : loads) {
          for (const s of turn) {
            await sleep(500);
            const c0 = cpuSeconds(s.ivtd.pid);
            const r = await wrkAsync({ port: s.ivtd.prebidPort, script: s.scripts[l], connections: CONNECTIONS, seconds: DURATION });
            const c1 = cpuSeconds(s.ivtd.pid);
            if (r.non2xx + r.errors > 0) throw new Error(`${labels[s.name]} (${l}): ${r.non2xx} non-2xx answers, ${r.errors} errors`);
            rps[s.name][l].push(r.rps);
            cpuUs[s.name][l].push(((c1 - c0) / (r.rps * DURATION)) * 1e6);
          }
        }
        const b = await wrkAsync({ port: bare.port, script: bareScript, connections: CONNECTIONS, seconds: DURATION });
        rps.bare.push(b.rps);
      }
    } finally {
      if (bare !== null) await bare.stop();
      for (const s of servers) await s.ivtd.stop();
    }
  }
  const m = { new: median(rps.new.get), old: median(rps.old.get), bare: median(rps.bare) };
  const cpu = { new: median(cpuUs.new.get), old: median(cpuUs.old.get) };
  const r3 = (x: number) => +x.toFixed(3);
  const summary: Record<string, unknown> = {
    bench: 'versus',
    new: labels.new,
    old: labels.old,
    processes: PROCESSES,
    rounds: ROUNDS,
    seconds: DURATION,
    connections: CONNECTIONS,
    loads,
    rps: { new: Math.round(m.new), old: Math.round(m.old), bare: Math.round(m.bare) },
    throughput_new_vs_old: r3(m.new / m.old),
    new_vs_bare: r3(m.new / m.bare),
    old_vs_bare: r3(m.old / m.bare),
    cpu_us_per_lookup: { new: +cpu.new.toFixed(2), old: +cpu.old.toFixed(2) },
    cpu_old_vs_new: r3(cpu.old / cpu.new),
    process_pairs_new_vs_old: pairs.map(r3),
    rounds_rps: { new: rps.new.get, old: rps.old.get, bare: rps.bare },
    rounds_cpu_us: { new: cpuUs.new.get.map((x) => +x.toFixed(2)), old: cpuUs.old.get.map((x) => +x.toFixed(2)) },
    targets: { throughput_new_vs_old: '>= 1.1', new_vs_bare: '>= 0.45' },
  };
  console.log(`lookups/s  new ${Math.round(m.new)}, old ${Math.round(m.old)}, bare ${Math.round(m.bare)}: new/old ${summary.throughput_new_vs_old} (target >= 1.1), new/bare ${summary.new_vs_bare} (target >= 0.45), old/bare ${summary.old_vs_bare}`);
  console.log(`cpu/lookup new ${cpu.new.toFixed(2)} us, old ${cpu.old.toFixed(2)} us (whole process): old/new ${summary.cpu_old_vs_new}`);
  console.log(`new/old of each process pair: ${pairs.map(r3).join(', ')}`);
  if (loads.includes('ortb')) {
    // Each round's OpenRTB figure over the same build's GET figure of that round, then the median.
    const perRound = (side: 'new' | 'old') => median(rps[side].ortb.map((o, i) => o / rps[side].get[i]!));
    const o = { new: median(rps.new.ortb), old: median(rps.old.ortb) };
    const oc = { new: median(cpuUs.new.ortb), old: median(cpuUs.old.ortb) };
    summary.ortb = {
      rps: { new: Math.round(o.new), old: Math.round(o.old) },
      new_vs_old: r3(o.new / o.old),
      of_get: { new: r3(perRound('new')), old: r3(perRound('old')) },
      cpu_us_per_lookup: { new: +oc.new.toFixed(2), old: +oc.old.toFixed(2) },
      cpu_old_vs_new: r3(oc.old / oc.new),
      rounds_rps: { new: rps.new.ortb, old: rps.old.ortb },
      target_of_get: '>= 0.6',
    };
    console.log(`ortb       new ${Math.round(o.new)}, old ${Math.round(o.old)} lookups/s: new/old ${r3(o.new / o.old)}; of the same build's GET: new ${r3(perRound('new'))}, old ${r3(perRound('old'))} (target >= 0.6)`);
    console.log(`cpu/ortb   new ${oc.new.toFixed(2)} us, old ${oc.old.toFixed(2)} us (whole process): old/new ${r3(oc.old / oc.new)}`);
  }
  console.log(JSON.stringify(summary));
}

await main();
