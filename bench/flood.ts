// Flood benchmark: ivtd under the key cardinality of real bidder traffic, against its own
// repeated-key throughput measured by the same client in the same run.
//
// On one ivtd server (`--threads 2` by default), with Debian's wrk and the Lua generator
// of bench/flood-script.ts:
//   repeated     a small set of IPs, uids, IFAs and UAs over and over (the baseline);
//   ua-version   a known UA shape with never-seen version digits on every request;
//   ua-shape     a never-seen UA shape on every request;
//   flood        a new IP, uid and IFA on every request, UAs from 20 000 generated
//                real-shaped strings, 2 000 publishers, 5 000 apps (`--seconds`, 90 s);
// printing the server's RSS over time (VmRSS of its process), throughput ratios against
// repeated, and the in-thread p99 (ivtd_lookup_duration_seconds on /metrics). Then, on fresh
// servers with --threads 2 and --threads 1: one uid at 30 lookups/s spread over 16
// connections, and the p_hist the responses carry after `--phist-seconds` (20 s).
//
// The server: this checkout (default), `--checkout DIR` (another checkout, run through its
// own tsx) or `--ivtd PATH` (a built binary). `--baseline-checkout DIR` / `--baseline-ivtd
// PATH` measures a second server with the same client, both running side by side and every
// phase cut into `--slices` (4) slices alternating between them (so a change in host load
// hits both alike), and prints new/old ratios. The flood's RSS series is then over each
// server's own flood time.
//   node --import tsx bench/flood.ts [--seconds 90] [--phase-seconds 20] [--threads 2]
//        [--connections 32] [--client-threads 1] [--phist-seconds 20] [--rss-every 3]
//        [--rss-limit 6144] [--slices N] [--skip-phist] [--memory-budget 256] [--checkout DIR | --ivtd PATH]
//        [--baseline-checkout DIR | --baseline-ivtd PATH] [--cpu-prof DIR]
// `--cpu-prof DIR`: the servers run from a checkout write V8 CPU profiles of every thread to
// DIR when they stop (where a lookup thread's time goes under the flood; not for binaries).
import { connect, type Socket } from 'node:net';
import { loadavg } from 'node:os';
import { FLOOD_MODES, floodScript, type FloodMode } from './flood-script.ts';
import {
  inThreadBuckets, inThreadLatency, numArg, peakRssMb, rssMb, sleep, startBare, startIvtd, strArg, targetFromArgs, defaultTarget,
  type InThreadLatency, type IvtdServer, type IvtdTarget,
} from './processes.ts';
import { generateUas, type GeneratedUa } from './ua-gen.ts';
import { wrkAsync, wrkAvailable } from './wrk.ts';
import { resolveConfig } from '../src/base/config.ts';

const SECONDS = numArg('seconds', 90);
const PHASE_SECONDS = numArg('phase-seconds', 20);
const THREADS = numArg('threads', 2);
// The servers' --memory-budget (MB; by default ivtd's own for these --threads, as its config
// resolves it); the RSS target is it + 150 (issue 28: the budget means the process).
const BUDGET = numArg('memory-budget', resolveConfig({ threads: String(THREADS) }, {}).memoryBudget);
const RSS_TARGET = BUDGET + 150;
const CONNECTIONS = numArg('connections', 32);
const CLIENT_THREADS = numArg('client-threads', 1);
const PHIST_SECONDS = numArg('phist-seconds', 20);
const RSS_EVERY = numArg('rss-every', 3);
const RSS_LIMIT_MB = numArg('rss-limit', 6144);
const SKIP_PHIST = process.argv.includes('--skip-phist');
const CPU_PROF = strArg('cpu-prof', '');
/** Slices per non-flood phase, alternating between servers when a baseline is measured too. */
const SLICES = numArg('slices', targetFromArgs(process.argv, 'baseline-') ? 4 : 1);
/** RSS growth over the flood's second half above which memory counts as still growing. */
const FLAT_TOLERANCE = 0.05;

interface Phase {
  mode: FloodMode | 'bare';
  seconds: number;
  rps: number;
  requests: number;
  non2xx: number;
  errors: number;
  inThread: InThreadLatency | null;
}

interface RssSample {
  t: number;
  mb: number;
  /** Lookups/s since the previous sample, from the in-thread histogram's count. */
  lps: number;
}

interface TargetResult {
  label: string;
  startup_rss_mb: number;
  phases: Phase[];
  rss: RssSample[];
  rss_max_mb: number;
  /** VmHWM at the flood's end: the peak, including any between samples. */
  rss_peak_mb: number;
  rss_second_half_growth_mb: number;
  rss_second_half_growth_pct: number;
  rss_flat: boolean;
  rss_limit_hit: boolean;
  ratios: { flood: number; ua_version: number; ua_shape: number; client_headroom: number };
  p_hist: { threads_1: number; threads_2: number; diff: number } | null;
}

const ratio = (a: number, b: number) => +(a / b).toFixed(3);

/** A few paths from each mode's generator must be answered 200 with a lookup body. */
async function validate(server: IvtdServer, scripts: Map<FloodMode, string>): Promise<void> {
  for (const [mode, script] of scripts) {
    const r = await wrkAsync({ port: server.prebidPort, script, connections: 1, seconds: 1, scriptArgs: ['4', '1', '9'] });
    const paths = r.scriptOutput.filter((l) => l.startsWith('@PATH ')).map((l) => l.slice(6));
    if (paths.length === 0) throw new Error(`the ${mode} script printed no sample paths`);
    for (const p of paths) {
      const res = await fetch(`http://127.0.0.1:${server.prebidPort}${p}`);
      const body = await res.text();
      if (res.status !== 200 || !body.includes('"botRisk"')) throw new Error(`${mode} request refused (${res.status}): ${body}\n${p}`);
    }
    if (r.non2xx > 0) throw new Error(`${mode}: ${r.non2xx} of ${r.requests} requests got a non-2xx status`);
  }
}

async function lookupCount(metricsPort: number): Promise<number> {
  return (await inThreadBuckets(metricsPort)).get('+Inf') ?? NaN;
}

/** One uid (one IP, one UA) at `rate` lookups/s round-robin over `connections` sockets; p_hist of the last responses. */
async function oneUidPHist(port: number, path: string, rate: number, connections: number, seconds: number): Promise<number> {
  const socks: Socket[] = [];
  const late: number[] = [];
  const t0 = performance.now();
  const bodies = (sock: Socket) => {
    let buf = '';
    sock.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      for (;;) {
        const h = buf.indexOf('\r\n\r\n');
        if (h < 0) return;
        const len = Number(/content-length: *(\d+)/i.exec(buf.slice(0, h))?.[1] ?? 0);
        if (buf.length < h + 4 + len) return;
        const body = buf.slice(h + 4, h + 4 + len);
        buf = buf.slice(h + 4 + len);
        if (performance.now() - t0 < (seconds - 5) * 1000) continue;
        const p = (JSON.parse(body) as { components?: { p_hist?: number } }).components?.p_hist;
        if (typeof p === 'number') late.push(p);
      }
    });
  };
  for (let i = 0; i < connections; i++) {
    const s = connect(port, '127.0.0.1');
    s.setNoDelay(true);
    bodies(s);
    socks.push(s);
  }
  const total = Math.round(rate * seconds);
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    socks[i % connections]!.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  }
  await sleep(500);
  for (const s of socks) s.destroy();
  if (late.length === 0) throw new Error('no p_hist in the responses of the last 5 s');
  late.sort((a, b) => a - b);
  return late[late.length >> 1]!; // median over the last 5 s
}

async function pHist(target: IvtdTarget): Promise<TargetResult['p_hist']> {
  const out: Record<number, number> = {};
  for (const threads of [2, 1]) {
    const server = await startIvtd(target, { threads });
    try {
      const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36');
      const path =
        `/api/v1/ivt/lookup?schain=1.0,1!exchange1.example,1234,1,,,&p=${server.partnerId}&k=${server.key}&pub=pub-1&node=bidder-1` +
        `&ip=81.2.69.142&ua=${ua}&uid=one-user-7c2f9a&sid=exchange1.example&adt=1&dvt=2&dmn=site1.example`;
      out[threads] = await oneUidPHist(server.prebidPort, path, 30, 16, PHIST_SECONDS);
    } finally {
      await server.stop();
    }
  }
  return { threads_1: out[1]!, threads_2: out[2]!, diff: +Math.abs(out[2]! - out[1]!).toFixed(3) };
}

/** One target's server and what has been measured on it so far. */
interface Subject {
  target: IvtdTarget;
  server: IvtdServer | null;
  scripts: Map<FloodMode, string>;
  startupRss: number;
  phases: Phase[];
  rss: RssSample[];
  /** VmHWM when the flood ended (NaN before). */
  peakMb: number;
  limitHit: boolean;
}

const phaseLine = (label: string, phase: Phase) => {
  const it = phase.inThread ? `in-thread p99 ${phase.inThread.p99}` : 'no in-thread histogram';
  return `${phase.mode.padEnd(10)} ${String(phase.rps).padStart(6)} req/s over ${phase.seconds} s  ${it}  non-2xx ${phase.non2xx}  errors ${phase.errors}  [${label}]`;
};

async function start(target: IvtdTarget, uas: GeneratedUa[]): Promise<Subject> {
  const server = await startIvtd(target, { threads: THREADS, args: ['--memory-budget', String(BUDGET)], nodeArgs: CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : undefined });
  try {
    await sleep(1000);
    const startupRss = rssMb(server.pid);
    const scripts = new Map(FLOOD_MODES.map((m) => [m, floodScript(m, uas, server)] as const));
    await validate(server, scripts);
    // Warm-up (JIT, caches).
    await wrkAsync({ port: server.prebidPort, script: scripts.get('repeated')!, connections: CONNECTIONS, seconds: 3, threads: CLIENT_THREADS, scriptArgs: ['0', String(CLIENT_THREADS), '1'] });
    return { target, server, scripts, startupRss, phases: [], rss: [], peakMb: NaN, limitHit: false };
  } catch (e) {
    await server.stop();
    throw e;
  }
}

/**
 * The flood, in `SLICES` slices alternating between the subjects (one block without a
 * baseline). Each server's RSS and lookup rate are sampled every RSS_EVERY seconds of its
 * own flood time (t = seconds of flood it has received). Stops every server after.
 */
async function floodPhase(subjects: Subject[]): Promise<void> {
  const sliceSeconds = Math.max(RSS_EVERY, Math.round(SECONDS / SLICES));
  const st = await Promise.all(
    subjects.map(async (s) => {
      const before = await inThreadBuckets(s.server!.metricsPort);
      s.rss.push({ t: 0, mb: rssMb(s.server!.pid), lps: NaN });
      return { before, floodT: 0, lastT: 0, lastCount: before.get('+Inf') ?? NaN, requests: 0, non2xx: 0, errors: 0 };
    }),
  );
  try {
    for (let k = 0; k < SLICES; k++) {
      const order = subjects.map((_, i) => i);
      if (k % 2) order.reverse();
      for (const i of order) {
        const s = subjects[i]!;
        const x = st[i]!;
        const server = s.server!;
        if (s.limitHit) continue;
        const abort = new AbortController();
        const t0 = performance.now();
        let finished = 0;
        const load = wrkAsync(
          { port: server.prebidPort, script: s.scripts.get('flood')!, connections: CONNECTIONS, seconds: sliceSeconds, threads: CLIENT_THREADS, scriptArgs: ['0', String(CLIENT_THREADS), String(5 + k)] },
          abort.signal,
        );
        void load.finally(() => (finished = performance.now())).catch(() => undefined);
        while (!finished) {
          await Promise.race([sleep(RSS_EVERY * 1000), load.catch(() => undefined)]);
          if (finished) break;
          const t = x.floodT + (performance.now() - t0) / 1000;
          const mb = rssMb(server.pid);
          const count = await lookupCount(server.metricsPort);
          s.rss.push({ t: Math.round(t), mb, lps: Math.round((count - x.lastCount) / (t - x.lastT)) });
          x.lastCount = count;
          x.lastT = t;
          if (mb > RSS_LIMIT_MB && !abort.signal.aborted) {
            s.limitHit = true;
            console.log(`RSS ${mb} MB passed --rss-limit ${RSS_LIMIT_MB}: stopping the flood early [${s.target.label}]`);
            abort.abort();
          }
        }
        const w = await load;
        x.floodT += (finished - t0) / 1000;
        x.requests += w.requests;
        x.non2xx += w.non2xx;
        x.errors += w.errors;
      }
    }
    await sleep(1200); // lookup threads report their histogram once a second
    for (const [i, s] of subjects.entries()) {
      const x = st[i]!;
      s.rss.push({ t: Math.round(x.floodT), mb: rssMb(s.server!.pid), lps: NaN });
      s.peakMb = peakRssMb(s.server!.pid);
      const inThread = inThreadLatency(x.before, await inThreadBuckets(s.server!.metricsPort));
      const phase: Phase = { mode: 'flood', seconds: Math.round(x.floodT), rps: Math.round(x.requests / x.floodT), requests: x.requests, non2xx: x.non2xx, errors: x.errors, inThread: inThread.lookups > 0 ? inThread : null };
      s.phases.push(phase);
      console.log(phaseLine(s.target.label, phase));
    }
  } finally {
    for (const s of subjects) {
      const server = s.server;
      s.server = null;
      const code = await server?.stop();
      if (code !== undefined && code !== 0) console.error(`ivtd exited with ${code} [${s.target.label}]`);
    }
  }
}

function summarise(s: Subject, headroomRps: number): TargetResult {
  const by = (m: Phase['mode']) => s.phases.find((p) => p.mode === m)!;
  const { rss } = s;
  const end = rss.at(-1)!;
  const mid = rss.reduce((best, x) => (Math.abs(x.t - end.t / 2) < Math.abs(best.t - end.t / 2) ? x : best), rss[0]!);
  const growth = end.mb - mid.mb;
  const r: TargetResult = {
    label: s.target.label,
    startup_rss_mb: s.startupRss,
    phases: s.phases,
    rss,
    rss_max_mb: Math.max(...rss.map((x) => x.mb)),
    rss_peak_mb: s.peakMb,
    rss_second_half_growth_mb: growth,
    rss_second_half_growth_pct: +((100 * growth) / mid.mb).toFixed(1),
    rss_flat: growth <= FLAT_TOLERANCE * mid.mb,
    rss_limit_hit: s.limitHit,
    ratios: {
      flood: ratio(by('flood').rps, by('repeated').rps),
      ua_version: ratio(by('ua-version').rps, by('repeated').rps),
      ua_shape: ratio(by('ua-shape').rps, by('repeated').rps),
      client_headroom: ratio(headroomRps, by('repeated').rps),
    },
    p_hist: null,
  };
  console.log(`\n== ${s.target.label} (--threads ${THREADS})`);
  console.log(`RSS (MB)   start-up ${s.startupRss}; flood t=s:MB(lookups/s) ${rss.map((x) => `${x.t}:${x.mb}${Number.isNaN(x.lps) ? '' : `(${x.lps})`}`).join(' ')}`);
  console.log(
    `RSS        max ${r.rss_max_mb} MB sampled, peak ${r.rss_peak_mb} MB (VmHWM, start-up to the flood's end); second half ${growth >= 0 ? '+' : ''}${growth} MB (${r.rss_second_half_growth_pct} %): ` +
      `${r.rss_flat ? 'flat' : 'STILL GROWING'}${s.limitHit ? ' (flood stopped at --rss-limit)' : ''}  [target <= ${RSS_TARGET} MB (the ${BUDGET} MB budget + 150), flat]`,
  );
  console.log(`ratios     flood/repeated ${r.ratios.flood} [>= 0.7]; ua-version/repeated ${r.ratios.ua_version}, ua-shape/repeated ${r.ratios.ua_shape} [>= 0.25]; client headroom ${r.ratios.client_headroom}x`);
  const bad = s.phases.filter((p) => p.non2xx + p.errors > 0.01 * p.requests);
  if (bad.length) console.log(`WARNING    over 1 % failed requests in: ${bad.map((p) => p.mode).join(', ')} — figures are not comparable`);
  return r;
}

/**
 * One phase on every subject, in `SLICES` slices alternating between the subjects (so a
 * drift in the host's load is shared), summed: requests over the phase's seconds.
 */
async function slicedPhase(subjects: Subject[], mode: FloodMode, run: number): Promise<[Subject, Phase][]> {
  const sliceSeconds = Math.max(1, Math.round(PHASE_SECONDS / SLICES));
  const before = await Promise.all(subjects.map((s) => inThreadBuckets(s.server!.metricsPort)));
  const sums = subjects.map(() => ({ requests: 0, non2xx: 0, errors: 0 }));
  for (let k = 0; k < SLICES; k++) {
    const order = subjects.map((_, i) => i);
    if (k % 2) order.reverse();
    for (const i of order) {
      const s = subjects[i]!;
      const w = await wrkAsync({ port: s.server!.prebidPort, script: s.scripts.get(mode)!, connections: CONNECTIONS, seconds: sliceSeconds, threads: CLIENT_THREADS, scriptArgs: ['0', String(CLIENT_THREADS), String(run * 100 + k)] });
      sums[i]!.requests += w.requests;
      sums[i]!.non2xx += w.non2xx;
      sums[i]!.errors += w.errors;
    }
  }
  await sleep(1200); // lookup threads report their histogram once a second
  return Promise.all(
    subjects.map(async (s, i): Promise<[Subject, Phase]> => {
      const inThread = inThreadLatency(before[i]!, await inThreadBuckets(s.server!.metricsPort));
      const seconds = sliceSeconds * SLICES;
      return [s, { mode, seconds, rps: Math.round(sums[i]!.requests / seconds), ...sums[i]!, inThread: inThread.lookups > 0 ? inThread : null }];
    }),
  );
}

async function main(): Promise<void> {
  if (!wrkAvailable()) {
    console.log("flood: skipped — needs Debian's wrk (apt-get install wrk): no Node client generates distinct keys fast enough on 2 cores");
    return;
  }
  const baseline = targetFromArgs(process.argv, 'baseline-');
  const target = targetFromArgs(process.argv) ?? defaultTarget(baseline);
  const uas = generateUas(20_000);
  const load0 = loadavg()[0]!;
  console.log(`flood bench: ${SECONDS} s flood, ${PHASE_SECONDS} s per other phase, server --threads ${THREADS}, wrk -t${CLIENT_THREADS} -c${CONNECTIONS}, ${uas.length} generated UAs`);
  // With a baseline, both servers run side by side and every phase alternates between them,
  // so a change in the host's load hits both alike.
  const subjects: Subject[] = [];
  try {
    for (const t of baseline ? [baseline, target] : [target]) subjects.push(await start(t, uas));
    for (const [i, mode] of (['repeated', 'ua-version', 'ua-shape'] as const).entries()) {
      for (const [s, phase] of await slicedPhase(subjects, mode, 2 + i)) {
        s.phases.push(phase);
        console.log(phaseLine(s.target.label, phase));
      }
    }
    await floodPhase(subjects);
  } finally {
    for (const s of subjects) await s.server?.stop();
  }

  // Client headroom: the same client and script against a bare uWS handler.
  const bare = await startBare(400);
  let headroom: number;
  try {
    const w = await wrkAsync({ port: bare.port, script: subjects[0]!.scripts.get('repeated')!, connections: CONNECTIONS, seconds: Math.min(PHASE_SECONDS, 10), threads: CLIENT_THREADS, scriptArgs: ['0', String(CLIENT_THREADS), '6'] });
    headroom = w.rps;
    console.log(`bare uWS   ${String(Math.round(w.rps)).padStart(6)} req/s (same client, repeated script)`);
  } finally {
    await bare.stop();
  }

  const results = subjects.map((s) => summarise(s, headroom));
  if (!SKIP_PHIST) {
    for (const r of results) {
      r.p_hist = await pHist(subjects.find((s) => s.target.label === r.label)!.target);
      console.log(`p_hist     one uid at 30/s over 16 connections, after ${PHIST_SECONDS} s: --threads 2 ${r.p_hist!.threads_2} vs --threads 1 ${r.p_hist!.threads_1} (diff ${r.p_hist!.diff}) [equal within 0.05]  [${r.label}]`);
    }
  }
  const summary: Record<string, unknown> = {
    bench: 'flood',
    seconds: SECONDS,
    phase_seconds: PHASE_SECONDS,
    threads: THREADS,
    client: { tool: 'wrk', threads: CLIENT_THREADS, connections: CONNECTIONS },
    // The machine may be shared: other work shows up in every figure.
    load_average_1m: { start: +load0.toFixed(2), end: +loadavg()[0]!.toFixed(2) },
    results,
    memory_budget_mb: BUDGET,
    targets: { rss_mb: `<= ${RSS_TARGET} (budget ${BUDGET} + 150), flat`, flood_ratio: '>= 0.7', ua_miss_ratio: '>= 0.25', p_hist_diff: '<= 0.05' },
  };
  if (baseline) {
    const [old, now] = results as [TargetResult, TargetResult];
    const rps = (r: TargetResult, m: Phase['mode']) => r.phases.find((p) => p.mode === m)!.rps;
    const vs = Object.fromEntries(FLOOD_MODES.map((m) => [m, ratio(rps(now, m), rps(old, m))]));
    summary.new_vs_baseline = { rps: vs, rss_max: ratio(now.rss_max_mb, old.rss_max_mb), rss_peak: ratio(now.rss_peak_mb, old.rss_peak_mb), startup_rss: ratio(now.startup_rss_mb, old.startup_rss_mb) };
    console.log(`\nnew/baseline throughput ${FLOOD_MODES.map((m) => `${m} ${vs[m]}`).join(', ')}; max RSS ${now.rss_max_mb} vs ${old.rss_max_mb} MB, peak (VmHWM) ${now.rss_peak_mb} vs ${old.rss_peak_mb} MB; start-up RSS ${now.startup_rss_mb} vs ${old.startup_rss_mb} MB`);
  }
  console.log(JSON.stringify(summary));
}

await main();
