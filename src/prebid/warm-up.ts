// A lookup thread's warm-up, before it takes its first lookup. V8 compiles a function when it
// first runs, and the first lookup of each kind (the first at all, the first crawler, the first
// TV, the first OpenRTB body) ran the code it needed for the first time: 10–27 ms on the
// shipped binary, over a bidder's whole 10 ms budget, so the first answers after every start
// or relaunch came too late and the bidder went without a verdict.
// The warm-up runs those kinds of lookup through a scratch engine over scratch tables, so the
// code is compiled and the inline caches are set when the first real lookup comes. It records
// nothing anywhere: its history, caches, counts and keys are its own and are dropped after;
// the real engine's memory, the main thread's counts and /metrics never see it. The requests
// are written here (invented IPs from documentation and carrier ranges, common UA shapes).
import { randomBytes } from 'node:crypto';
import { MIN_BUDGET_MB, planMemory, type MemoryPlan } from '../memory/budget.ts';
import { allocateLookupMemory } from './lookup-memory.ts';
import { bidRequestFrom } from './ortb/body.ts';
import { hashKey } from '../base/secrets.ts';
import type { LookupData } from './lookup-data.ts';
import { LookupEngine, type LookupOutcome } from './pipeline.ts';
import type { WarmUp } from './messages.ts';

export type { WarmUp };

const PARTNER = '00000000-0000-4000-8000-000000000001';
const KEY = 'warm-up';

const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (SMART-TV; Linux; Tizen 7.0) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/5.0 Chrome/94.0.4606.31 TV Safari/537.36',
  'Mozilla/5.0 (Web0S; Linux/SmartTV) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/87.0.4280.88 Safari/537.36 WebAppManager',
  'Roku/DVP-12.5 (12.5.0.4178)',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
  'curl/8.5.0',
];
/** Documentation and carrier-looking addresses, v4 and v6; one in a cloud range of the embedded data. */
const IPS = ['73.162.10.20', '98.207.1.9', '2600:1700:10:20::5', '52.94.76.10', '203.0.113.9'];

/** The GET queries of one pass (exported for the tests): every kind answered 200, then the two refusals. */
export function warmUpQueries(): string[] {
  const out: string[] = [];
  UAS.forEach((ua, i) => {
    const ip = IPS[i % IPS.length]!;
    const common = `p=${PARTNER}&k=${KEY}&node=warm-up&ip=${encodeURIComponent(ip)}&ua=${encodeURIComponent(ua)}&uid=warm-${i}&sid=exchange.example&schain=${encodeURIComponent('1.0,1!exchange.example,1234,1,,,')}&geo=us`;
    out.push(i % 3 === 0 ? `${common}&adt=2&dvt=3&app=com.example.app&pub=pub-1&ifa=6d92078a-8246-4ba4-ae5b-76104861e7dc` : `${common}&adt=1&dvt=2&dmn=news.example&pub=pub-1`);
  });
  out.push(out[0]!.replace(/&ip=[^&]*/, '&ip=not-an-address'), out[0]!.replace(`k=${KEY}`, 'k=nope'));
  return out;
}

/** Refused on purpose in each pass: a bad IP (400) and a wrong key (401). */
export const WARM_UP_REFUSALS = 2;

function bodies(): Uint8Array[] {
  const site = { domain: 'news.example', publisher: { id: 'pub-1' } };
  const app = { bundle: 'com.example.app', publisher: { id: 'pub-1' } };
  const schain = { ver: '1.0', complete: 1, nodes: [{ asi: 'exchange.example', sid: '1234', hp: 1 }] };
  const out: object[] = [];
  UAS.forEach((ua, i) => {
    const device = { ip: IPS[i % IPS.length], ua, devicetype: i % 3 === 0 ? 3 : 2, ifa: i % 3 === 0 ? '6d92078a-8246-4ba4-ae5b-76104861e7dc' : undefined, ifa_type: i % 3 === 0 ? 'ppid' : undefined, geo: { country: 'USA' } };
    out.push({ id: `warm-${i}`, imp: [{ id: '1', banner: { w: 300, h: 250 } }], ...(i % 3 === 0 ? { app } : { site }), device, user: { id: `u-${i}` }, source: i % 2 ? { schain } : { ext: { schain } } });
  });
  // 2.6 `sua` without `ua`, stitched video, and only what the spec requires.
  out.push({ id: 'warm-sua', imp: [{ id: '1', video: { mimes: ['video/mp4'] }, ssai: 2 }], device: { ip: IPS[0], sua: { platform: { brand: 'Android', version: ['14'] }, mobile: 1, browsers: [{ brand: 'Chromium', version: ['124'] }] } } });
  out.push({ id: 'warm-thin', imp: [{ id: '1' }] });
  return out.map((b) => new TextEncoder().encode(JSON.stringify(b)));
}

/** The smallest tables that work: the warm-up's lookups need room for a few dozen keys, nothing more. */
function scratchPlan(): MemoryPlan {
  const p = planMemory(MIN_BUDGET_MB, 1);
  const small = (bytes: number) => Math.min(bytes, 64 * 1024);
  return {
    ...p,
    historyBytes: small(p.historyBytes),
    impSeenBytes: small(p.impSeenBytes),
    impCountsBytes: small(p.impCountsBytes),
    uaCacheBytes: small(p.uaCacheBytes),
    ipCacheBytes: small(p.ipCacheBytes),
    sharedCountsBytes: small(p.sharedCountsBytes),
    threadCountsBytes: small(p.threadCountsBytes),
    uaMemoBytes: small(p.uaMemoBytes),
  };
}

/**
 * Runs every kind of lookup `passes` times through a scratch engine over `data`; the engine
 * and its tables are dropped after. Never throws: a failure is returned in `error`.
 */
export function warmUp(data: LookupData, passes = 3): WarmUp {
  const t0 = performance.now();
  const w: WarmUp = { ms: 0, lookups: 0, answered: 0, bands: { low: 0, medium: 0, high: 0 } };
  try {
    run(data, passes, w);
  } catch (e) {
    w.error = (e as Error).message;
  }
  w.ms = performance.now() - t0;
  return w;
}

function run(data: LookupData, passes: number, w: WarmUp): void {
  const engine = new LookupEngine(data, allocateLookupMemory(scratchPlan()), { lidSecret: randomBytes(16) });
  engine.keys.replace([{ customer_id: 'warm-up', partner_id: PARTNER, key_hash: hashKey(KEY), expires_at_ms: null }]);
  const qs = warmUpQueries();
  const bs = bodies();
  const ortbQuery = `p=${PARTNER}&k=${KEY}&node=warm-up`;
  const note = (out: LookupOutcome) => {
    w.lookups++;
    if (out.status !== 200) return;
    w.answered++;
    if (out.band !== '') w.bands[out.band]++;
  };
  for (let p = 0; p < passes; p++) {
    const now = Date.now();
    for (const q of qs) note(engine.lookup(q, now));
    for (const b of bs) {
      const parsed = bidRequestFrom(b, false);
      if (parsed.ok) note(engine.lookupOrtb(ortbQuery, parsed.bid, now));
      else w.lookups++;
    }
  }
}
