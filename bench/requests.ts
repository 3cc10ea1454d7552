// Fixed, varied sets of valid lookup paths (deterministic, so runs compare).

const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36',
];
const IP_PREFIXES = ['73.162', '86.1', '81.2', '159.89', '89.238', '3.5', '24.5', '98.210'];

/** `n` lookups over a few UAs, 5 000 uids, 50 publishers and scattered IPs. */
export function lookupPaths(partnerId: string, key: string, n: number, seed = 42): string[] {
  const out: string[] = [];
  let s = seed;
  const rnd = (m: number) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s % m;
  };
  for (let i = 0; i < n; i++) {
    const ip = `${IP_PREFIXES[rnd(IP_PREFIXES.length)]}.${rnd(256)}.${1 + rnd(254)}`;
    const ua = encodeURIComponent(UAS[rnd(UAS.length)]!);
    out.push(
      `/api/v1/ivt/lookup?schain=1.0,1!exchange1.example,1234,1,req-${i},pub,pub.example&p=${partnerId}&k=${key}` +
        `&pub=pub-${rnd(50)}&node=bidder-1&ip=${ip}&ua=${ua}&uid=u-${rnd(5000)}&sid=exchange1.example&adt=1&dvt=2&geo=us&p1=${rnd(10)}`,
    );
  }
  return out;
}
