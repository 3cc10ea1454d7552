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

/** A seeded generator of integers in [0, m): the same sequence for the same seed. */
function lcg(seed: number): (m: number) => number {
  let s = seed;
  return (m) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s % m;
  };
}

/** `n` lookups over a few UAs, 5 000 uids, 50 publishers and scattered IPs. */
export function lookupPaths(partnerId: string, key: string, n: number, seed = 42): string[] {
  const out: string[] = [];
  const rnd = lcg(seed);
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

export interface BodyRequest {
  path: string;
  body: string;
}

/**
 * The same `n` lookups as lookupPaths (same seed: same IPs, UAs, uids and publishers), each
 * as a typical OpenRTB 2.5 BidRequest the way Prebid Server sends it (source.ext.schain,
 * device.sua, regs/consent strings, ext.prebid), 2–3 KB of JSON, for POST /api/v1/ivt/ortb.
 */
export function ortbRequests(partnerId: string, key: string, n: number, seed = 42): BodyRequest[] {
  const out: BodyRequest[] = [];
  const rnd = lcg(seed);
  const path = `/api/v1/ivt/ortb?p=${partnerId}&k=${key}&node=bidder-1`;
  for (let i = 0; i < n; i++) {
    // Drawn in lookupPaths' order, so request i is that lookup's twin.
    const ip = `${IP_PREFIXES[rnd(IP_PREFIXES.length)]}.${rnd(256)}.${1 + rnd(254)}`;
    const ua = UAS[rnd(UAS.length)]!;
    const pub = `pub-${rnd(50)}`;
    const uid = `u-${rnd(5000)}`;
    rnd(10); // p1
    const chrome = /Chrome\/(\d+)/.exec(ua)?.[1];
    const bid = {
      id: `0b6a8c52-${String(i).padStart(4, '0')}-4c1e-9d53-7f1e2a6b9c30`,
      imp: [
        {
          id: '1',
          tagid: `div-gpt-ad-1700000000000-${i % 7}`,
          banner: { format: [{ w: 300, h: 250 }, { w: 300, h: 600 }, { w: 336, h: 280 }], pos: 1 },
          bidfloor: 0.35,
          bidfloorcur: 'USD',
          secure: 1,
          ext: { prebid: { bidder: { appnexus: { placementId: 13144370 }, rubicon: { accountId: 1001, siteId: 113932, zoneId: 535510 } } }, gpid: `/1234567/news/article#div-${i % 7}` },
        },
      ],
      site: {
        id: 'site-1',
        domain: 'news.example',
        page: `https://news.example/world/2024/05/article-${i}.html?utm_source=home&utm_medium=feed`,
        ref: 'https://news.example/',
        cat: ['IAB12', 'IAB12-2'],
        keywords: 'world,politics,economy',
        publisher: { id: pub, name: 'News Example Publishing', domain: 'news.example' },
        ext: { amp: 0 },
      },
      device: {
        ua,
        ip,
        devicetype: 2,
        language: 'en',
        js: 1,
        dnt: 0,
        w: 1920,
        h: 1080,
        geo: { country: 'USA', region: 'CA', city: 'San Francisco', zip: '94107', type: 2, utcoffset: -420 },
        ...(chrome ? { sua: { source: 2, platform: { brand: 'Windows', version: ['10', '0', '0'] }, browsers: [{ brand: 'Chromium', version: [chrome, '0', '0', '0'] }, { brand: 'Google Chrome', version: [chrome, '0', '0', '0'] }, { brand: 'Not-A.Brand', version: ['99'] }], mobile: 0, architecture: 'x86', bitness: '64' } } : {}),
      },
      user: {
        id: uid,
        buyeruid: `adnxs-${uid}`,
        ext: { consent: 'CPzHq4APzHq4AAHABBENC-CgAP_AAH_AAAqIHWtf_X_fb39j-_59_9t0eY1f9_7_v-0zjheds-8Nyd_X_L8X42M7vF36pq4KuR4Eu3LBIQdlHOHcTUmw6okVrzPsbk2cr7NKJ7PEmnMbO2dYGH9_n93TuZKY7__8___z__-v_v____f_r-3_3__59X---_e_V399zLv9____39nN___9uCCYBJhqXkAXYljgybRpVCiBGFYSHQCgAooBhaJrCBlcFOyuAj1BCwAQmoCMCIEGIKMGAQACAQBIREBIAeCARAEQCAAEAKkBCAAjYBBYAWBgEAAoBoWIEUAQgSEGRwVHKYEBEi0UE9lYAlF3saYQhllgBQKP6KjARKEAAAA.f_gAD_gAAAAA', eids: [{ source: 'id5-sync.com', uids: [{ id: `ID5*${uid}-0123456789abcdef`, atype: 1 }] }] },
      },
      source: {
        tid: `7c2f1e90-${String(i).padStart(4, '0')}-4a8b-b3d1-2f6e5a9c8d71`,
        ext: { schain: { ver: '1.0', complete: 1, nodes: [{ asi: 'exchange1.example', sid: '1234', hp: 1, rid: `req-${i}`, name: 'pub', domain: 'pub.example' }] } },
      },
      regs: { coppa: 0, ext: { gdpr: 0, us_privacy: '1YNN', gpp: 'DBABMA~CPzHq4APzHq4AAHABBENC-CgAP_AAH_AAAqIHWtf_X_fb39j-_59_9t0eY1f9_7_v-0zjhe', gpp_sid: [7] } },
      tmax: 1000,
      cur: ['USD'],
      at: 1,
      ext: { prebid: { auctiontimestamp: 1716200000000 + i, targeting: { includewinners: true, includebidderkeys: false }, cache: { bids: {} }, channel: { name: 'web', version: '8.48.0' } } },
    };
    out.push({ path, body: JSON.stringify(bid) });
  }
  return out;
}
