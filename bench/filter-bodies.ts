// The bid requests the filter benchmarks POST (bench/filter.ts, filter-profile.ts, cpu-share.ts):
// `n` banner requests from distinct devices and users, each with a one-node supply chain.
export function bodies(n: number): string[] {
  const ua = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
  return Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      id: `req-${i}`, at: 1, tmax: 250, cur: ['USD'],
      imp: [{ id: '1', tagid: 'slot-top', bidfloor: 0.5, banner: { w: 728, h: 90, pos: 1 } }],
      site: { id: 's1', domain: 'news.example', page: 'https://news.example/a/1', publisher: { id: 'pub-9' } },
      device: { ip: `73.162.${(i >> 8) & 255}.${i & 255}`, ua, devicetype: 2, language: 'en', geo: { country: 'USA' } },
      user: { id: `u-${i}`, buyeruid: `b-${i}` },
      source: { schain: { ver: '1.0', complete: 1, nodes: [{ asi: 'exchange1.example', sid: '1234', hp: 1 }] } },
    }),
  );
}
