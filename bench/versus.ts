// Lookup speed of this build against a baseline build, by the same client in one run: the
// figure issue-style comparisons ask for ("per lookup, against the round's first commit").
// Both servers run side by side, each with --threads 1; saturation rounds alternate between
// them and the bare uWebSockets.js handler (bench/bare-server.ts) with the same wrk script
// of 2 000 varied GET lookups, so a change in host load hits all three alike. Per round and
// server: requests/s, and the server process's CPU time per request (utime + stime from
// /proc, all its threads), which holds on a busy host where the client cannot saturate
// the server. Medians over the rounds, and their ratios.
//   node --import tsx bench/versus.ts --baseline-ivtd OLD/dist/ivtd [--ivtd dist/ivtd]
//        [--rounds 5] [--duration 6] [--connections 50]
import { readFileSync } from 'node:fs';
import { numArg, sleep, startBare, startIvtd, targetFromArgs, thisCheckout, type IvtdServer } from './processes.ts';
import { lookupPaths } from './requests.ts';
import { pathsScript, wrkAsync, wrkAvailable } from './wrk.ts';

const ROUNDS = numArg('rounds', 5);
const DURATION = numArg('duration', 6);
const CONNECTIONS = numArg('connections', 50);

/** CPU seconds the process has used (all threads): utime + stime from /proc/PID/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // fields 14 and 15 of stat(5), in clock ticks (USER_HZ 100)
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  if (!wrkAvailable()) throw new Error('bench/versus.ts needs wrk (apt-get install wrk)');
  const baseline = targetFromArgs(process.argv, 'baseline-');
  if (!baseline) throw new Error('give --baseline-ivtd PATH or --baseline-checkout DIR');
  const target = targetFromArgs(process.argv) ?? thisCheckout();
  const servers: Array<{ name: 'new' | 'old'; label: string; ivtd: IvtdServer; script: string }> = [];
  for (const [name, t] of [['new', target], ['old', baseline]] as const) {
    const ivtd = await startIvtd(t, { threads: 1 });
    servers.push({ name, label: t.label, ivtd, script: pathsScript(lookupPaths(ivtd.partnerId, ivtd.key, 2000)) });
  }
  const sample = await (await fetch(`http://127.0.0.1:${servers[0]!.ivtd.prebidPort}${lookupPaths(servers[0]!.ivtd.partnerId, servers[0]!.ivtd.key, 1)[0]}`)).text();
  const bare = await startBare(Buffer.byteLength(sample));
  const bareScript = pathsScript(lookupPaths('00000000-0000-4000-8000-000000000000', 'k', 2000));
  const rps: Record<'new' | 'old' | 'bare', number[]> = { new: [], old: [], bare: [] };
  const cpuUs: Record<'new' | 'old', number[]> = { new: [], old: [] };
  try {
    for (const s of servers) await wrkAsync({ port: s.ivtd.prebidPort, script: s.script, connections: CONNECTIONS, seconds: 2 }); // warm (JIT, caches)
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? [...servers].reverse() : servers;
      for (const s of order) {
        await sleep(500);
        const c0 = cpuSeconds(s.ivtd.pid);
        const r = await wrkAsync({ port: s.ivtd.prebidPort, script: s.script, connections: CONNECTIONS, seconds: DURATION });
        const c1 = cpuSeconds(s.ivtd.pid);
        if (r.non2xx + r.errors > 0) throw new Error(`${s.label}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
        rps[s.name].push(r.rps);
        cpuUs[s.name].push(((c1 - c0) / (r.rps * DURATION)) * 1e6);
      }
      const b = await wrkAsync({ port: bare.port, script: bareScript, connections: CONNECTIONS, seconds: DURATION });
      rps.bare.push(b.rps);
    }
  } finally {
    await bare.stop();
    for (const s of servers) await s.ivtd.stop();
  }
  const m = { new: median(rps.new), old: median(rps.old), bare: median(rps.bare) };
  const cpu = { new: median(cpuUs.new), old: median(cpuUs.old) };
  const summary = {
    bench: 'versus',
    new: servers[0]!.label,
    old: servers[1]!.label,
    rounds: ROUNDS,
    seconds: DURATION,
    connections: CONNECTIONS,
    rps: { new: Math.round(m.new), old: Math.round(m.old), bare: Math.round(m.bare) },
    throughput_new_vs_old: +(m.new / m.old).toFixed(3),
    new_vs_bare: +(m.new / m.bare).toFixed(3),
    old_vs_bare: +(m.old / m.bare).toFixed(3),
    cpu_us_per_lookup: { new: +cpu.new.toFixed(2), old: +cpu.old.toFixed(2) },
    cpu_old_vs_new: +(cpu.old / cpu.new).toFixed(3),
    rounds_rps: rps,
    rounds_cpu_us: { new: cpuUs.new.map((x) => +x.toFixed(2)), old: cpuUs.old.map((x) => +x.toFixed(2)) },
    targets: { throughput_new_vs_old: '>= 1.1', new_vs_bare: '>= 0.45' },
  };
  console.log(`lookups/s  new ${summary.rps.new}, old ${summary.rps.old}, bare ${summary.rps.bare}: new/old ${summary.throughput_new_vs_old} (target >= 1.1), new/bare ${summary.new_vs_bare} (target >= 0.45), old/bare ${summary.old_vs_bare}`);
  console.log(`cpu/lookup new ${summary.cpu_us_per_lookup.new} us, old ${summary.cpu_us_per_lookup.old} us (whole process): old/new ${summary.cpu_old_vs_new}`);
  console.log(JSON.stringify(summary));
}

await main();
