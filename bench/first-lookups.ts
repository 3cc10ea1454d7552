// The first lookups after a start: what a bidder sees in the seconds after ivtd (re)starts.
// V8 compiles code when it first runs, so the first lookup of each kind (the first at all, the
// first crawler, the first TV, the first OpenRTB body) can take milliseconds, over a bidder's
// whole budget (10 ms in docs/integrations.md); the lookup threads warm up before their
// first lookup (src/prebid/warm-up.ts) to spare it.
// Each round starts each build afresh (fresh data dir, --threads 1; builds alternate), warms
// the client's connection with two health checks, then sends one lookup of each kind in turn
// over one keep-alive connection (GET, then OpenRTB; UAs and IPs the warm-up does not use)
// and times each from the client; then the same sequence again, `--steady` times, for the
// steady figure. Printed per build: ms from spawn to ready, the first lookup, the slowest
// first-of-its-kind, the sum of the firsts, the steady median; medians over rounds, and
// new/old ratios.
//   node --import tsx bench/first-lookups.ts [--ivtd dist/ivtd] [--baseline-ivtd OLD] [--rounds 5] [--steady 20]
import http from 'node:http';
import { numArg, startIvtd, targetFromArgs, defaultTarget, type IvtdTarget } from './processes.ts';

const ROUNDS = numArg('rounds', 5);
const STEADY = numArg('steady', 20);

const KINDS: Array<[string, string, string]> = [
  ['desktop', '198.51.100.20', 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0'],
  ['crawler from a cloud', '52.94.76.11', 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)'],
  ['phone', '73.162.10.31', 'Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Mobile Safari/537.36'],
  ['tv', '73.162.10.32', 'Mozilla/5.0 (Linux; Android 9; AFTMM Build/PS7633; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36'],
  ['library', '73.162.10.33', 'python-requests/2.32.3'],
  ['ipv6 tablet', '2600:1700:10:21::9', 'Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'],
];

function getPath(partner: string, key: string, [, ip, ua]: [string, string, string], i: number): string {
  return `/api/v1/ivt/lookup?p=${partner}&k=${key}&pub=pub-7&node=first&ip=${encodeURIComponent(ip)}&ua=${encodeURIComponent(ua)}&uid=first-${i}&sid=ssp.example&schain=${encodeURIComponent('1.0,1!ssp.example,77,1,,,')}&adt=1&dvt=2&dmn=site.example`;
}

function ortbBody([, ip, ua]: [string, string, string], i: number): string {
  return JSON.stringify({
    id: `first-${i}`,
    imp: [{ id: '1', banner: { w: 320, h: 50 } }],
    site: { domain: 'site.example', publisher: { id: 'pub-7' } },
    device: { ip, ua, devicetype: 2 },
    user: { id: `first-${i}` },
    source: { ext: { schain: { ver: '1.0', complete: 1, nodes: [{ asi: 'ssp.example', sid: '77', hp: 1 }] } } },
  });
}

function request(agent: http.Agent, port: number, path: string, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const headers: http.OutgoingHttpHeaders = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = http.request({ host: '127.0.0.1', port, path, method: body === undefined ? 'GET' : 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`${path}: status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Round {
  readyMs: number;
  first: number;
  slowest: number;
  sum: number;
  steady: number;
  firsts: number[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function round(target: IvtdTarget): Promise<Round> {
  const t0 = performance.now();
  const s = await startIvtd(target, { threads: 1 });
  const readyMs = performance.now() - t0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < 2; i++) await request(agent, s.prebidPort, '/health-check');
    const seq = [
      ...KINDS.map((k, i) => () => request(agent, s.prebidPort, getPath(s.partnerId, s.key, k, i))),
      ...KINDS.map((k, i) => () => request(agent, s.prebidPort, `/api/v1/ivt/ortb?p=${s.partnerId}&k=${s.key}&node=first`, ortbBody(k, i))),
    ];
    const firsts: number[] = [];
    for (const f of seq) firsts.push(await f());
    const steady: number[] = [];
    for (let r = 0; r < STEADY; r++) for (const f of seq) steady.push(await f());
    return { readyMs, first: firsts[0]!, slowest: Math.max(...firsts), sum: firsts.reduce((a, b) => a + b, 0), steady: median(steady), firsts };
  } finally {
    agent.destroy();
    await s.stop();
  }
}

async function main(): Promise<void> {
  const baseline = targetFromArgs(process.argv, 'baseline-');
  const target = targetFromArgs(process.argv) ?? defaultTarget(baseline);
  const sides = [{ name: 'new', target }, ...(baseline ? [{ name: 'old', target: baseline }] : [])];
  const rounds: Record<string, Round[]> = { new: [], old: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const side of r % 2 ? [...sides].reverse() : sides) {
      const x = await round(side.target);
      rounds[side.name]!.push(x);
      console.log(`round ${r + 1} ${side.name}: ready ${x.readyMs.toFixed(0)} ms, firsts ${x.firsts.map((v) => v.toFixed(1)).join(' ')} ms, steady ${x.steady.toFixed(2)} ms`);
    }
  }
  const summary: Record<string, Record<string, number>> = {};
  for (const side of sides) {
    const rs = rounds[side.name]!;
    const m = (f: (x: Round) => number) => Number(median(rs.map(f)).toFixed(2));
    summary[side.name] = { ready_ms: m((x) => x.readyMs), first_ms: m((x) => x.first), slowest_first_ms: m((x) => x.slowest), sum_firsts_ms: m((x) => x.sum), steady_ms: m((x) => x.steady) };
    console.log(`${side.name} (${side.target.label}): ${JSON.stringify(summary[side.name])}`);
  }
  const ratios = baseline
    ? Object.fromEntries(Object.keys(summary.new!).map((k) => [k, Number((summary.new![k]! / summary.old![k]!).toFixed(3))]))
    : null;
  console.log(JSON.stringify({ bench: 'first-lookups', rounds: ROUNDS, kinds: KINDS.length * 2, ...summary, ...(ratios ? { new_over_old: ratios } : {}) }));
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
