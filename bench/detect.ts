// Detection scored black-box: a real ivtd server, lookups built from public labelled
// corpora, verdicts read from the responses. Nothing here reaches into ivtd's code.
//
// Corpora: npm devDependencies `crawler-user-agents` (crawler patterns with instances),
// `user-agents` (real browser UAs with device categories), `top-user-agents` (the most
// common browser UAs) and `top-crawler-agents` (common crawler UAs); and
// /work/shared/corpora (or --corpora DIR) when present: ua-device (device-detector's
// labelled device classes), bots, schain. Corpus strings are read at run time, never copied.
// Per crawler and uptime-monitor service of the published lists the checkout carries
// (data/bot-ip-blocks/, read as data): its UA from addresses inside its ranges and from a
// residential address, and the share judged right (not an impersonator; an impersonator).
//
// Every lookup carries its own residential-looking IPv4 (73.0.0.0/8), uid and IFA, so
// history and IP reputation stay out of the verdicts: a clean modern Chrome through the same
// generator is checked first and must come back valid.
//
// Verdicts: "high" = botRisk.band high; "flagged" = band high or uaValid false (what a
// buyer would not pay for); "caught" (for a UA/dvt mismatch) = flagged.
//
// "Modern" (for the must-stay-valid device rows) = the UA names an OS or browser released
// in 2019 or later — Android >= 10, iOS/iPadOS >= 13, Tizen >= 5, webOS with Chrome >= 68,
// Roku OS >= 9, Fire OS on Android >= 9, PlayStation 5, Xbox One/Series, Windows NT 10,
// macOS 10.15+, ChromeOS — and no browser version older than Chrome 77, Firefox 68 or
// Safari 13 when one is named.
//   node --import tsx bench/detect.ts [--per-class 500] [--real 2500] [--concurrency 8] [--examples N]
//        [--corpora DIR] [--checkout DIR | --ivtd PATH] [--baseline-checkout DIR | --baseline-ivtd PATH]
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { numArg, startIvtd, strArg, targetFromArgs, defaultTarget, type IvtdServer, type IvtdTarget } from './processes.ts';
import { isModern } from './modern.ts';
import { prng } from './ua-gen.ts';

const PER_CLASS = numArg('per-class', 500);
const REAL = numArg('real', 2500);
const CONCURRENCY = numArg('concurrency', 8);
const CORPORA = strArg('corpora', '/work/shared/corpora');
const EXAMPLES = numArg('examples', 0);
const require = createRequire(import.meta.url);

interface Verdict {
  status: number;
  band?: string;
  /** The response's GIVT and SIVT components: an impersonator is SIVT (ua_crawler_spoofed, 0.95), a real crawler GIVT. */
  pGivt?: number;
  pSivt?: number;
  uaValid?: boolean;
  schainValid?: boolean;
  schainComplete?: number;
}

interface Probe {
  ua: string;
  dvt: number;
  /** In-app: carries app + ifa; else web (dmn). CTV and connected devices are always in-app. */
  app: boolean;
  schain?: string;
  /** The client IP; default a fresh residential-looking one. */
  ip?: string;
}

/** One test row: a set of probes and how to count a success. */
interface Test {
  id: string;
  what: string;
  probes: Probe[];
  /** What the figure counts, over scored (HTTP 200) probes. */
  count: 'high' | 'flagged' | 'uaInvalid' | 'schainAgrees' | 'impersonator' | 'notImpersonator';
  /** Whether a higher share is better (detection) or worse (false positives). */
  goal: string;
  expected?: (p: Probe) => boolean;
}

interface Row {
  id: string;
  what: string;
  n: number;
  scored: number;
  rejected: number;
  hits: number;
  share: number;
  goal: string;
  high: number;
  ua_invalid: number;
  /** Up to --examples UAs that went the wrong way (missed when detection is the goal, flagged otherwise). */
  examples: string[];
}

const readJsonl = <T>(path: string): T[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);

// ---------------------------------------------------------------- corpora

function crawlerInstances(): string[] {
  const list = require('crawler-user-agents') as { pattern: string; instances: string[] }[];
  return [...new Set(list.flatMap((c) => c.instances))];
}

/** Real browser UAs from `user-agents` (its data file of 10 000 observed entries), with their device category. */
function userAgentsPackage(): { ua: string; category: string }[] {
  const dir = join(require.resolve('user-agents'), '..');
  const file = ['user-agents.json.gz', 'user-agents.json'].map((f) => join(dir, f)).find(existsSync);
  if (!file) throw new Error(`user-agents: no data file in ${dir}`);
  const raw = readFileSync(file);
  const data = JSON.parse((file.endsWith('.gz') ? gunzipSync(raw) : raw).toString()) as { userAgent: string; deviceCategory: string; weight: number }[];
  // Entries, not distinct strings: the list repeats common UAs as real traffic does.
  return data.map((d) => ({ ua: d.userAgent, category: d.deviceCategory }));
}

/** `n` items spread over the whole list (deterministic), not its head. */
function spread<T>(xs: T[], n: number, seed = 11): T[] {
  if (xs.length <= n) return xs;
  const r = prng(seed);
  const idx = xs.map((_, i) => i);
  for (let i = idx.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [idx[i], idx[j]] = [idx[j]!, idx[i]!];
  }
  return idx.slice(0, n).sort((a, b) => a - b).map((i) => xs[i]!);
}

interface DeviceRow {
  ua: string;
  device: string;
  bot: boolean;
  bot_elsewhere?: string[];
}

// ---------------------------------------------------------------- tests

const WINDOWS = /Windows NT/;
const MAC_OR_LINUX = /Macintosh|X11; (?:Ubuntu; )?Linux|X11; Fedora/;
/** A TV or set-top platform named in the UA. */
const TV_TOKEN = /SmartTV|SMART-TV|Smart-TV|SMART_TV|HbbTV|Tizen|Web0S|webOS|NetCast|VIDAA|Roku|AFT[A-Z]|BRAVIA|CrKey|Android TV|GoogleTV|AppleTV|Apple TV|tvOS|SmartHub|Opera TV|NETTV|PhilipsTV|Viera|Large Screen|ce-html|TSBNetTV|SonyDTV|Freebox|STB|MiTV|DTV/i;

function buildTests(): { tests: Test[]; notes: string[] } {
  const tests: Test[] = [];
  const notes: string[] = [];
  const web = (ua: string, dvt = 2): Probe => ({ ua, dvt, app: false });
  const inApp = (ua: string, dvt: number): Probe => ({ ua, dvt, app: true });

  tests.push({ id: 'crawler_instances_high', what: 'crawler-user-agents instances, band high', probes: crawlerInstances().map((ua) => web(ua)), count: 'high', goal: 'higher' });
  const top = require('top-crawler-agents') as string[];
  tests.push({ id: 'top_crawlers_high', what: 'top-crawler-agents, band high', probes: top.map((ua) => web(ua)), count: 'high', goal: 'higher' });

  const real = spread(userAgentsPackage(), REAL);
  const dvtOf = (c: string) => (c === 'mobile' ? 4 : c === 'tablet' ? 5 : 2);
  tests.push({ id: 'real_browsers_high', what: `user-agents real browsers (${real.length}), band high`, probes: real.map((r) => web(r.ua, dvtOf(r.category))), count: 'high', goal: 'zero' });
  tests.push({ id: 'real_browsers_ua_invalid', what: 'user-agents real browsers, uaValid=false', probes: real.map((r) => web(r.ua, dvtOf(r.category))), count: 'uaInvalid', goal: 'zero' });
  const topUas = require('top-user-agents') as string[];
  // Android without Mobile is a tablet (Chrome's reduced UA sends Mobile on phones only).
  const topDvt = (ua: string) => (/iPad|Tablet/.test(ua) || (/Android/.test(ua) && !/Mobile/.test(ua)) ? 5 : /Mobile|iPhone|Android/.test(ua) ? 4 : 2);
  tests.push({ id: 'top_browsers_flagged', what: 'top-user-agents browsers, flagged', probes: topUas.map((ua) => web(ua, topDvt(ua))), count: 'flagged', goal: 'zero' });

  const botsFile = join(CORPORA, 'bots/bot-ua.jsonl');
  if (existsSync(botsFile)) {
    const bots = readJsonl<{ ua: string; bot: boolean | null }>(botsFile);
    tests.push({ id: 'corpus_bots_high', what: 'shared bots corpus, bot=true, band high', probes: bots.filter((b) => b.bot === true).map((b) => web(b.ua)), count: 'high', goal: 'higher' });
    tests.push({ id: 'corpus_not_bots_high', what: 'shared bots corpus, bot=false (isbot browsers), band high', probes: bots.filter((b) => b.bot === false).map((b) => web(b.ua)), count: 'high', goal: 'lower' });
  } else notes.push(`no ${botsFile}: bot corpus rows skipped`);

  const deviceFile = join(CORPORA, 'ua-device/ua-device.jsonl');
  if (existsSync(deviceFile)) {
    const all = readJsonl<DeviceRow>(deviceFile);
    const human = (r: DeviceRow) => !r.bot && !r.bot_elsewhere?.length;
    const cls = (d: string) => all.filter((r) => r.device === d && human(r));
    // PER_CLASS rows spread over the class (deterministic), then the rows other corpora call bots dropped.
    const head = (d: string) => spread(all.filter((r) => r.device === d), PER_CLASS).filter(human);
    const desktops = head('desktop');
    // Mismatches: the UA names one device, the request declares another.
    tests.push({ id: 'phone_as_ctv', what: 'phone UA sent as dvt=3 (app+ifa), caught', probes: head('smartphone').map((r) => inApp(r.ua, 3)), count: 'flagged', goal: 'higher' });
    tests.push({ id: 'phone_as_ctv_modern', what: '… modern part, caught', probes: head('smartphone').filter((r) => isModern(r.ua)).map((r) => inApp(r.ua, 3)), count: 'flagged', goal: '>= 95 %' });
    tests.push({ id: 'phone_as_connected', what: 'phone UA sent as dvt=6/7 (app+ifa), caught', probes: head('smartphone').map((r, i) => inApp(r.ua, i % 2 ? 7 : 6)), count: 'flagged', goal: 'higher' });
    tests.push({ id: 'tv_as_phone', what: 'TV/stick UA sent as phone dvt=4 (app+ifa), caught', probes: head('tv').map((r) => inApp(r.ua, 4)), count: 'flagged', goal: 'higher' });
    tests.push({ id: 'tv_as_phone_modern', what: '… modern part, caught', probes: head('tv').filter((r) => isModern(r.ua)).map((r) => inApp(r.ua, 4)), count: 'flagged', goal: '>= 95 %' });
    tests.push({ id: 'desktop_as_ctv', what: 'desktop UA sent as dvt=3 (app+ifa), caught', probes: desktops.map((r) => inApp(r.ua, 3)), count: 'flagged', goal: 'higher' });
    tests.push({ id: 'desktop_as_ctv_modern', what: '… modern part, caught', probes: desktops.filter((r) => isModern(r.ua)).map((r) => inApp(r.ua, 3)), count: 'flagged', goal: 'higher' });
    tests.push({ id: 'windows_as_phone', what: 'Windows desktop UA sent as phone dvt=4, caught', probes: desktops.filter((r) => WINDOWS.test(r.ua)).map((r) => web(r.ua, 4)), count: 'flagged', goal: 'higher' });
    tests.push({ id: 'phone_as_pc', what: 'phone UA sent as PC dvt=2, caught', probes: head('smartphone').map((r) => web(r.ua, 2)), count: 'flagged', goal: 'higher' });
    tests.push({
      id: 'mac_linux_as_mobile',
      what: 'macOS/Linux desktop UA sent as phone/tablet (iPadOS, request-desktop-site), flagged',
      probes: desktops.filter((r) => MAC_OR_LINUX.test(r.ua)).map((r, i) => web(r.ua, i % 2 ? 5 : 4)),
      count: 'flagged',
      goal: 'zero (documented pass)',
    });
    // Real devices declared as themselves: must stay valid.
    const self = (d: string, dvt: number, app: (i: number) => boolean) => cls(d).map((r, i) => ({ ua: r.ua, dvt, app: app(i) }));
    const own = [...self('smartphone', 4, (i) => i % 2 === 0), ...self('tablet', 5, (i) => i % 2 === 0), ...self('desktop', 2, () => false)];
    const ctv = [...self('tv', 3, () => true), ...self('console', 6, () => true)];
    tests.push({ id: 'devices_as_self_flagged', what: 'phones/tablets/desktops declared as themselves, flagged (all)', probes: own, count: 'flagged', goal: 'lower' });
    tests.push({ id: 'devices_as_self_modern_flagged', what: '… modern part, flagged', probes: own.filter((p) => isModern(p.ua)), count: 'flagged', goal: '<= 1 %' });
    tests.push({ id: 'ctv_as_ctv_flagged', what: 'TVs/sticks as dvt=3, consoles as dvt=6, flagged (all)', probes: ctv, count: 'flagged', goal: 'lower' });
    tests.push({ id: 'ctv_as_ctv_modern_flagged', what: '… modern part, flagged', probes: ctv.filter((p) => isModern(p.ua)), count: 'flagged', goal: '<= 1 %' });
    // The modern filter needs an OS or browser version, which many TV UAs do not name: every
    // TV-class UA (and every "other"/console UA) carrying a TV platform token, declared as CTV.
    const tvToken = all.filter((r) => human(r) && (r.device === 'tv' || r.device === 'other' || r.device === 'console') && TV_TOKEN.test(r.ua));
    tests.push({ id: 'tv_token_as_ctv_flagged', what: 'every TV/set-top UA with a TV platform token as dvt=3, flagged', probes: tvToken.map((r) => inApp(r.ua, 3)), count: 'flagged', goal: '<= 1 %' });
    const invalid = join(CORPORA, 'ua-device/ua-invalid-browscap.jsonl');
    if (existsSync(invalid)) {
      tests.push({ id: 'impossible_uas_invalid', what: 'browscap impossible/spoofed UAs, uaValid=false', probes: readJsonl<{ ua: string }>(invalid).map((r) => web(r.ua)), count: 'uaInvalid', goal: 'higher' });
    }
    const dd = join(CORPORA, 'ua-device/dd-bots.jsonl');
    if (existsSync(dd)) tests.push({ id: 'dd_bots_high', what: 'device-detector bots, band high', probes: readJsonl<{ ua: string }>(dd).map((r) => web(r.ua)), count: 'high', goal: 'higher' });
  } else notes.push(`no ${deviceFile}: device and mismatch rows skipped`);

  tests.push(...serviceTests(web));

  const schainFile = join(CORPORA, 'schain/schain-strings.jsonl');
  if (existsSync(schainFile)) {
    const ua = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36';
    const labels = new Map<string, boolean>();
    const probes = readJsonl<{ schain: string; valid: boolean }>(schainFile).map((s) => {
      labels.set(s.schain, s.valid);
      return { ua, dvt: 2, app: false, schain: s.schain };
    });
    tests.push({ id: 'schain_agreement', what: 'schain corpus: verdict agrees with the strict label (a 400 counts as "invalid")', probes, count: 'schainAgrees', goal: 'higher', expected: (p) => labels.get(p.schain!)! });
  } else notes.push(`no ${schainFile}: schain row skipped`);
  return { tests, notes };
}

/** Addresses per service taken from its ranges (spread over them). */
const PER_SERVICE = numArg('per-service', 20);

/**
 * For each service of the checkout's crawler and monitor lists (data read as data): its UA
 * (the first plain token of its patterns, in a crawler's usual form) from inside its
 * ranges — judged right when not an impersonator — and from residential addresses —
 * judged right when an impersonator.
 */
function serviceTests(web: (ua: string, dvt?: number) => Probe): Test[] {
  const dir = join(import.meta.dirname, '..', 'data', 'bot-ip-blocks');
  const tests: Test[] = [];
  const allIn: Probe[] = [];
  const allOut: Probe[] = [];
  for (const list of ['crawlers', 'monitoring']) {
    const file = join(dir, `${list}.json`);
    if (!existsSync(file)) continue;
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { services: Record<string, { user_agent_patterns: string[]; ipv4?: string[]; ipv6?: string[]; ip_list_authoritative?: boolean }> };
    for (const [name, s] of Object.entries(doc.services)) {
      const token = s.user_agent_patterns.map((p) => p.replace(/^\*+|\*+$/g, '')).find((p) => !/[*?]/.test(p));
      if (!token) continue;
      const ua = `Mozilla/5.0 (compatible; ${token}/1.0; +https://example.com/bot)`;
      const cidrs = spread([...(s.ipv4 ?? []), ...(s.ipv6 ?? [])], PER_SERVICE);
      const inside = cidrs.map((c) => ({ ...web(ua), ip: firstHost(c) }));
      const outside = cidrs.map(() => web(ua));
      const dns = s.ip_list_authoritative === false ? ' (a whole network: reverse DNS decides, off here)' : '';
      tests.push({ id: `svc_${list}_${name}_inside`, what: `${name}: its UA from inside its ranges${dns}, not an impersonator`, probes: inside, count: 'notImpersonator', goal: 'higher' });
      tests.push({ id: `svc_${list}_${name}_outside`, what: `${name}: its UA from a residential address, an impersonator`, probes: outside, count: 'impersonator', goal: 'higher' });
      allIn.push(...inside);
      allOut.push(...outside);
    }
  }
  if (allIn.length) {
    tests.push({ id: 'svc_all_inside', what: 'every service, from inside its ranges, not an impersonator', probes: allIn, count: 'notImpersonator', goal: 'higher' });
    tests.push({ id: 'svc_all_outside', what: 'every service, from a residential address, an impersonator', probes: allOut, count: 'impersonator', goal: 'higher' });
  }
  return tests;
}

/** The first host of a CIDR (its only address for a /32 or /128), as text. */
function firstHost(cidr: string): string {
  const [addr, bits] = cidr.split('/') as [string, string];
  if (!addr.includes(':')) {
    const n = addr.split('.').reduce((a, o) => a * 256 + Number(o), 0);
    const h = Number(bits) < 32 ? n + 1 : n;
    return [24, 16, 8, 0].map((s) => Math.floor(h / 2 ** s) % 256).join('.');
  }
  return Number(bits) < 128 ? addr.replace(/::$/, '::1').replace(/:0$/, ':1') : addr;
}

// ---------------------------------------------------------------- lookups

const DEFAULT_SCHAIN = '1.0,1!exchange1.example,1234,1,,,';

function lookupPath(server: IvtdServer, p: Probe, n: number): string {
  // A fresh residential-looking IP, uid and IFA per lookup: no history, no IP reputation.
  const ip = p.ip ?? `73.${(n >> 16) & 255}.${(n >> 8) & 255}.${1 + (n % 254)}`;
  const hex = (n * 2654435761 >>> 0).toString(16).padStart(8, '0');
  const ifa = `${hex}-${hex.slice(0, 4)}-4${hex.slice(4, 7)}-a${hex.slice(1, 4)}-${n.toString(16).padStart(12, '0')}`;
  const q = [
    `schain=${encodeURIComponent(p.schain ?? DEFAULT_SCHAIN)}`,
    `p=${server.partnerId}`, `k=${server.key}`, `pub=pub-${n % 97}`, 'node=bidder-1', `ip=${encodeURIComponent(ip)}`,
    `ua=${encodeURIComponent(p.ua)}`, `uid=d${hex}${n.toString(36)}`, 'sid=exchange1.example', 'adt=1', `dvt=${p.dvt}`, 'geo=us',
    p.app ? `app=com.example.app${n % 50}&ifa=${ifa}` : `dmn=site${n % 97}.example`,
  ];
  return `/api/v1/ivt/lookup?${q.join('&')}`;
}

async function lookup(server: IvtdServer, p: Probe, n: number): Promise<Verdict> {
  const res = await fetch(`http://127.0.0.1:${server.prebidPort}${lookupPath(server, p, n)}`);
  const text = await res.text();
  if (res.status !== 200) return { status: res.status };
  const b = JSON.parse(text) as { botRisk?: { band?: string }; components?: { p_givt?: number; p_sivt?: number }; uaValid?: boolean; schain?: { valid?: boolean; complete?: number } };
  return { status: 200, band: b.botRisk?.band, pGivt: b.components?.p_givt, pSivt: b.components?.p_sivt, uaValid: b.uaValid, schainValid: b.schain?.valid, schainComplete: b.schain?.complete };
}

async function pool<T, R>(items: T[], n: number, fn: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

let counter = 1;

async function score(server: IvtdServer, tests: Test[]): Promise<Row[]> {
  // The generator itself must not be what gets flagged.
  const control = await lookup(server, { ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36', dvt: 2, app: false }, counter++);
  if (control.status !== 200 || control.band === 'high' || control.uaValid !== true) throw new Error(`control lookup (modern Chrome, residential IP) is not valid: ${JSON.stringify(control)}`);
  const rows: Row[] = [];
  for (const t of tests) {
    const base = counter;
    counter += t.probes.length;
    const verdicts = await pool(t.probes, CONCURRENCY, (p, i) => lookup(server, p, base + i));
    let hits = 0;
    let scored = 0;
    let high = 0;
    let uaInvalid = 0;
    const examples: string[] = [];
    // Detection rows (goal 'higher' or '>= N %') go wrong on a miss; must-stay-valid rows on a hit.
    const wrongWay = (hit: boolean) => (t.goal === 'higher' || t.goal.startsWith('>=') ? !hit : hit);
    verdicts.forEach((v, i) => {
      if (t.count === 'schainAgrees') {
        const label = t.expected!(t.probes[i]!);
        scored++;
        const verdict = v.status === 200 ? v.schainValid === true : false;
        const agrees = (v.status === 200 || v.status === 400) && verdict === label;
        hits += agrees ? 1 : 0;
        if (!agrees && examples.length < EXAMPLES) examples.push(t.probes[i]!.schain!);
        return;
      }
      if (v.status !== 200) return;
      scored++;
      const isHigh = v.band === 'high';
      const isInvalid = v.uaValid === false;
      high += isHigh ? 1 : 0;
      uaInvalid += isInvalid ? 1 : 0;
      // An impersonator: high on the SIVT side alone (ua_crawler_spoofed); the real one: GIVT high, no SIVT of its own.
      const impersonator = isHigh && (v.pSivt ?? 0) >= 0.9 && (v.pGivt ?? 0) < 0.9;
      const hit =
        t.count === 'high' ? isHigh
        : t.count === 'uaInvalid' ? isInvalid
        : t.count === 'impersonator' ? impersonator
        : t.count === 'notImpersonator' ? isHigh && !impersonator && (v.pGivt ?? 0) >= 0.9
        : isHigh || isInvalid;
      hits += +hit;
      if (wrongWay(hit) && examples.length < EXAMPLES) examples.push(`[dvt=${t.probes[i]!.dvt} ${v.band} uaValid=${v.uaValid}] ${t.probes[i]!.ua}`);
    });
    const rejected = verdicts.filter((v) => v.status !== 200).length;
    rows.push({ id: t.id, what: t.what, n: t.probes.length, scored, rejected, hits, share: scored ? +((100 * hits) / scored).toFixed(2) : NaN, goal: t.goal, high, ua_invalid: uaInvalid, examples });
  }
  return rows;
}

async function measure(target: IvtdTarget, tests: Test[]): Promise<Row[]> {
  // No crawler reverse DNS: the bench has no DNS egress, and a resolver answering NXDOMAIN to
  // everything (as sandboxes do) would refute every check of Yandex's and Meta's crawlers.
  const server = await startIvtd(target, { threads: 1, env: { IVTD_CRAWLER_DNS: 'off' } });
  try {
    return await score(server, tests);
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const baseline = targetFromArgs(process.argv, 'baseline-');
  const target = targetFromArgs(process.argv) ?? defaultTarget(baseline);
  const { tests, notes } = buildTests();
  for (const n of notes) console.log(`note: ${n}`);
  const before = baseline ? await measure(baseline, tests) : null;
  const now = await measure(target, tests);
  const cell = (r: Row) => `${r.hits}/${r.scored} = ${r.share} %`;
  const header = ['figure', ...(before ? ['before'] : []), 'now', 'goal', '400s'];
  const lines = now.map((r, i) => [r.what, ...(before ? [cell(before[i]!)] : []), cell(r), r.goal, String(r.rejected)]);
  const widths = header.map((h, c) => Math.max(h.length, ...lines.map((l) => l[c]!.length)));
  const fmt = (cols: string[]) => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(fmt(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(fmt(l));
  for (const r of now.filter((x) => x.examples.length)) console.log(`\n${r.id}, the wrong way:\n  ${r.examples.join('\n  ')}`);
  console.log(
    JSON.stringify({
      bench: 'detect',
      target: target.label,
      baseline: baseline?.label ?? null,
      modern: 'OS or browser of 2019 or later (see bench/detect.ts)',
      now: Object.fromEntries(now.map((r) => [r.id, r])),
      ...(before ? { before: Object.fromEntries(before.map((r) => [r.id, r])) } : {}),
    }),
  );
}

await main();
