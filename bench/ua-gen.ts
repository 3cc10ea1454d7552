// Real-shaped user agents for load benchmarks, generated deterministically from a seed
// (never copied from a corpus): the browsers, platforms and devices a bidder sees —
// Chrome, Firefox, Safari, Edge, Samsung Internet and Android WebView on Windows, macOS,
// Linux, Android phones and tablets and iOS — with realistic version spreads, plus some TV
// and streaming-stick UAs and a few bots. Each comes with the device class it names, so a
// request can declare a consistent `dvt`.

export type UaKind = 'desktop' | 'phone' | 'tablet' | 'tv' | 'bot';

export interface GeneratedUa {
  ua: string;
  kind: UaKind;
}

/** dvt a consistent request declares for a UA of this kind (AdCOM device types). */
export const DVT_OF_KIND: Record<UaKind, number> = { desktop: 2, phone: 4, tablet: 5, tv: 3, bot: 2 };

/** mulberry32: small, fast, deterministic. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rnd = () => number;
const int = (r: Rnd, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: Rnd, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
/** A recent version more often than an old one: lo..hi with weight rising towards hi. */
const recent = (r: Rnd, lo: number, hi: number) => hi - Math.floor((hi - lo + 1) * r() * r());
const letters = (r: Rnd, n: number, set = 'ABCDEFGHJKLMNPQRSTUVWXYZ') => Array.from({ length: n }, () => pick(r, [...set])).join('');

const CHROME_MAX = 131;
/** Chrome's full version (older builds and WebViews) or the reduced `M.0.0.0` form. */
function chromeVersion(r: Rnd, reduced: number): string {
  const major = recent(r, 96, CHROME_MAX);
  if (r() < reduced && major >= 101) return `${major}.0.0.0`;
  return `${major}.0.${4600 + (major - 96) * 60 + int(r, 0, 55)}.${int(r, 0, 220)}`;
}

const WINDOWS = ['Windows NT 10.0; Win64; x64', 'Windows NT 10.0; Win64; x64', 'Windows NT 10.0; Win64; x64', 'Windows NT 10.0; WOW64', 'Windows NT 6.1; Win64; x64', 'Windows NT 6.3; Win64; x64'];
const MAC = () => 'Macintosh; Intel Mac OS X 10_15_7';
const MAC_OLD = (r: Rnd) => `Macintosh; Intel Mac OS X 10_${int(r, 12, 15)}_${int(r, 0, 7)}`;
const LINUX = ['X11; Linux x86_64', 'X11; Linux x86_64', 'X11; Ubuntu; Linux x86_64', 'X11; Fedora; Linux x86_64', 'X11; CrOS x86_64 15633.69.0'];

// Android device model codes by their makers' naming schemes (invented numbers, real shapes).
function phoneModel(r: Rnd): string {
  switch (int(r, 0, 9)) {
    case 0:
    case 1:
    case 2:
      return `SM-${pick(r, ['A', 'A', 'G', 'S', 'M', 'F', 'N'])}${int(r, 10, 99)}${int(r, 0, 9)}${pick(r, ['B', 'F', 'U', 'N', 'W', 'DS', 'U1', 'B/DS'])}`;
    case 3:
      return `Pixel ${pick(r, ['6', '6a', '7', '7a', '7 Pro', '8', '8 Pro', '8a', '9', '9 Pro'])}`;
    case 4:
      return `${pick(r, ['2201117TG', '2201117TY', '22101316G', '23021RAAEG', '23129RAA4G', '2312DRA50G', 'M2101K6G', 'M2102J20SG', 'M2007J20CG', '220333QAG'])}`;
    case 5:
      return `${pick(r, ['Redmi Note ', 'Redmi ', 'POCO X', 'POCO F'])}${int(r, 8, 13)}${pick(r, ['', ' Pro', 'C', ' 5G', 'S'])}`;
    case 6:
      return `${pick(r, ['CPH', 'RMX', 'V'])}${int(r, 2001, 2599)}`;
    case 7:
      return `moto ${pick(r, ['g', 'e', 'g power', 'g stylus', 'edge'])}${pick(r, ['', ` ${int(r, 20, 84)}`, `(${int(r, 7, 60)})`, ' 5G'])}`;
    case 8:
      return `${pick(r, ['Nokia ', 'TECNO ', 'Infinix X', 'itel '])}${pick(r, ['G', 'KI', 'CK', 'A', 'X'])}${int(r, 5, 70)}${pick(r, ['', '0', 'P'])}`;
    default:
      return `${pick(r, ['LM-', 'XQ-', 'ASUS_', 'ONEPLUS A', 'HUAWEI ', 'VOG-', 'ELS-'])}${letters(r, 2)}${int(r, 10, 99)}`;
  }
}

function tabletModel(r: Rnd): string {
  switch (int(r, 0, 4)) {
    case 0:
    case 1:
      return `SM-${pick(r, ['T', 'X', 'P'])}${int(r, 200, 990)}${pick(r, ['', 'N', 'B', 'U'])}`;
    case 2:
      return `Lenovo TB-${pick(r, ['X', 'J'])}${int(r, 300, 720)}${pick(r, ['F', 'L', 'FU'])}`;
    case 3:
      return `${pick(r, ['KF', 'KFTR', 'KFMA', 'KFQU'])}${letters(r, 2)}${pick(r, ['WI', ''])}`;
    default:
      return `${pick(r, ['Redmi Pad', 'Xiaomi Pad 6', 'MatePad 11', 'Nokia T20', 'TAB_', 'AGS3-L09'])}${pick(r, ['', ' SE', ' Pro'])}`;
  }
}

const androidVersion = (r: Rnd) => pick(r, ['9', '10', '10', '11', '11', '12', '12', '13', '13', '13', '14', '14', '14', '15']);
const build = (r: Rnd) => `${pick(r, ['TP1A', 'UP1A', 'SP1A', 'RKQ1', 'TKQ1', 'AP2A', 'QP1A', 'PPR1'])}.${int(r, 200101, 240930)}.${int(r, 1, 30).toString().padStart(3, '0')}`;
const iosVersion = (r: Rnd) => {
  const major = recent(r, 14, 18);
  const minor = int(r, 0, 7);
  return int(r, 0, 2) === 0 ? [major, minor, int(r, 1, 3)] : [major, minor];
};
const SAFARI_TAIL = 'AppleWebKit/605.1.15 (KHTML, like Gecko)';
const CHROME_TAIL = 'AppleWebKit/537.36 (KHTML, like Gecko)';

function desktop(r: Rnd): string {
  const n = r();
  if (n < 0.5) {
    const os = pick(r, [...WINDOWS, ...WINDOWS, MAC(), MAC_OLD(r), ...LINUX]);
    return `Mozilla/5.0 (${os}) ${CHROME_TAIL} Chrome/${chromeVersion(r, 0.8)} Safari/537.36`;
  }
  if (n < 0.68) {
    const v = chromeVersion(r, 0.9);
    const major = v.split('.')[0];
    const edge = `${major}.0.${int(r, 1500, 2900)}.${int(r, 10, 99)}`;
    return `Mozilla/5.0 (${pick(r, WINDOWS)}) ${CHROME_TAIL} Chrome/${v} Safari/537.36 Edg/${edge}`;
  }
  if (n < 0.84) {
    const v = recent(r, 102, 132);
    const os = pick(r, ['Windows NT 10.0; Win64; x64', 'Windows NT 10.0; Win64; x64', 'Macintosh; Intel Mac OS X 10.15', 'X11; Linux x86_64', 'X11; Ubuntu; Linux x86_64']);
    return `Mozilla/5.0 (${os}; rv:${v}.0) Gecko/20100101 Firefox/${v}.0`;
  }
  if (n < 0.97) {
    const [major, minor] = iosVersion(r);
    return `Mozilla/5.0 (${pick(r, [MAC(), MAC(), MAC_OLD(r)])}) ${SAFARI_TAIL} Version/${major}.${minor} Safari/605.1.15`;
  }
  const v = chromeVersion(r, 0.9);
  return `Mozilla/5.0 (${pick(r, WINDOWS)}) ${CHROME_TAIL} Chrome/${v} Safari/537.36 OPR/${int(r, 95, 115)}.0.${int(r, 4000, 5300)}.${int(r, 10, 99)}`;
}

function phone(r: Rnd): string {
  const n = r();
  if (n < 0.36) {
    const reduced = r() < 0.5;
    const model = reduced ? 'K' : phoneModel(r);
    return `Mozilla/5.0 (Linux; Android ${reduced ? '10' : androidVersion(r)}; ${model}) ${CHROME_TAIL} Chrome/${chromeVersion(r, reduced ? 1 : 0.2)} Mobile Safari/537.36`;
  }
  if (n < 0.46) {
    return `Mozilla/5.0 (Linux; Android ${androidVersion(r)}; ${r() < 0.6 ? 'SM-' + pick(r, ['A', 'S', 'G', 'M']) + int(r, 100, 999) + pick(r, ['B', 'F', 'U']) : 'K'}) ${CHROME_TAIL} SamsungBrowser/${int(r, 17, 26)}.${int(r, 0, 2)} Chrome/${chromeVersion(r, 1)} Mobile Safari/537.36`;
  }
  if (n < 0.6) {
    // In-app WebView: the build id and `wv` mark it.
    return `Mozilla/5.0 (Linux; Android ${androidVersion(r)}; ${phoneModel(r)} Build/${build(r)}; wv) ${CHROME_TAIL} Version/4.0 Chrome/${chromeVersion(r, 0)} Mobile Safari/537.36`;
  }
  if (n < 0.88) {
    const v = iosVersion(r);
    const os = v.join('_');
    const k = r();
    if (k < 0.7) return `Mozilla/5.0 (iPhone; CPU iPhone OS ${os} like Mac OS X) ${SAFARI_TAIL} Version/${v[0]}.${v[1]} Mobile/15E148 Safari/604.1`;
    if (k < 0.85) return `Mozilla/5.0 (iPhone; CPU iPhone OS ${os} like Mac OS X) ${SAFARI_TAIL} Mobile/15E148`;
    return `Mozilla/5.0 (iPhone; CPU iPhone OS ${os} like Mac OS X) ${SAFARI_TAIL} CriOS/${chromeVersion(r, 0)} Mobile/15E148 Safari/604.1`;
  }
  if (n < 0.95) {
    const v = recent(r, 110, 132);
    return `Mozilla/5.0 (Android ${androidVersion(r)}; Mobile; rv:${v}.0) Gecko/${v}.0 Firefox/${v}.0`;
  }
  const v = chromeVersion(r, 1);
  return `Mozilla/5.0 (Linux; Android ${androidVersion(r)}; ${phoneModel(r)}) ${CHROME_TAIL} Chrome/${v} Mobile Safari/537.36 EdgA/${v.split('.')[0]}.0.${int(r, 2000, 2900)}.${int(r, 50, 99)}`;
}

function tablet(r: Rnd): string {
  const n = r();
  if (n < 0.45) {
    const v = iosVersion(r);
    return `Mozilla/5.0 (iPad; CPU OS ${v.join('_')} like Mac OS X) ${SAFARI_TAIL} Version/${v[0]}.${v[1]} Mobile/15E148 Safari/604.1`;
  }
  if (n < 0.8) return `Mozilla/5.0 (Linux; Android ${androidVersion(r)}; ${tabletModel(r)}) ${CHROME_TAIL} Chrome/${chromeVersion(r, 0.4)} Safari/537.36`;
  return `Mozilla/5.0 (Linux; Android ${androidVersion(r)}; ${tabletModel(r)} Build/${build(r)}; wv) ${CHROME_TAIL} Version/4.0 Chrome/${chromeVersion(r, 0)} Safari/537.36`;
}

function tv(r: Rnd): string {
  switch (int(r, 0, 7)) {
    case 0: {
      const t = pick(r, ['4.0', '5.0', '5.5', '6.0', '6.5', '7.0']);
      return `Mozilla/5.0 (SMART-TV; LINUX; Tizen ${t}) ${CHROME_TAIL} ${pick(r, ['SamsungBrowser/2.2', 'SamsungBrowser/3.0', `${int(r, 69, 108)}.0.${int(r, 3000, 5400)}.${int(r, 0, 200)}/${t}`])} TV Safari/537.36`;
    }
    case 1:
      return `Mozilla/5.0 (Web0S; Linux/SmartTV) ${CHROME_TAIL} Chrome/${int(r, 53, 108)}.0.${int(r, 2700, 5400)}.${int(r, 0, 200)} Safari/537.36 WebAppManager`;
    case 2:
      return `Roku/DVP-${int(r, 9, 14)}.${int(r, 0, 5)} (${int(r, 9, 14)}.${int(r, 0, 5)}.${int(r, 0, 9)}.${int(r, 1000, 9999)}-${pick(r, ['C2', 'AA', '4A', '88', 'G2'])})`;
    case 3:
      return `Mozilla/5.0 (Linux; Android ${pick(r, ['7.1.2', '9', '11'])}; AFT${pick(r, ['MM', 'KA', 'SS', 'T', 'A', 'R', 'KM', 'SSS', 'GAZL'])} Build/${pick(r, ['NS6', 'PS7', 'RS8'])}${int(r, 100, 699)}; wv) ${CHROME_TAIL} Version/4.0 Chrome/${chromeVersion(r, 0)} Mobile Safari/537.36`;
    case 4:
      return `Mozilla/5.0 (Linux; Android ${pick(r, ['9', '10', '11', '12'])}; ${pick(r, ['BRAVIA 4K', 'BRAVIA VH2', 'MIBOX4', 'SHIELD Android TV', 'Chromecast', 'TCL Smart TV', 'Philips TV'])}${pick(r, ['', ' GB', ' UR2', ' 2020'])} Build/${build(r)}) ${CHROME_TAIL} Chrome/${chromeVersion(r, 0)} Safari/537.36`;
    case 5:
      return `Mozilla/5.0 (X11; Linux ${pick(r, ['armv7l', 'aarch64'])}) ${CHROME_TAIL} Chrome/${chromeVersion(r, 0)} Safari/537.36 CrKey/1.${int(r, 42, 56)}.${int(r, 100000, 500000)}`;
    case 6:
      return `AppleCoreMedia/1.0.0.${int(r, 19, 22)}${letters(r, 1)}${int(r, 10, 99)} (Apple TV; U; CPU OS ${int(r, 14, 18)}_${int(r, 0, 6)} like Mac OS X; en_us)`;
    default:
      return `Mozilla/5.0 (Linux; ${pick(r, ['NetCast', 'HbbTV/1.5.1', 'HbbTV/1.4.1'])}; ${pick(r, ['Vestel', 'Hisense', 'Philips', 'Panasonic', 'Sharp'])} ${pick(r, ['MB', 'H', 'TPM'])}${int(r, 100, 999)}) ${CHROME_TAIL} Chrome/${int(r, 60, 110)}.0.0.0 Safari/537.36 SmartTV`;
  }
}

function bot(r: Rnd): string {
  switch (int(r, 0, 5)) {
    case 0:
      return `Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)`;
    case 1:
      return `Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)`;
    case 2:
      return `Mozilla/5.0 (${pick(r, WINDOWS)}) ${CHROME_TAIL} HeadlessChrome/${chromeVersion(r, 0.5)} Safari/537.36`;
    case 3:
      return `python-requests/2.${int(r, 20, 32)}.${int(r, 0, 3)}`;
    case 4:
      return `curl/${int(r, 7, 8)}.${int(r, 50, 88)}.${int(r, 0, 1)}`;
    default:
      return `Mozilla/5.0 (compatible; ${pick(r, ['AhrefsBot/7.0', 'SemrushBot/7~bl', 'YandexBot/3.0', 'DotBot/1.2', 'MJ12bot/v1.4.8'])}; +http://example.com/bot.html)`;
  }
}

/** Share of each kind in the generated set (bidder traffic: mostly phones, some TV, a few bots). */
const MIX: [UaKind, number, (r: Rnd) => string][] = [
  ['phone', 0.55, phone],
  ['desktop', 0.28, desktop],
  ['tablet', 0.09, tablet],
  ['tv', 0.06, tv],
  ['bot', 0.02, bot],
];

/** `n` distinct UAs; the same `n` and `seed` always give the same list. */
export function generateUas(n: number, seed = 20_000): GeneratedUa[] {
  const r = prng(seed);
  const seen = new Set<string>();
  const out: GeneratedUa[] = [];
  for (let tries = 0; out.length < n; tries++) {
    if (tries > n * 50) throw new Error(`could only generate ${out.length} distinct UAs of ${n}`);
    let x = r();
    let i = 0;
    while (i < MIX.length - 1 && x >= MIX[i]![1]) x -= MIX[i++]![1];
    const [kind, , make] = MIX[i]!;
    const ua = make(r);
    if (seen.has(ua)) continue;
    seen.add(ua);
    out.push({ ua, kind });
  }
  return out;
}
