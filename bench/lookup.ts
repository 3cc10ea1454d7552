// Lookup throughput and latency: ivtd's pre-bid listener against a bare uWebSockets.js
// handler returning a same-size body, driven by the same client in one run. Both servers
// and every client run as processes of their own, so no clock shares an event loop.
// Reports ratios (the machine is shared and noisy; absolute numbers move, ratios less).
//  - throughput: closed loop at saturation (wrk when installed, else autocannon);
//  - latency at fixed rates (`--rates`, default 2000 req/s and half of ivtd's saturation),
//    ivtd and bare in alternating rounds, with wrk (µs) and bench/paced.ts; see
//    bench/latency.ts;
//  - the in-thread lookup time from /metrics at saturation and during the latency rounds;
//  - on Linux, the function-call interrupts (`CAL` in /proc/interrupts, all CPUs) per request
//    at saturation: mostly the wake-ups of an idle client thread by a response, which on a VM
//    without guest halt-polling cost the sending thread (docs/benchmarks.md, "wake-ups").
//   node --import tsx bench/lookup.ts [--duration 8] [--connections 50] [--threads 1]
//        [--rates 2000,half] [--rounds 3] [--policy-entries 100000] [--policy-rounds 3]
//        [--checkout DIR | --ivtd PATH] [--phases policy,ortb,beacon,latency]
//  - the policy phase (bench/policy.ts): saturation with and without a customer's
//    100 000-entry allow/deny list, alternating in one run.
//  - the OpenRTB phase (`--ortb-rounds 3`, 0 skips it): the same lookups as 2–3 KB bid
//    requests POSTed to /api/v1/ivt/ortb against the GET form, same client, alternating.
//  - the beacon phase (`--beacon-rounds 3`, 0 skips it): impression beacons
//    (GET /api/v1/ivt/imp?lid=…, the lids of real lookups, most of them replays after the
//    first pass) against GET lookups, same client, alternating: beacons/s vs lookups/s.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { describeLatency, latencyVsBare, type LatencyFigures } from './latency.ts';
import { inThreadBuckets, inThreadLatency, numArg, sleep, startBare, strArg, startIvtd, targetFromArgs, thisCheckout } from './processes.ts';
import { lookupPaths, ortbRequests, type BodyRequest } from './requests.ts';
import { bodiesScript, pathsScript, wrkAsync, wrkAvailable } from './wrk.ts';
import { bigPolicy, lookupTimeTotals, setPolicy } from './policy.ts';

const DURATION = numArg('duration', 8);
const CONNECTIONS = numArg('connections', 50);
const THREADS = numArg('threads', 1);
const ROUNDS = numArg('rounds', 3);
const RATES = strArg('rates', '2000,half').split(',');
/** Entries of the policy phase's list, and its rounds (each: one run without, one with); 0 skips it. */
const POLICY_ENTRIES = numArg('policy-entries', 100_000);
const POLICY_ROUNDS = numArg('policy-rounds', 3);
/** Rounds of the OpenRTB phase (each: one GET run, one ORTB run); 0 skips it. */
const ORTB_ROUNDS = numArg('ortb-rounds', 3);
/** Rounds of the beacon phase (each: one lookup run, one beacon run); 0 skips it. */
const BEACON_ROUNDS = numArg('beacon-rounds', 3);
/** Which phases run (`--phases ortb,beacon`); saturation against the bare handler always runs. */
const PHASES = new Set(strArg('phases', 'policy,ortb,beacon,latency').split(','));
for (const p of PHASES) if (!['policy', 'ortb', 'beacon', 'latency'].includes(p)) throw new Error(`--phases takes policy, ortb, beacon, latency (got ${p})`);
if (RATES.some((r) => r !== 'half' && !(Number(r) > 0))) throw new Error(`--rates takes req/s figures or "half", e.g. 2000,half`);

interface Run {
  client: 'wrk' | 'autocannon';
  rps: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  /** Function-call interrupts per request during the run (null where /proc/interrupts has no CAL row). */
  calPerRequest: number | null;
}

/** The `CAL` row of /proc/interrupts summed over the CPUs, or null (not Linux, or no such row). */
function callInterrupts(): number | null {
  let text: string;
  try {
    text = readFileSync('/proc/interrupts', 'utf8');
  } catch {
    return null;
  }
  const row = text.split('\n').find((l) => l.trimStart().startsWith('CAL:'));
  if (row === undefined) return null;
  let sum = 0;
  for (const f of row.trim().split(/\s+/).slice(1)) {
    if (!/^\d+$/.test(f)) break; // the counts end where the row's label begins
    sum += Number(f);
  }
  return sum;
}

/** Saturation: a closed loop of CONNECTIONS sockets, GETting `paths` or POSTing bodies. */
async function hammer(port: number, paths: string[] | BodyRequest[], duration: number): Promise<Run> {
  const posts = typeof paths[0] === 'object' ? (paths as BodyRequest[]) : null;
  if (wrkAvailable()) {
    const script = posts ? bodiesScript(posts) : pathsScript(paths as string[]);
    const cal0 = callInterrupts();
    const w = await wrkAsync({ port, script, connections: CONNECTIONS, seconds: duration });
    const cal1 = callInterrupts();
    const requests = w.rps * duration;
    const calPerRequest = cal0 === null || cal1 === null || requests <= 0 ? null : +((cal1 - cal0) / requests).toFixed(3);
    return { client: 'wrk', rps: Math.round(w.rps), p50Ms: w.p50Ms, p99Ms: w.p99Ms, non2xx: w.non2xx + w.errors, calPerRequest };
  }
  const requests = posts
    ? posts.map((r) => ({ method: 'POST' as const, path: r.path, body: r.body, headers: { 'content-type': 'application/json' } }))
    : (paths as string[]).map((p) => ({ method: 'GET' as const, path: p }));
  const r = await autocannon({ url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration, requests });
  // autocannon runs in this process: its own wake-ups would be counted with the server's.
  return { client: 'autocannon', rps: Math.round(r.requests.average), p50Ms: r.latency.p50, p99Ms: r.latency.p99, non2xx: r.non2xx + r.errors, calPerRequest: null };
}

async function main(): Promise<void> {
  const target = targetFromArgs(process.argv) ?? thisCheckout();
  const ivtd = await startIvtd(target, { threads: THREADS });
  const paths = lookupPaths(ivtd.partnerId, ivtd.key, 2000);

  // A real response fixes the baseline's body size.
  const sample = await fetch(`http://127.0.0.1:${ivtd.prebidPort}${paths[0]}`);
  const sampleBody = await sample.text();
  if (sample.status !== 200) throw new Error(`sample lookup failed: ${sample.status} ${sampleBody}`);
  const bare = await startBare(Buffer.byteLength(sampleBody));
  try {
    // Warm both (JIT, caches), then measure.
    await hammer(bare.port, paths, 2);
    await hammer(ivtd.prebidPort, paths, 2);
    const base = await hammer(bare.port, paths, DURATION);
    const before = await inThreadBuckets(ivtd.metricsPort);
    const sat = await hammer(ivtd.prebidPort, paths, DURATION);
    await sleep(1200); // the threads report once a second
    const inThread = inThreadLatency(before, await inThreadBuckets(ivtd.metricsPort));

    const policy = POLICY_ROUNDS > 0 && PHASES.has('policy') ? await policyPhase(ivtd, paths) : null;
    const ortb = ORTB_ROUNDS > 0 && PHASES.has('ortb') ? await ortbPhase(ivtd, paths) : null;
    const beacons = BEACON_ROUNDS > 0 && PHASES.has('beacon') ? await beaconPhase(ivtd, paths) : null;

    const rates = RATES.map((r) => (r === 'half' ? Math.round(sat.rps / 2) : Number(r)));
    const roundSeconds = Math.max(2, Math.round(DURATION / 2));
    const latency: LatencyFigures[] = [];
    for (const rate of PHASES.has('latency') ? rates : []) {
      for (const client of wrkAvailable() ? (['wrk', 'paced'] as const) : (['paced'] as const)) {
        latency.push(await latencyVsBare({ client, ivtdPort: ivtd.prebidPort, barePort: bare.port, metricsPort: ivtd.metricsPort, paths, rate, seconds: roundSeconds, rounds: ROUNDS }));
      }
    }

    const summary = {
      bench: 'lookup',
      target: target.label,
      threads: THREADS,
      connections: CONNECTIONS,
      bare: base,
      ivtd: sat,
      throughput_ratio: +(sat.rps / base.rps).toFixed(3),
      in_thread_latency_at_saturation: inThread,
      latency_at_fixed_rate: latency,
      policy,
      ortb,
      beacons,
      targets: { throughput_ratio: '>= 0.45', fixed_rate_p99_ms: '<= 1 (end to end, on a quiet host)', policy_ratio: '>= 0.95', ortb_ratio: '>= 0.6', beacon_ratio: '>= 1' },
    };
    console.log(`saturation (${sat.client}, ${CONNECTIONS} connections): bare ${base.rps} req/s, ivtd ${sat.rps} req/s, ratio ${summary.throughput_ratio} (target >= 0.45, as bench:versus's new/bare), non-2xx ${sat.non2xx}`);
    if (sat.calPerRequest !== null) console.log(`wake-ups   function-call interrupts per request at saturation: bare ${base.calPerRequest}, ivtd ${sat.calPerRequest}`);
    console.log(`in-thread  at saturation: p50 ${inThread.p50}, p99 ${inThread.p99}, p99.9 ${inThread.p999} (${inThread.lookups} lookups)`);
    if (policy) {
      console.log(
        `policy     ${policy.entries} entries: ${policy.with_list_rps} vs ${policy.no_list_rps} req/s without (ratio ${policy.throughput_ratio}, target >= 0.95); ` +
          `mean in-thread lookup ${policy.with_list_mean_us} vs ${policy.no_list_mean_us} us (ratio ${policy.in_thread_ratio}); set in ${policy.set_ms} ms`,
      );
    }
    if (ortb) {
      console.log(
        `ortb       ${ortb.body_bytes.min}–${ortb.body_bytes.max} B bid requests: ${ortb.ortb_rps} vs ${ortb.get_rps} req/s by GET (ratio ${ortb.throughput_ratio}, target >= 0.6); ` +
          `mean in-thread lookup ${ortb.ortb_mean_us} vs ${ortb.get_mean_us} us` +
          (ortb.ortb_cal_per_request === null ? '' : `; function-call interrupts per request ${ortb.ortb_cal_per_request} vs ${ortb.get_cal_per_request}`),
      );
    }
    if (beacons) console.log(`beacons    ${beacons.beacon_rps} beacons/s vs ${beacons.lookup_rps} lookups/s (ratio ${beacons.throughput_ratio}, target >= 1), one thread per side: ${THREADS}`);
    for (const l of latency) console.log(`latency    ${describeLatency(l)}`);
    if (!wrkAvailable()) console.log('latency    wrk not installed (apt-get install wrk): Node paced client only');
    console.log(JSON.stringify(summary));
  } finally {
    await bare.stop();
    const code = await ivtd.stop();
    if (code !== 0) console.error(`ivtd exited with ${code}`);
  }
}

/**
 * Saturation rounds alternating between no policy and a POLICY_ENTRIES-entry one for the
 * bench's customer; medians of each side, so a noisy neighbour moment hurts both alike.
 */
async function policyPhase(ivtd: Awaited<ReturnType<typeof startIvtd>>, paths: string[]) {
  const entries = bigPolicy(POLICY_ENTRIES);
  const rps: Record<'none' | 'list', number[]> = { none: [], list: [] };
  const mean: Record<'none' | 'list', number[]> = { none: [], list: [] };
  let setMs = 0;
  for (let round = 0; round < POLICY_ROUNDS; round++) {
    // Alternate which side goes first, so a drift over the run does not favour one.
    const order: Array<'none' | 'list'> = round % 2 ? ['list', 'none'] : ['none', 'list'];
    for (const side of order) {
      const t0 = Date.now();
      await setPolicy(ivtd.dataDir, ivtd.partnerId, side === 'list' ? entries : []);
      if (side === 'list') setMs = Date.now() - t0;
      await hammer(ivtd.prebidPort, paths, 1); // warm the new state
      await sleep(1100);
      const [s0, c0] = await lookupTimeTotals(ivtd.metricsPort);
      const r = await hammer(ivtd.prebidPort, paths, DURATION);
      await sleep(1200); // the threads report once a second
      const [s1, c1] = await lookupTimeTotals(ivtd.metricsPort);
      if (r.non2xx > 0) throw new Error(`policy phase: ${r.non2xx} non-2xx answers`);
      rps[side].push(r.rps);
      mean[side].push(((s1 - s0) / (c1 - c0)) * 1e6);
    }
  }
  await setPolicy(ivtd.dataDir, ivtd.partnerId, []);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const noRps = median(rps.none), listRps = median(rps.list);
  const noUs = median(mean.none), listUs = median(mean.list);
  return {
    entries: entries.length,
    rounds: POLICY_ROUNDS,
    set_ms: setMs,
    no_list_rps: noRps,
    with_list_rps: listRps,
    throughput_ratio: +(listRps / noRps).toFixed(3),
    no_list_mean_us: +noUs.toFixed(2),
    with_list_mean_us: +listUs.toFixed(2),
    in_thread_ratio: +(noUs / listUs).toFixed(3),
    rounds_rps: rps,
    rounds_mean_us: { none: mean.none.map((x) => +x.toFixed(2)), list: mean.list.map((x) => +x.toFixed(2)) },
  };
}

/**
 * The same lookups by GET and as OpenRTB bid requests (POST /api/v1/ivt/ortb), saturation
 * rounds alternating between the two with the same client; medians of each side. The
 * in-thread mean includes the ORTB body's inflate/parse/map (the handler's whole time).
 */
async function ortbPhase(ivtd: Awaited<ReturnType<typeof startIvtd>>, paths: string[]) {
  const bodies = ortbRequests(ivtd.partnerId, ivtd.key, paths.length);
  const probe = await fetch(`http://127.0.0.1:${ivtd.prebidPort}${bodies[0]!.path}`, { method: 'POST', body: bodies[0]!.body, headers: { 'content-type': 'application/json' } });
  if (probe.status !== 200) throw new Error(`ortb phase: sample bid request answered ${probe.status} ${await probe.text()}`);
  await probe.text();
  const sizes = bodies.map((b) => Buffer.byteLength(b.body)).sort((a, b) => a - b);
  const rps: Record<'get' | 'ortb', number[]> = { get: [], ortb: [] };
  const mean: Record<'get' | 'ortb', number[]> = { get: [], ortb: [] };
  const cal: Record<'get' | 'ortb', number[]> = { get: [], ortb: [] };
  await hammer(ivtd.prebidPort, bodies, 2); // warm the ORTB path (JIT)
  for (let round = 0; round < ORTB_ROUNDS; round++) {
    const order: Array<'get' | 'ortb'> = round % 2 ? ['ortb', 'get'] : ['get', 'ortb'];
    for (const side of order) {
      await sleep(1100);
      const [s0, c0] = await lookupTimeTotals(ivtd.metricsPort);
      const r = await hammer(ivtd.prebidPort, side === 'get' ? paths : bodies, DURATION);
      await sleep(1200); // the threads report once a second
      const [s1, c1] = await lookupTimeTotals(ivtd.metricsPort);
      if (r.non2xx > 0) throw new Error(`ortb phase (${side}): ${r.non2xx} non-2xx answers`);
      rps[side].push(r.rps);
      mean[side].push(((s1 - s0) / (c1 - c0)) * 1e6);
      if (r.calPerRequest !== null) cal[side].push(r.calPerRequest);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const getRps = median(rps.get), ortbRps = median(rps.ortb);
  return {
    rounds: ORTB_ROUNDS,
    body_bytes: { min: sizes[0]!, median: sizes[sizes.length >> 1]!, max: sizes[sizes.length - 1]! },
    get_rps: getRps,
    ortb_rps: ortbRps,
    throughput_ratio: +(ortbRps / getRps).toFixed(3),
    get_mean_us: +median(mean.get).toFixed(2),
    ortb_mean_us: +median(mean.ortb).toFixed(2),
    /** Function-call interrupts per request (medians), null without /proc/interrupts' CAL row. */
    get_cal_per_request: cal.get.length > 0 ? median(cal.get) : null,
    ortb_cal_per_request: cal.ortb.length > 0 ? median(cal.ortb) : null,
    rounds_rps: rps,
  };
}

await main();

/**
 * Impression beacons against GET lookups, saturation rounds alternating with the same
 * client; medians of each side. The beacons carry the lids of real lookups (the first
 * pass over them judges valid or mismatch, the rest are replays: every one is read,
 * checked against the seen-lids table and counted).
 */
async function beaconPhase(ivtd: Awaited<ReturnType<typeof startIvtd>>, paths: string[]) {
  const beacons: string[] = [];
  for (const p of paths.slice(0, 500)) {
    const r = await fetch(`http://127.0.0.1:${ivtd.prebidPort}${p}`);
    const body = (await r.json()) as { lid?: string };
    if (r.status !== 200 || !body.lid) throw new Error(`beacon phase: lookup answered ${r.status} without a lid`);
    beacons.push(`/api/v1/ivt/imp?lid=${body.lid}`);
  }
  const rps: Record<'lookup' | 'beacon', number[]> = { lookup: [], beacon: [] };
  await hammer(ivtd.prebidPort, beacons, 2); // warm the beacon path (JIT)
  for (let round = 0; round < BEACON_ROUNDS; round++) {
    const order: Array<'lookup' | 'beacon'> = round % 2 ? ['beacon', 'lookup'] : ['lookup', 'beacon'];
    for (const side of order) {
      await sleep(500);
      const r = await hammer(ivtd.prebidPort, side === 'lookup' ? paths : beacons, DURATION);
      if (r.non2xx > 0) throw new Error(`beacon phase (${side}): ${r.non2xx} non-2xx answers`);
      rps[side].push(r.rps);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const lookupRps = median(rps.lookup), beaconRps = median(rps.beacon);
  return { rounds: BEACON_ROUNDS, lookup_rps: lookupRps, beacon_rps: beaconRps, throughput_ratio: +(beaconRps / lookupRps).toFixed(3), rounds_rps: rps };
}
