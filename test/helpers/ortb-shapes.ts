// Bid requests in the shapes real clients send (learned from the IAB's OpenRTB 2.5/2.6 and
// DOOH examples and Prebid Server's request fixtures; written here, with invented values,
// since material fetched from others stays out of this repository): thin ones with only
// `id` and `imp`, `sua` without `ua`, IPv6 only, app and CTV with typed IFAs, video, audio,
// native, DOOH, and the supply chain in its three places. Every one is spec-valid.
// Used by test/ortb/client-shapes.test.ts (each gets a verdict) and pruned-json.test.ts.
const UA_CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const UA_ANDROID = 'Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/UQ1A.240105.004; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/124.0.6367.82 Mobile Safari/537.36';
const node = (asi: string, sid: string) => ({ asi, sid, hp: 1 });

export const SHAPES: Record<string, object> = {
  'only id and imp': { id: 'shape-1', imp: [{ id: '1', banner: { format: [{ w: 300, h: 250 }] } }] },
  'web banner, site and publisher, schain in source': {
    id: 'shape-2', at: 1, tmax: 120, cur: ['USD'],
    imp: [{ id: '1', tagid: 'slot-top', bidfloor: 0.5, banner: { w: 728, h: 90, pos: 1 } }],
    site: { id: 's1', domain: 'news.example', page: 'https://news.example/a/1', publisher: { id: 'pub-9' } },
    device: { ip: '73.162.10.20', ua: UA_CHROME, devicetype: 2, language: 'en', geo: { country: 'USA' } },
    user: { id: 'u-77', buyeruid: 'b-77' },
    source: { schain: { ver: '1.0', complete: 1, nodes: [node('exchange1.example', '1234')] } },
  },
  'structured UA only (sua), schain in source.ext': {
    id: 'shape-3', imp: [{ id: '1', banner: { w: 320, h: 50 } }],
    site: { domain: 'shop.example' },
    device: {
      ip: '81.2.69.142', devicetype: 4,
      sua: { browsers: [{ brand: 'Chromium', version: ['124'] }, { brand: 'Google Chrome', version: ['124'] }], platform: { brand: 'Android', version: ['14'] }, mobile: 1, source: 2 },
    },
    source: { ext: { schain: { ver: '1.0', complete: 1, nodes: [node('exchange1.example', '1234')] } } },
  },
  'IPv6 only, schain in ext': {
    id: 'shape-4', imp: [{ id: '1', banner: { w: 300, h: 600 } }],
    site: { page: 'https://blog.example/post' },
    device: { ipv6: '2a02:1810:4d02:ee00::1', ua: UA_CHROME },
    ext: { schain: { ver: '1.0', complete: 0, nodes: [node('exchange1.example', '1234')] } },
  },
  'in-app video with a typed IFA': {
    id: 'shape-5', imp: [{ id: '1', video: { mimes: ['video/mp4'], w: 640, h: 480, minduration: 5, maxduration: 30, protocols: [2, 3, 5, 6] } }],
    app: { bundle: 'com.example.player', storeurl: 'https://play.example/app', publisher: { id: 'pub-3' } },
    device: { ip: '73.162.10.21', ua: UA_ANDROID, devicetype: 4, ifa: '0b6e1a5e-62f4-4d0c-9f55-6f5c2a1d9e3b', ifa_type: 'aaid', os: 'android', lmt: 0 },
    user: { id: 'u-78' },
  },
  'CTV with SSAI and a Roku ID': {
    id: 'shape-6', imp: [{ id: '1', ssai: 1, video: { mimes: ['video/mp4'], w: 1920, h: 1080, placement: 1 } }],
    app: { bundle: '151908', publisher: { id: 'pub-4' } },
    device: { ip: '73.162.10.22', ua: 'Roku/DVP-12.5 (12.5.0.4178-51)', devicetype: 3, ifa: '5f7d1c2e-8a9b-4c3d-8e1f-2a3b4c5d6e7f', ext: { ifa_type: 'rida' } },
  },
  'audio': {
    id: 'shape-7', imp: [{ id: '1', audio: { mimes: ['audio/mpeg'], minduration: 15, maxduration: 30 } }],
    app: { bundle: 'com.example.radio' },
    device: { ip: '73.162.10.23', ua: UA_ANDROID, devicetype: 4 },
  },
  'native, no device at all': {
    id: 'shape-8', imp: [{ id: '1', native: { request: '{"ver":"1.2","assets":[{"id":1,"required":1,"title":{"len":90}}]}', ver: '1.2' } }],
    site: { domain: 'recipes.example', publisher: { id: 'pub-5' } },
  },
  'DOOH screen': {
    id: 'shape-9', imp: [{ id: '1', qty: { multiplier: 12.5, sourcetype: 1 }, banner: { w: 1080, h: 1920 } }],
    dooh: { id: 'venue-1', venuetype: ['transit'], publisher: { id: 'pub-6' } },
    device: { ip: '73.162.10.24', devicetype: 8, geo: { lat: 51.5, lon: -0.12, country: 'GBR' } },
  },
  'fields ivtd does not read, of every type': {
    id: 'shape-10', test: 0, imp: [{ id: '1', banner: { w: 300, h: 250 }, ext: { prebid: { bidder: { example: { placementId: 1 } } } } }],
    site: { domain: 'news.example', cat: ['IAB12'], ext: 'a string where an object could be' },
    device: { ip: '73.162.10.25', ua: UA_CHROME, ext: { atts: 3 } },
    regs: { coppa: 0, gdpr: 1, us_privacy: '1---' },
    source: { ext: 'test-ext' },
  },
};
